"""Named registries with provenance, and lazy registration.

Each kind of thing plugins register (tools, resources, runtimes, ...) lives in
a :class:`Registry` that records which plugin registered each name. A name
registered twice is an error naming both plugins.

A plugin may register a :class:`Lazy` descriptor instead of the object: a
name, a ``"package.module:attr"`` path and the few attributes the kernel
reads without importing (``isolated`` for sandbox runtimes, ``type`` for
resources). This is the kernel's one way of being lazy, for every kind,
tools included (a plain ``"package.module:attr"`` string registered as a
tool is a :class:`Lazy` too). The name is listed at once; the registry
imports the path on first use (``get``, ``entry``, ``items``, ``as_dict``),
checks the object as if it had been registered directly, caches it, and
reports a failure as the plugin's failure (``PLUGIN_LOAD_FAILED``): the
kernel rolls the plugin back and records why. :func:`resolve_path` is the
one resolver of ``"package.module:attr"`` strings.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from .errors import (
    PLUGIN_LOAD_FAILED,
    PLUGIN_NAME_CONFLICT,
    PLUGIN_REGISTER_FAILED,
    TOOL_LOAD_FAILED,
    AssayError,
    PluginError,
)
from .resources import Resource, ResourceType
from .tools import BaseTool, FunctionTool, check_name

T = TypeVar("T")
_SIMPLE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


class Lazy:
    """A registration named now and imported on first use.

    ``Lazy("my_plugin.engines:ClickHouseEngine", name="clickhouse")``;
    keyword attributes are what the kernel may read before importing
    (``isolated=True`` for a sandbox runtime, ``type="database"`` for a
    resource). On first use the path is imported, the object is checked like
    a direct registration, and its name and declared attributes must match.
    With ``factory=True`` the attribute is called with the kernel and returns
    the object (for objects bound to one kernel).
    """

    __slots__ = ("attrs", "factory", "name", "target")

    def __init__(
        self, target: str, *, name: str | None = None, factory: bool = False, **attrs: Any
    ) -> None:
        module, sep, attr = target.partition(":")
        if not sep or not module or not attr:
            raise ValueError(
                f"a lazy registration is named 'package.module:attribute', got {target!r}"
            )
        self.target = target
        self.name = name or attr.rsplit(".", 1)[-1]
        self.factory = factory
        self.attrs = attrs

    def __getattr__(self, key: str) -> Any:  # declared attributes read like the object's own
        if key.startswith("__") or key in Lazy.__slots__:  # dunders, or a slot not set yet (copy)
            raise AttributeError(key)
        try:
            return self.attrs[key]
        except KeyError:
            raise AttributeError(f"lazy {self.target!r} declares no attribute {key!r}") from None

    def __repr__(self) -> str:
        return f"Lazy({self.target!r}, name={self.name!r})"

    def load(self, owner: Any = None) -> Any:
        """Import the target (and call it with ``owner`` when it is a factory); raises what import raises."""
        return resolve_path(self.target, call_with=(owner,) if self.factory else None)


def resolve_path(target: str, call_with: tuple[Any, ...] | None = None) -> Any:
    """The object at ``"package.module:attr.sub"`` (the module itself for ``"package.module"``).

    The one resolver of such paths in the kernel; called with ``call_with`` when given.
    """
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj(*call_with) if call_with is not None else obj


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    obj: T
    plugin: str


class Registry(Generic[T]):
    """Name -> object, with the plugin each came from.

    ``owner`` (the kernel) is what factory :class:`Lazy` targets are called
    with; ``on_failure(plugin, error)`` is told when a lazy entry cannot be
    loaded (the kernel then fails the plugin).
    """

    def __init__(
        self,
        kind: str,
        owner: Any = None,
        on_failure: Callable[[str, PluginError], None] | None = None,
    ) -> None:
        self.kind = kind
        self.owner = owner
        self.on_failure = on_failure
        self._entries: dict[str, Entry[T]] = {}
        self._failed: dict[
            str, AssayError
        ] = {}  # lazy names whose loading failed (and their plugin's)
        self._lock = threading.RLock()

    def add(self, name: str, obj: T, plugin: str) -> None:
        existing = self._entries.get(name)
        if existing is not None and existing.plugin == plugin:
            raise PluginError(
                PLUGIN_REGISTER_FAILED,
                f"plugin {plugin!r} registered {self.kind} {name!r} twice",
                "Register each name once.",
            )
        if existing is not None:
            raise PluginError(
                PLUGIN_NAME_CONFLICT,
                f"{self.kind} {name!r} is registered by both plugin {existing.plugin!r} and plugin {plugin!r}",
                "Disable one of them with ASSAY_DISABLE_PLUGINS, or rename one.",
                details={"kind": self.kind, "name": name, "plugins": [existing.plugin, plugin]},
            )
        self._entries[name] = Entry(name, obj, plugin)
        self._failed.pop(name, None)

    def remove_plugin(self, plugin: str, error: AssayError | None = None) -> list[str]:
        """Forget everything ``plugin`` registered; return the names removed.

        With ``error`` (a lazy load failed) the names keep answering it from :meth:`get`.
        """
        with self._lock:
            names = [n for n, e in self._entries.items() if e.plugin == plugin]
            for name in names:
                del self._entries[name]
                if error is not None:
                    self._failed.setdefault(name, error)
        return names

    def remove(self, name: str) -> Entry[T] | None:
        """Forget ``name``; return its entry, or None when it was not there."""
        return self._entries.pop(name, None)

    def names_by(self, plugin: str) -> list[str]:
        return [n for n, e in self._entries.items() if e.plugin == plugin]

    def get(self, name: str) -> T | None:
        """The object (a lazy one is loaded now); None when unknown.

        Raises :class:`PluginError` ``PLUGIN_LOAD_FAILED`` (``TOOL_LOAD_FAILED``
        for a tool) when ``name`` was lazy and could not be loaded (now or
        before).
        """
        entry = self._entries.get(name)
        if entry is None:
            failed = self._failed.get(name)
            if failed is not None:
                raise failed
            return None
        return self._load(entry) if type(entry.obj) is Lazy else entry.obj

    def entry(self, name: str) -> Entry[T] | None:
        """The entry with its object loaded; None when unknown (see :meth:`failure` for why)."""
        entry = self._entries.get(name)
        if entry is None or type(entry.obj) is not Lazy:
            return entry
        self._load(entry)  # raises PLUGIN_LOAD_FAILED (TOOL_LOAD_FAILED for a tool)
        return self._entries.get(name)

    def peek(self, name: str) -> Any:
        """The object, or its :class:`Lazy` descriptor when not loaded yet (never imports)."""
        entry = self._entries.get(name)
        return entry.obj if entry else None

    def plugin_of(self, name: str) -> str | None:
        """The plugin that registered ``name`` (never imports)."""
        entry = self._entries.get(name)
        return entry.plugin if entry else None

    def failure(self, name: str) -> AssayError | None:
        """Why the lazy ``name`` is gone, if its loading failed."""
        return self._failed.get(name)

    def load_lazy(self, lazy: Lazy) -> T:
        """Import and check ``lazy``; raises :class:`PluginError` ``PLUGIN_LOAD_FAILED``. No side effects."""
        try:
            obj = lazy.load(self.owner)
            if self.kind == "tools":
                obj = _as_tool(obj, lazy.name)
            name, value = VALIDATORS[self.kind](obj)
            if name != lazy.name:
                raise TypeError(f"it is {self.kind} {name!r}, registered as {lazy.name!r}")
            for key, declared in lazy.attrs.items():
                actual = getattr(value, key, None)
                if actual != declared:
                    raise TypeError(
                        f"it has {key}={actual!r} but was registered with {key}={declared!r}"
                    )
        except Exception as exc:
            raise PluginError(
                PLUGIN_LOAD_FAILED,
                f"{self.kind} {lazy.name!r} could not be loaded from {lazy.target}: {type(exc).__name__}: {exc}",
                "Reinstall or fix the plugin that provides it, or disable it with ASSAY_DISABLE_PLUGINS.",
                details={"kind": self.kind, "name": lazy.name, "target": lazy.target},
            ) from exc
        return value

    def _load(self, entry: Entry[Any]) -> T:
        with self._lock:
            current = self._entries.get(entry.name)
            if current is None:  # another thread failed it meanwhile
                return cast(T, self.get(entry.name))  # raises the failure recorded
            if type(current.obj) is not Lazy:
                return current.obj
            try:
                value = self.load_lazy(cast(Lazy, current.obj))
            except PluginError as exc:
                exc.message = f"plugin {current.plugin!r}: {exc.message}"
                exc.args = (f"{exc.code}: {exc.message}",)
                del self._entries[current.name]
                # the name itself answers its kind's code (TOOL_LOAD_FAILED for a tool); the plugin fails
                # with PLUGIN_LOAD_FAILED, and its other names answer that
                own = exc
                if self.kind in NAME_LOAD_FAILED:
                    own = PluginError(
                        NAME_LOAD_FAILED[self.kind], exc.message, exc.hint, details=exc.details
                    )
                    own.__cause__ = exc.__cause__
                self._failed[current.name] = own
                failed = exc
            else:
                self._entries[current.name] = Entry(current.name, value, current.plugin)
                return value
        if self.on_failure is not None:  # outside the lock: the kernel rolls back every registry
            self.on_failure(current.plugin, failed)
        raise self._failed.get(current.name, failed)

    def _loaded_items(self) -> list[tuple[str, T]]:
        out = []
        for name, entry in list(self._entries.items()):
            if type(entry.obj) is Lazy:
                try:
                    out.append((name, self._load(entry)))
                except PluginError:
                    continue  # recorded as the plugin's failure (and logged) by on_failure
            else:
                out.append((name, entry.obj))
        # a failure rolls back the plugin's other entries too: keep only what is still registered
        return [(n, o) for n, o in out if n in self._entries]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """Every (name, object); lazy ones are loaded now (failures are left out and reported)."""
        return self._loaded_items()

    def as_dict(self) -> dict[str, T]:
        return dict(self._loaded_items())


# --- what each hook's register() accepts ------------------------------------


def _named(attr: str, *required: str) -> Callable[[Any], tuple[str, Any]]:
    def check(obj: Any) -> tuple[str, Any]:
        name = getattr(obj, attr, None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{obj!r} has no {attr!r} string")
        missing = [r for r in required if not hasattr(obj, r)]
        if missing:
            raise TypeError(f"{obj!r} lacks {', '.join(missing)}")
        return name, obj

    return check


def _resource_type(obj: Any) -> tuple[str, Any]:
    if not isinstance(obj, str) or not _SIMPLE_NAME.match(obj):
        raise TypeError(f"resource type must be a lower-case name, got {obj!r}")
    return obj, ResourceType(obj)


def _resource(obj: Any) -> tuple[str, Any]:
    if not isinstance(obj, Resource):
        raise TypeError(f"register_resources takes Resource instances, got {type(obj).__name__}")
    if not obj.name:
        raise TypeError(f"{obj!r} has no name")
    return obj.name, obj


def _as_tool(obj: Any, name: str | None = None) -> Any:
    """``obj`` as a tool: a :class:`~assay.kernel.tools.BaseTool` as is, a function wrapped (named ``name``)."""
    if isinstance(obj, BaseTool):
        return obj
    if callable(obj):
        return FunctionTool(obj, name=name)
    raise TypeError(f"register_tools takes a BaseTool or a function, got {type(obj).__name__}")


def _tool(obj: Any) -> tuple[str, Any]:
    tool = _as_tool(obj)
    return tool.name, tool


def validate(kind: str, item: Any) -> tuple[str, Any]:
    """(name, what to store) for ``item`` registered as ``kind``; raises ``TypeError`` when invalid.

    A :class:`Lazy` is stored as is; it must declare the attributes
    :data:`LAZY_DECLARED` names for its kind. A ``"package.module:attr"``
    string registered as a tool becomes ``Lazy(that string)``.
    """
    if kind == "tools" and isinstance(item, str):
        item = Lazy(item)
    if type(item) is not Lazy:
        return VALIDATORS[kind](item)
    if kind == "tools":
        check_name(item.name)
    if kind == "resource_types":
        raise TypeError("resource types are registered by name, not lazily")
    if not isinstance(item.name, str) or not item.name:
        raise TypeError(f"{item!r} has no name")
    missing = [attr for attr in LAZY_DECLARED.get(kind, ()) if attr not in item.attrs]
    if missing:
        raise TypeError(
            f"lazy {kind} {item.name!r} must declare {', '.join(missing)}= "
            "(the kernel reads it before importing)"
        )
    return item.name, item


#: Attributes a :class:`Lazy` must declare, by kind: the kernel reads them before loading.
LAZY_DECLARED: dict[str, tuple[str, ...]] = {
    "sandbox_runtimes": ("isolated",),
    "resources": ("type",),
}

#: Kinds whose lazy entries answer their own code, not ``PLUGIN_LOAD_FAILED``, once loading failed.
NAME_LOAD_FAILED: dict[str, str] = {"tools": TOOL_LOAD_FAILED}

VALIDATORS: dict[str, Callable[[Any], tuple[str, Any]]] = {
    "resource_types": _resource_type,
    "resources": _resource,
    "tools": _tool,
    "database_engines": _named("name", "schemes"),
    "sandbox_runtimes": _named("name", "isolated"),
    "artifact_stores": _named("name"),
    "report_renderers": _named("name", "media_type", "render"),
    "models": _named("model_id"),
    "knowledge_retrievers": _named("name", "retrieve"),
    "subsystems": _named("name", "make"),
}

# Hook name -> registry kind, in the order the kernel calls them.
REGISTER_HOOKS: dict[str, str] = {
    "register_resource_types": "resource_types",
    "register_database_engines": "database_engines",
    "register_artifact_stores": "artifact_stores",
    "register_subsystems": "subsystems",
    "register_sandbox_runtimes": "sandbox_runtimes",
    "register_models": "models",
    "register_report_renderers": "report_renderers",
    "register_knowledge_retrievers": "knowledge_retrievers",
    "register_tools": "tools",
    "register_resources": "resources",
}
