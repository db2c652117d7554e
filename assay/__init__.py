"""assay: a plugin-based microkernel for data-analysis agents.

The public surface, curated: what host applications and plugin authors
import. Everything else lives in the subpackages:

* :mod:`assay.kernel` - hook specs, registries, tools, evidence, the sandbox runtimes' contract;
* :mod:`assay.plugins` - the built-in plugins (SQL, code interpreter, the agent, runs, the sandbox, ...);
* :mod:`assay.sandbox_runtimes` - the docker, podman, nerdctl and local runtimes.

>>> from assay import Kernel, tool, hookimpl
"""

from __future__ import annotations

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING, Any as _Any

if _TYPE_CHECKING:
    from .kernel.context import RunContext
    from .kernel.errors import AssayError, ConfigError, PluginError
    from .kernel.hookspecs import hookimpl
    from .kernel.kernel import Kernel
    from .kernel.loader import PluginInfo
    from .kernel.registry import Lazy
    from .kernel.resources import PromptBudget, Resource, ResourcePack, ResourceType
    from .kernel.settings import Settings
    from .kernel.tool_result import ArtifactRef, ToolResult
    from .kernel.tools import BaseTool, FunctionTool, JsonSchemaTool, tool

# Each public name is imported from its module on first use (PEP 562), so that
# `import assay` costs nothing until a name is used, and the `assay` command
# can set up its process (kernel/cli.py, main) before the kernel's imports.
_HOMES = {
    ".kernel.context": ("RunContext",),
    ".kernel.errors": ("AssayError", "ConfigError", "PluginError"),
    ".kernel.hookspecs": ("hookimpl",),
    ".kernel.kernel": ("Kernel",),
    ".kernel.loader": ("PluginInfo",),
    ".kernel.registry": ("Lazy",),
    ".kernel.resources": ("PromptBudget", "Resource", "ResourcePack", "ResourceType"),
    ".kernel.settings": ("Settings",),
    ".kernel.tool_result": ("ArtifactRef", "ToolResult"),
    ".kernel.tools": ("BaseTool", "FunctionTool", "JsonSchemaTool", "tool"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> _Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'assay' has no attribute {name!r}")
    value = getattr(_import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME_OF))


__version__ = "0.1.0"  # the one place the version is written (pyproject reads it)

__all__ = [
    "ArtifactRef",
    "AssayError",
    "BaseTool",
    "ConfigError",
    "FunctionTool",
    "JsonSchemaTool",
    "Kernel",
    "Lazy",
    "PluginError",
    "PluginInfo",
    "PromptBudget",
    "Resource",
    "ResourcePack",
    "ResourceType",
    "RunContext",
    "Settings",
    "ToolResult",
    "__version__",
    "hookimpl",
    "tool",
]
