"""Finding and loading plugins.

Built-in plugins are entry points in the ``assay`` group of assay's own
distribution, and load through exactly the same path as third-party ones.
Controls: ``ASSAY_LOAD_PLUGINS`` ('' loads none, 'a,b' only those),
``ASSAY_DISABLE_PLUGINS`` (a block-list), ``ASSAY_STRICT_PLUGINS=1`` (a
failing plugin aborts start-up). By default a plugin that fails to import or
to register is isolated: the failure is recorded and everything else works.
"""

from __future__ import annotations

import importlib.metadata as md
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import Any, Literal

import pluggy

from . import hookspecs
from .errors import (
    PLUGIN_DUPLICATE,
    PLUGIN_HOOK_INVALID,
    PLUGIN_IMPORT_FAILED,
    PLUGIN_UNKNOWN_HOOK,
    PluginError,
)
from .registry import resolve_path

ENTRY_POINT_GROUP = "assay"
OWN_DISTRIBUTION = "assay"

Status = Literal["loaded", "disabled", "failed"]


@dataclass
class PluginInfo:
    """What the kernel knows about one plugin, for ``assay plugins``."""

    name: str
    module: str
    distribution: str | None = None
    version: str | None = None
    builtin: bool = False
    status: Status = "loaded"
    hooks: list[str] = field(default_factory=list)
    registered: dict[str, list[str]] = field(default_factory=dict)
    error: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Candidate:
    """A plugin found but not yet imported: an entry point, or an object the host passed."""

    name: str
    module: str
    distribution: str | None
    version: str | None
    loader: Any  # a zero-argument callable returning the plugin object
    host: bool = False  # passed by the host application: not subject to the env controls

    @property
    def builtin(self) -> bool:
        return self.distribution == OWN_DISTRIBUTION


def parse_names(value: str | None) -> set[str] | None:
    """'a, b' -> {'a', 'b'}; '' -> set(); None -> None (meaning: no restriction).

    Names are normalized like distribution names (case, '-', '_' and '.'
    are equivalent), so ``assay_hello`` matches the distribution ``assay-hello``.
    """
    if value is None:
        return None
    return {normalize(part) for part in value.split(",") if part.strip()}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


_GROUP_HEADER = re.compile(rf"^\s*\[\s*{ENTRY_POINT_GROUP}\s*\]", re.MULTILINE)


def _group_entry_points() -> Iterable[Any]:
    """The entry points of the ``assay`` group, distribution by distribution in ``sys.path`` order.

    Only the distributions whose ``entry_points.txt`` has an ``[assay]`` table
    are parsed (``importlib.metadata.entry_points`` parses every installed
    one's: a few ms of start-up with a hundred packages installed).
    """
    for dist in md.distributions():
        text = dist.read_text("entry_points.txt")
        if text and _GROUP_HEADER.search(text):
            yield from dist.entry_points.select(group=ENTRY_POINT_GROUP)


def discover_entry_points() -> list[Candidate]:
    """Every entry point in the ``assay`` group, assay's own first, then by name."""
    found: list[Candidate] = []
    seen: set[tuple[str, str]] = set()
    names: dict[int, tuple[str | None, str | None]] = {}
    for ep in _group_entry_points():
        dist = getattr(ep, "dist", None)
        key = (ep.name, ep.value)
        if key in seen:  # the same distribution visible twice on sys.path
            continue
        seen.add(key)
        if id(dist) not in names:
            names[id(dist)] = _name_and_version(dist)
        dist_name, version = names[id(dist)]
        found.append(
            Candidate(
                name=ep.name,
                module=ep.value,
                distribution=dist_name,
                version=version,
                loader=ep.load,
            )
        )
    found.sort(key=lambda c: (not c.builtin, c.name))
    return found


def _name_and_version(dist: Any) -> tuple[str | None, str | None]:
    """Name and Version from the METADATA header lines: the email parser behind
    ``dist.metadata`` costs about a millisecond per call, and start-up is budgeted."""
    if dist is None:
        return None, None
    name = version = None
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    for line in text.splitlines():
        if not line.strip():
            break  # end of the header block
        if line.startswith("Name:"):
            name = line[5:].strip()
        elif line.startswith("Version:"):
            version = line[8:].strip()
        if name and version:
            return name, version
    return name or dist.metadata["Name"], version or dist.version


def candidate_for_object(obj: Any, name: str | None = None) -> Candidate:
    """A host-supplied plugin: a module, a ``"package.module"`` or ``"package.module:attr"`` path
    (resolved by :func:`~assay.kernel.registry.resolve_path`), or any object with hook functions."""
    if isinstance(obj, str):
        path = obj
        module_name, _, attr = path.partition(":")
        return Candidate(
            name or (attr or module_name).rsplit(".", 1)[-1],
            module_name,
            None,
            None,
            lambda: resolve_path(path),
            host=True,
        )
    module = (
        obj.__name__
        if isinstance(obj, ModuleType)
        else getattr(obj, "__module__", type(obj).__module__)
    )
    plugin_name = name or getattr(obj, "__name__", None) or type(obj).__name__
    return Candidate(plugin_name.rsplit(".", 1)[-1], module, None, None, lambda: obj, host=True)


def new_plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("assay")
    pm.add_hookspecs(hookspecs)
    return pm


def select(
    candidates: Iterable[Candidate], load: set[str] | None, disable: set[str]
) -> tuple[list[Candidate], list[Candidate]]:
    """Split candidates into (to load, disabled) by name or distribution name.

    Plugins the host passed explicitly always load: the controls are for
    what was discovered from installed packages.
    """
    chosen, disabled = [], []
    for cand in candidates:
        if cand.host:
            chosen.append(cand)
            continue
        keys = {normalize(cand.name), normalize(cand.distribution or "")}
        if keys & disable or (load is not None and not keys & load):
            disabled.append(cand)
        else:
            chosen.append(cand)
    return chosen, disabled


def import_plugin(pm: pluggy.PluginManager, cand: Candidate) -> tuple[Any, PluginInfo]:
    """Import and register one plugin with ``pm``. Raises :class:`PluginError` on failure."""
    info = PluginInfo(cand.name, cand.module, cand.distribution, cand.version, cand.builtin)
    try:
        obj = cand.loader()
    except Exception as exc:  # noqa: BLE001 - any import failure is isolated
        raise PluginError(
            PLUGIN_IMPORT_FAILED,
            f"plugin {cand.name!r} ({cand.module}) failed to import: {type(exc).__name__}: {exc}",
            "Reinstall or update the plugin's package, or disable it with ASSAY_DISABLE_PLUGINS.",
        ) from exc
    if pm.is_registered(obj) or pm.has_plugin(cand.name):
        raise PluginError(
            PLUGIN_DUPLICATE,
            f"plugin {cand.name!r} ({cand.module}) is listed twice",
            "Two entry points (or a host plugin and an entry point) share this name or module.",
        )
    try:
        pm.register(obj, name=cand.name)
    except (
        Exception
    ) as exc:  # pluggy.PluginValidationError: an impl's arguments do not match its spec
        raise PluginError(
            PLUGIN_HOOK_INVALID,
            f"plugin {cand.name!r} has an invalid hook implementation: {exc}",
            "A hook implementation may declare only the arguments its spec names (see docs/plugins.md).",
        ) from exc
    wrappers = sorted(
        caller.name
        for caller in pm.get_hookcallers(obj) or []
        for impl in caller.get_hookimpls()
        if impl.plugin is obj and (impl.wrapper or impl.hookwrapper)
    )
    if wrappers:
        pm.unregister(obj)
        raise PluginError(
            PLUGIN_HOOK_INVALID,
            f"plugin {cand.name!r} wraps hook(s) {', '.join(wrappers)}: assay's hooks take no wrappers",
            "Drop wrapper=True / hookwrapper=True: each implementation is called on its own so that a "
            "failing plugin is rolled back alone; tryfirst / trylast order it (docs/plugins.md).",
        )
    unknown = [
        caller.name
        for caller in pm.get_hookcallers(obj) or []
        if not caller.has_spec()
        and not any(i.optionalhook for i in caller.get_hookimpls() if i.plugin is obj)
    ]
    if unknown:
        pm.unregister(obj)
        raise PluginError(
            PLUGIN_UNKNOWN_HOOK,
            f"plugin {cand.name!r} implements unknown hook(s): {', '.join(sorted(unknown))}",
            "Check the spelling against kernel/hookspecs.py.",
        )
    info.hooks = sorted(c.name for c in pm.get_hookcallers(obj) or [])
    return obj, info


def call_order(
    pm: pluggy.PluginManager, hook_name: str, plugins: dict[str, Any]
) -> list[tuple[str, Any]]:
    """(plugin name, implementation) of ``hook_name`` in the order assay calls them.

    Plugins in ``plugins``' order (assay's own first, then by name, then the
    host's), except that ``tryfirst`` implementations come before every
    other and ``trylast`` ones after: the meaning pluggy gives the markers.
    """
    caller = getattr(pm.hook, hook_name)
    name_of = {id(obj): name for name, obj in plugins.items()}
    position = {name: i for i, name in enumerate(plugins)}
    found = [
        (name_of[id(impl.plugin)], impl)
        for impl in caller.get_hookimpls()
        if id(impl.plugin) in name_of
    ]
    return sorted(
        found,
        key=lambda pair: (
            0 if pair[1].tryfirst else 2 if pair[1].trylast else 1,
            position[pair[0]],
        ),
    )


def call_impl(impl: Any, available: dict[str, Any]) -> Any:
    """Call one hook implementation with only the arguments it declares."""
    return impl.function(*[available[name] for name in impl.argnames])
