"""Named registries with provenance.

Each kind of thing plugins register (tools, resources, runtimes, ...) lives in
a :class:`Registry` that records which plugin registered each name. A name
registered twice is an error naming both plugins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, TypeVar

from .errors import PLUGIN_NAME_CONFLICT, PLUGIN_REGISTER_FAILED, PluginError

T = TypeVar("T")
_SIMPLE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    obj: T
    plugin: str


class Registry(Generic[T]):
    """Name -> object, with the plugin each came from."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}

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

    def remove_plugin(self, plugin: str) -> list[str]:
        """Forget everything ``plugin`` registered; return the names removed."""
        names = [n for n, e in self._entries.items() if e.plugin == plugin]
        for name in names:
            del self._entries[name]
        return names

    def remove(self, name: str) -> Entry[T] | None:
        """Forget ``name``; return its entry, or None when it was not there."""
        return self._entries.pop(name, None)

    def names_by(self, plugin: str) -> list[str]:
        return [n for n, e in self._entries.items() if e.plugin == plugin]

    def get(self, name: str) -> T | None:
        entry = self._entries.get(name)
        return entry.obj if entry else None

    def entry(self, name: str) -> Entry[T] | None:
        return self._entries.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def items(self) -> list[tuple[str, T]]:
        return [(n, e.obj) for n, e in self._entries.items()]

    def as_dict(self) -> dict[str, T]:
        return {n: e.obj for n, e in self._entries.items()}


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
    from .resources import ResourceType

    return obj, ResourceType(obj)


def _resource(obj: Any) -> tuple[str, Any]:
    from .resources import Resource

    if not isinstance(obj, Resource):
        raise TypeError(f"register_resources takes Resource instances, got {type(obj).__name__}")
    if not obj.name:
        raise TypeError(f"{obj!r} has no name")
    return obj.name, obj


def _tool(obj: Any) -> tuple[str, Any]:
    from .tools import BaseTool, FunctionTool, LazyTool

    if isinstance(obj, BaseTool):
        return obj.name, obj
    if isinstance(obj, str):
        lazy = LazyTool(obj)
        return lazy.name, lazy
    if callable(obj):
        wrapped = FunctionTool(obj)
        return wrapped.name, wrapped
    raise TypeError(f"register_tools takes a BaseTool or a function, got {type(obj).__name__}")


VALIDATORS: dict[str, Callable[[Any], tuple[str, Any]]] = {
    "resource_types": _resource_type,
    "resources": _resource,
    "tools": _tool,
    "database_engines": _named("name", "schemes"),
    "sandbox_runtimes": _named("name", "isolated"),
    "artifact_stores": _named("name"),
    "report_renderers": _named("name", "media_type", "render"),
    "models": _named("model_id"),
}

# Hook name -> registry kind, in the order the kernel calls them.
REGISTER_HOOKS: dict[str, str] = {
    "register_resource_types": "resource_types",
    "register_database_engines": "database_engines",
    "register_artifact_stores": "artifact_stores",
    "register_sandbox_runtimes": "sandbox_runtimes",
    "register_models": "models",
    "register_report_renderers": "report_renderers",
    "register_tools": "tools",
    "register_resources": "resources",
}
