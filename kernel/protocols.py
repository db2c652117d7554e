"""What plugins and the run type the kernel as: :class:`KernelAPI`, a Protocol of :class:`assay.Kernel`.

Modules that only need the kernel's shape import this instead of
:mod:`assay.kernel.kernel`, so no import circle runs through the kernel
(``context.py`` holds a kernel, the kernel makes runs) and a plugin does not
depend on the kernel's implementation. A subsystem a plugin provides
(``kernel.runs``, ``kernel.sandbox``) is reached by name: ``kernel.<name>`` or
:meth:`KernelAPI.subsystem`, typed ``Any``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .context import RunContext
    from .evidence.kernel_evidence import KernelEvidence
    from .loader import PluginInfo
    from .registry import Registry
    from .resources import PromptBudget, Resource
    from .settings import Settings
    from .tool_result import ToolResult
    from .tools import BaseTool


class KernelAPI(Protocol):
    """The kernel as plugins, tools and runs use it."""

    settings: Settings

    @property
    def started(self) -> bool: ...

    def start(self) -> Any: ...

    def registry(self, kind: str) -> Registry[Any]: ...

    @property
    def tools(self) -> dict[str, BaseTool]: ...

    @property
    def resources(self) -> dict[str, Resource]: ...

    def get_tool(self, name: str) -> BaseTool | None: ...

    def tool_definitions(
        self, fmt: str = "openai", names: Iterable[str] | None = None
    ) -> list[dict[str, Any]]: ...

    def model(self, model_id: str, **options: Any) -> Any: ...

    def renderer(self, name: str) -> Any: ...

    def provenance(self, kind: str, name: str) -> str | None: ...

    def plugins(self) -> list[PluginInfo]: ...

    def attach(self, resource: Resource) -> Resource: ...

    def detach(self, name: str) -> None: ...

    def system_prompt(
        self, resources: Iterable[Resource] | None = None, budget: PromptBudget | None = None
    ) -> str: ...

    @property
    def evidence(self) -> KernelEvidence: ...

    def subsystem(self, name: str) -> Any: ...

    def new_run(self, *, capture: bool = True, run_id: str | None = None) -> RunContext: ...

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        run: RunContext | None = None,
    ) -> ToolResult: ...

    async def acall_tool(
        self,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        run: RunContext | None = None,
    ) -> ToolResult: ...

    def close(self) -> None: ...

    def __getattr__(self, name: str) -> Any: ...  # a subsystem: kernel.runs, kernel.sandbox
