"""The kernel: plugins, registries, resources and tool dispatch.

A :class:`Kernel` owns everything it loads; several kernels can live in one
process without sharing state. Start-up is lazy and idempotent: the first
access to a registry loads the plugins. Its subsystems are made on first use
and closed by :meth:`Kernel.close`: ``kernel.evidence`` (the artifact store's
catalog and run sinks, the kernel's own) and those plugins register with
``register_subsystems``, reached as ``kernel.<name>`` (``kernel.runs``, the
runs plugin's store; ``kernel.sandbox``, the sandbox plugin's manager). None
is imported until then, and the kernel imports no plugin.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from . import exit_signals, loader as plugin_loading
from .context import RunContext
from .errors import (
    PLUGIN_LOAD_FAILED,
    PLUGIN_REGISTER_FAILED,
    SUBSYSTEM_NOT_FOUND,
    TOOL_ARGUMENTS_INVALID,
    TOOL_ASYNC_ONLY,
    TOOL_EXECUTION_FAILED,
    TOOL_NOT_FOUND,
    AssayError,
    PluginError,
)
from .loader import PluginInfo
from .log import enabled as log_enabled, get_logger
from .registry import REGISTER_HOOKS, VALIDATORS, Lazy, Registry, validate
from .resources import BUILTIN_RESOURCE_TYPES, PromptBudget, Resource, build_resource_prompt
from .settings import Settings
from .subsystems import is_closed
from .tool_result import ToolResult
from .tools import ArgumentsInvalid, BaseTool

if TYPE_CHECKING:
    from .evidence.kernel_evidence import KernelEvidence

log = get_logger("assay.kernel")

INFO = 20
HOST = "host"  # provenance of resources a host application attaches itself


class Kernel:
    """The assay microkernel.

    ``load_entrypoints`` discovers plugins from installed packages;
    ``plugins`` adds plugin objects or module paths directly (handy for host
    applications and tests); ``settings`` defaults to the environment.
    """

    def __init__(
        self,
        *,
        load_entrypoints: bool = True,
        plugins: Iterable[Any] = (),
        settings: Settings | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self._load_entrypoints = load_entrypoints
        self._extra_plugins = list(plugins)
        self._lock = threading.RLock()
        self._started = False
        self._loading_thread: int | None = (
            None  # the thread running the register hooks, while it does
        )
        self._evidence: KernelEvidence | None = None  # made on first use (kernel.evidence)
        self._subsystems: dict[
            str, Any
        ] = {}  # plugins' subsystems, made on first use (kernel.<name>)
        # Now, while this is (normally) the main thread: the sandbox is often first used from
        # a worker thread, where a SIGTERM handler can no longer be installed.
        exit_signals.install()
        self._reset()

    def _reset(self) -> None:
        """Fresh, empty plugin state (also after a start-up that failed)."""
        self._pm = plugin_loading.new_plugin_manager()
        self._plugin_objects: dict[str, Any] = {}
        self._infos: dict[str, PluginInfo] = {}
        self._registries: dict[str, Registry[Any]] = {
            kind: Registry(kind, owner=self, on_failure=self._lazy_failed) for kind in VALIDATORS
        }
        self._commands: list[tuple[str, Any]] | None = None
        for builtin in BUILTIN_RESOURCE_TYPES:
            self._registries["resource_types"].add(str(builtin), builtin, "kernel")

    # --- start-up ---------------------------------------------------------

    def start(self) -> Kernel:
        """Load plugins and run their register hooks. Safe to call again.

        A start-up error (strict mode, or two plugins claiming one name)
        leaves the kernel unstarted and empty; calling again retries.
        """
        if self._started:
            return self
        with self._lock:
            if self._started:
                return self
            self._loading_thread = threading.get_ident()
            try:
                self._load_plugins()
            except BaseException:
                self._reset()
                raise
            finally:
                self._loading_thread = None
            self._started = True
        return self

    @property
    def started(self) -> bool:
        return self._started

    def _load_plugins(self) -> None:
        load = plugin_loading.parse_names(self.settings.load_plugins)
        disable = plugin_loading.parse_names(self.settings.disable_plugins) or set()
        candidates = plugin_loading.discover_entry_points() if self._load_entrypoints else []
        candidates += [plugin_loading.candidate_for_object(p) for p in self._extra_plugins]
        chosen, disabled = plugin_loading.select(candidates, load, disable)
        for cand in disabled:
            self._infos[cand.name] = PluginInfo(
                cand.name,
                cand.module,
                cand.distribution,
                cand.version,
                cand.builtin,
                status="disabled",
            )
        for cand in chosen:
            try:
                obj, info = plugin_loading.import_plugin(self._pm, cand)
            except PluginError as exc:
                self._record_failure(
                    PluginInfo(
                        cand.name, cand.module, cand.distribution, cand.version, cand.builtin
                    ),
                    exc,
                )
                continue
            self._plugin_objects[cand.name] = obj
            self._infos[cand.name] = info
        for hook_name, kind in REGISTER_HOOKS.items():
            for name, impl in plugin_loading.call_order(self._pm, hook_name, self._plugin_objects):
                if name in self._plugin_objects:  # not rolled back by an earlier failure
                    self._run_register_hook(name, impl, hook_name, kind)
        log.debug(
            "kernel_started",
            plugins=len(self._plugin_objects),
            tools=len(self._registries["tools"]),
        )

    def _run_register_hook(self, plugin: str, impl: Any, hook_name: str, kind: str) -> None:
        registry = self._registries[kind]

        strict = self.settings.strict_plugins

        def register(item: Any) -> None:
            name, value = validate(kind, item)
            if kind == "resources" and str(value.type) not in self._registries["resource_types"]:
                raise TypeError(f"resource {name!r} has unknown type {value.type!r}")
            if strict:  # strict mode loads lazy registrations and builds every schema now; by default on first use
                if type(value) is Lazy:
                    value = registry.load_lazy(value)
                if kind == "tools":
                    value.prepare()
            registry.add(name, value, plugin)

        available = {"register": register, "settings": self.settings, "kernel": self}
        try:
            plugin_loading.call_impl(impl, available)
        except PluginError as exc:
            if exc.code == "PLUGIN_NAME_CONFLICT":
                raise  # two plugins claiming one name is always a start-up error
            self._fail_plugin(plugin, exc)
        except Exception as exc:  # noqa: BLE001 - a plugin's bug must not take the kernel down
            self._fail_plugin(
                plugin,
                PluginError(
                    PLUGIN_REGISTER_FAILED,
                    f"plugin {plugin!r} failed in {hook_name}: {type(exc).__name__}: {exc}",
                    "Its registrations were rolled back; fix the plugin or disable it.",
                ),
                cause=exc,
            )

    def _fail_plugin(
        self,
        plugin: str,
        error: AssayError,
        cause: BaseException | None = None,
        tombstone: AssayError | None = None,
    ) -> None:
        """Roll back everything ``plugin`` registered and record why.

        With ``tombstone`` the plugin's names keep answering that error
        instead of vanishing (a lazy registration failed after start-up).
        """
        with self._lock:
            for registry in self._registries.values():
                registry.remove_plugin(plugin, tombstone)
            obj = self._plugin_objects.pop(plugin, None)
            if obj is not None:
                self._pm.unregister(obj)
            self._record_failure(self._infos[plugin], error, cause)

    def _lazy_failed(self, plugin: str, error: AssayError) -> None:
        """A lazy registration of ``plugin`` could not be loaded on first use: the plugin fails.

        The name that failed keeps answering its own error (``TOOL_LOAD_FAILED``
        for a tool, the registry recorded it); the plugin's other names answer
        ``PLUGIN_LOAD_FAILED``.
        """
        info = self._infos.get(plugin)
        if info is None or info.status == "failed":
            return  # already recorded (or a host registration, which has no plugin to fail)
        failure = (
            error
            if error.code == PLUGIN_LOAD_FAILED
            else PluginError(
                PLUGIN_LOAD_FAILED,
                f"plugin {plugin!r}: {error.message}",
                error.hint,
                details=error.details,
            )
        )
        self._fail_plugin(plugin, failure, error.__cause__ or error, tombstone=failure)

    def _record_failure(
        self, info: PluginInfo, error: AssayError, cause: BaseException | None = None
    ) -> None:
        info.status = "failed"
        info.error = {"code": error.code, "message": error.message, "hint": error.hint}
        self._infos[info.name] = info
        if self.settings.strict_plugins:  # raised, not logged: the caller reports it once
            raise error from (cause or error.__cause__)
        log.warning("plugin_failed", plugin=info.name, code=error.code, message=error.message)

    # --- registries -------------------------------------------------------

    def registry(self, kind: str) -> Registry[Any]:
        """The registry of ``kind`` ("tools", "resources", "sandbox_runtimes", ...).

        From inside a register hook it is the registry as filled so far (the
        hooks run in :data:`~assay.kernel.registry.REGISTER_HOOKS` order, so
        ``register_resources`` sees every database engine).
        """
        if self._loading_thread != threading.get_ident():
            self.start()
        return self._registries[kind]

    @property
    def tools(self) -> dict[str, BaseTool]:
        return self.registry("tools").as_dict()

    @property
    def resources(self) -> dict[str, Resource]:
        return self.registry("resources").as_dict()

    def get_tool(self, name: str) -> BaseTool | None:
        return self.registry("tools").get(name)

    def tool_definitions(
        self, fmt: str = "openai", names: Iterable[str] | None = None
    ) -> list[dict[str, Any]]:
        """Tool definitions in ``"openai"`` (function calling) or ``"mcp"`` shape, built from the tools."""
        if fmt not in ("openai", "mcp"):
            raise ValueError(f"unknown tool definition format {fmt!r}: use 'openai' or 'mcp'")
        registry = self.registry("tools")
        chosen = list(names) if names is not None else list(registry)
        found: list[tuple[str, dict[str, Any]]] = []
        for name in chosen:
            try:
                tool = registry.get(name)
            except PluginError:
                if names is not None:
                    raise KeyError(name) from None
                continue  # recorded as its plugin's failure (and logged)
            if tool is None:
                raise KeyError(name)
            found.append((name, tool.to_openai() if fmt == "openai" else tool.to_mcp()))
        # a failure rolls back the failed plugin's other tools too: keep only what is still registered
        return [d for n, d in found if n in registry]

    def model(self, model_id: str, **options: Any) -> Any:
        """A new instance of the registered model ``model_id`` (see ``register_models``)."""
        model_cls = self.registry("models").get(model_id)
        if model_cls is None:
            known = ", ".join(sorted(self.registry("models"))) or "none"
            raise AssayError(
                "MODEL_NOT_FOUND", f"no model named {model_id!r}", f"Registered models: {known}."
            )
        return (
            model_cls.from_settings(self, **options)
            if hasattr(model_cls, "from_settings")
            else model_cls(**options)
        )

    def renderer(self, name: str) -> Any:
        """The registered report renderer ``name``."""
        found = self.registry("report_renderers").get(name)
        if found is None:
            known = ", ".join(sorted(self.registry("report_renderers"))) or "none"
            raise AssayError(
                "RENDERER_NOT_FOUND", f"no report renderer named {name!r}", f"Registered: {known}."
            )
        return found

    def provenance(self, kind: str, name: str) -> str | None:
        """The plugin that registered ``name`` in ``kind`` (imports nothing)."""
        return self.registry(kind).plugin_of(name)

    def plugins(self) -> list[PluginInfo]:
        """Every plugin found, with status, hooks and what it registered."""
        self.start()
        out = []
        for name, info in self._infos.items():
            info.registered = {
                kind: reg.names_by(name)
                for kind, reg in self._registries.items()
                if reg.names_by(name)
            }
            out.append(info)
        return sorted(out, key=lambda i: (not i.builtin, i.name))

    def health(self) -> dict[str, Any]:
        """A summary for ``assay plugins --json`` and host health checks."""
        infos = self.plugins()
        return {
            "ok": all(i.status != "failed" for i in infos),
            "plugins": {
                s: sum(i.status == s for i in infos) for s in ("loaded", "disabled", "failed")
            },
            "counts": {kind: len(reg) for kind, reg in self._registries.items()},
        }

    def commands(self) -> list[tuple[str, Any]]:
        """(plugin, click command) pairs from ``register_commands``; run once, lazily."""
        self.start()
        with self._lock:
            if self._commands is None:
                self._commands = self._collect_commands()
        return self._commands

    def _collect_commands(self) -> list[tuple[str, Any]]:
        import click

        collected: list[tuple[str, Any]] = []
        for plugin, impl in plugin_loading.call_order(
            self._pm, "register_commands", self._plugin_objects
        ):
            if plugin not in self._plugin_objects:  # rolled back by an earlier failure
                continue
            staging = click.Group()
            try:
                plugin_loading.call_impl(impl, {"cli": staging, "kernel": self})
            except Exception as exc:  # noqa: BLE001
                self._fail_plugin(
                    plugin,
                    PluginError(
                        PLUGIN_REGISTER_FAILED,
                        f"plugin {plugin!r} failed in register_commands: {type(exc).__name__}: {exc}",
                        "Its registrations were rolled back; fix the plugin or disable it.",
                    ),
                    cause=exc,
                )
                continue
            collected.extend((plugin, cmd) for cmd in staging.commands.values())
        return collected

    # --- resources and prompts -------------------------------------------

    def attach(self, resource: Resource) -> Resource:
        """Attach a resource from the host application (provenance ``host``)."""
        name, value = VALIDATORS["resources"](resource)
        self.registry("resources").add(name, value, HOST)
        return resource

    def detach(self, name: str) -> None:
        reg = self.registry("resources")
        entry = reg.entry(name)
        if entry is None or entry.plugin != HOST:
            raise KeyError(f"no host-attached resource {name!r}")
        reg.remove(name)

    def system_prompt(
        self, resources: Iterable[Resource] | None = None, budget: PromptBudget | None = None
    ) -> str:
        """The model-facing description of the resources (default: all of them)."""
        chosen = list(resources) if resources is not None else list(self.resources.values())
        return build_resource_prompt(chosen, budget, heading="You can use these resources:")

    # --- subsystems, made on first use ----------------------------------

    @property
    def evidence(self) -> KernelEvidence:
        """The kernel's evidence: the configured artifact store's catalog and run sinks."""
        evidence = self._evidence
        if evidence is None:
            with self._lock:
                if self._evidence is None:
                    from .evidence.kernel_evidence import KernelEvidence

                    self._evidence = KernelEvidence(self)
                evidence = self._evidence
        return evidence

    def subsystem(self, name: str) -> Any:
        """The subsystem ``name`` a plugin registered (``register_subsystems``), made on first use.

        Made again when it reports itself ``closed``; raises ``SUBSYSTEM_NOT_FOUND`` when no loaded
        plugin provides it. ``kernel.<name>`` is the same.
        """
        obj = self._subsystems.get(name)
        if obj is None or is_closed(obj):
            registry = self.registry("subsystems")
            with self._lock:
                obj = self._subsystems.get(name)
                if obj is None or is_closed(obj):
                    provider = registry.get(name)
                    if provider is None:
                        known = ", ".join(sorted(registry)) or "none"
                        raise AssayError(
                            SUBSYSTEM_NOT_FOUND,
                            f"no plugin provides the subsystem {name!r}",
                            f"Load the plugin that provides it (`assay plugins`); provided here: {known}.",
                        )
                    obj = self._subsystems[name] = provider.make(self)
        return obj

    def __getattr__(self, name: str) -> Any:
        """``kernel.runs``, ``kernel.sandbox``, ...: a subsystem a plugin registered (see :meth:`subsystem`)."""
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.subsystem(name)
        except AssayError as exc:
            if exc.code != SUBSYSTEM_NOT_FOUND:
                raise
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r} ({exc.message})"
            ) from None

    # --- runs and tool calls ---------------------------------------------

    def new_run(self, *, capture: bool = True, run_id: str | None = None) -> RunContext:
        """A new run; with ``capture`` its artifact sink comes from the configured store."""
        self.start()
        run = RunContext(kernel=self) if run_id is None else RunContext(kernel=self, run_id=run_id)
        if capture:
            run.artifacts = self.evidence.open_sink(run.run_id)
        return run

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        """Validate and call a tool synchronously; always returns a :class:`ToolResult`.

        Raises :class:`AssayError` ``TOOL_ASYNC_ONLY`` (a mistake of the host,
        not of the model) when the tool is asynchronous: use :meth:`acall_tool`.
        """
        started = time.perf_counter()
        tool, validated, failure = self._prepare(name, arguments)
        if failure is not None:
            return self._finish(name, failure, started)
        if tool.is_async:
            raise AssayError(
                TOOL_ASYNC_ONLY,
                f"tool {name!r} is asynchronous and cannot be called through the sync channel",
                "Call it with `await kernel.acall_tool(...)` from async code.",
            )
        try:
            value = tool.invoke(validated, run)
        except Exception as exc:  # noqa: BLE001 - turned into an envelope below
            return self._finish(name, _error_result(exc), started)
        return self._finish(name, value, started)

    async def acall_tool(
        self,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        """Validate and call a tool from async code; sync tools run in a worker thread."""
        started = time.perf_counter()
        tool, validated, failure = self._prepare(name, arguments)
        if failure is not None:
            return self._finish(name, failure, started)
        try:
            value = await tool.ainvoke(validated, run)
        except Exception as exc:  # noqa: BLE001
            return self._finish(name, _error_result(exc), started)
        return self._finish(name, value, started)

    def _prepare(self, name: str, arguments: Any) -> tuple[Any, Any, ToolResult | None]:
        if not self._started:
            self.start()
        tools = self._registries["tools"]
        try:
            entry = tools.entry(name)  # a lazy tool is imported now
        except (
            AssayError
        ) as exc:  # it could not be (now or before): TOOL_LOAD_FAILED, its plugin failed
            return None, None, ToolResult.from_error(exc)
        if entry is None:
            failed = tools.failure(name)
            if failed is not None:  # its plugin failed to load something on first use
                return None, None, ToolResult.from_error(failed)
            return (
                None,
                None,
                ToolResult.fail(
                    TOOL_NOT_FOUND,
                    f"no tool named {name!r}",
                    f"Available tools: {', '.join(sorted(tools)) or 'none'}.",
                ),
            )
        tool = entry.obj
        if arguments is None:
            arguments = {}
        elif isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                return (
                    tool,
                    None,
                    ToolResult.fail(
                        TOOL_ARGUMENTS_INVALID,
                        f"arguments are not valid JSON: {exc}",
                        "Send a JSON object.",
                        errors=[{"path": "", "message": f"not valid JSON: {exc}"}],
                    ),
                )
        if not isinstance(arguments, dict):
            return (
                tool,
                None,
                ToolResult.fail(
                    TOOL_ARGUMENTS_INVALID,
                    "arguments must be a JSON object",
                    "Send a JSON object of named arguments.",
                    errors=[
                        {
                            "path": "",
                            "message": f"expected an object, got {type(arguments).__name__}",
                        }
                    ],
                ),
            )
        try:
            return tool, tool.validate_arguments(arguments), None
        except ArgumentsInvalid as exc:
            return tool, None, ToolResult.fail(exc.code, exc.message, exc.hint, errors=exc.errors)
        except AssayError as exc:  # e.g. TOOL_SCHEMA_INVALID from a lazily built schema
            return tool, None, ToolResult.from_error(exc)

    def _finish(self, name: str, value: Any, started: float) -> ToolResult:
        elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
        if isinstance(value, ToolResult):
            result = value
            result.tool, result.elapsed_ms = name, elapsed_ms
        else:  # pydantic-core validation is as cheap as any shortcut here (model_construct is slower)
            result = ToolResult(success=True, data=value, tool=name, elapsed_ms=elapsed_ms)
        if log_enabled(INFO, "assay.kernel"):  # skip building the event when it would be filtered
            log.info(
                "tool_call",
                tool=name,
                plugin=self._registries["tools"].plugin_of(name),
                duration_ms=result.elapsed_ms,
                outcome="ok" if result.success else result.error_code,
            )
        return result

    def close(self) -> None:
        """Release what plugins opened (connection pools), their subsystems and the evidence catalog.

        The kernel stays usable: ``kernel.evidence`` and the subsystems are made again on next use.
        """
        resources = self._registries["resources"]
        for name in list(resources):
            resource = resources.peek(name)
            if type(resource) is Lazy:
                continue  # never loaded, nothing to release
            closer = getattr(resource, "close", None)
            if callable(closer):
                try:
                    closer()
                except Exception as exc:  # noqa: BLE001
                    log.warning("resource_close_failed", resource=resource.name, error=repr(exc))
        with self._lock:
            subsystems, self._subsystems = self._subsystems, {}
            evidence, self._evidence = self._evidence, None
        for name, obj in reversed(subsystems.items()):  # the last made first
            closer = getattr(obj, "close", None)
            if callable(closer):
                try:
                    closer()
                except Exception as exc:  # noqa: BLE001 - closing must reach every subsystem
                    log.warning("subsystem_close_failed", subsystem=name, error=repr(exc))
        if evidence is not None:
            evidence.close()

    def __enter__(self) -> Kernel:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _error_result(exc: Exception) -> ToolResult:
    if isinstance(exc, AssayError):
        return ToolResult.from_error(exc)
    return ToolResult.fail(
        TOOL_EXECUTION_FAILED,
        f"{type(exc).__name__}: {exc}",
        "The tool raised an error; check the arguments or the data it reads, then try again.",
        metadata={"exception_type": type(exc).__name__},
    )
