"""Tool definitions kept between processes, so that start-up need not import every tool to describe it.

`assay ask` sends every offered tool's definition (name, description, JSON
Schema) with its first model request. Building them imports each lazily
registered tool's module and builds a pydantic model per tool: about 100 ms
of CPU of the start-up (bench/bench_agent.py). A tool that declares
``static_definition = True`` (its definition follows from its code alone)
has its definition kept here once built, and read back by the next process
without importing the tool; the tool itself still loads on its first call,
and its arguments are validated by the loaded tool, never by this cache.

Where: ``$ASSAY_HOME/cache/tool-definitions.json``, one JSON object::

    {"format": 1, "fingerprint": "<sha256>", "tools": {"<plugin>:<tool>": {"name", "description", "parameters"}}}

Invalidation: the fingerprint is a SHA-256 over what a code-only
definition can depend on: this format, Python's version and executable,
every loaded plugin (name, module, distribution, version), the path, size
and modification time of every ``.py`` file of the packages those plugins
and their lazily registered tools come from, and the modification time of every ``sys.path`` directory (a
package installed or removed changes its directory). When it differs, the
file's definitions are all discarded and rebuilt. A plugin whose code has no
file (defined in an interactive session) turns the cache off for that
kernel. Deleting the file is always safe; an unreadable or unwritable file is
ignored (the definitions are then built as before).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any, Iterable

from .log import get_logger
from .registry import Lazy
from .tools import BaseTool

log = get_logger("assay.kernel")

FORMAT = 1
FILE_NAME = "tool-definitions.json"


class DefinitionCache:
    """The cached definitions valid for one fingerprint; :meth:`save` writes what was added."""

    def __init__(self, path: Path, fingerprint: str) -> None:
        self.path, self.fingerprint = path, fingerprint
        self._tools: dict[str, dict[str, Any]] = {}
        self._dirty = False
        self._lock = threading.Lock()  # several threads may describe tools of one kernel at once
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return  # no file yet, or one that cannot be used: rebuilt
        if isinstance(data, dict) and data.get("format") == FORMAT and data.get("fingerprint") == fingerprint:
            tools = data.get("tools")
            if isinstance(tools, dict):
                self._tools = {k: v for k, v in tools.items() if _is_definition(v)}

    def get(self, plugin: str, name: str) -> dict[str, Any] | None:
        """``{"name", "description", "parameters"}`` of tool ``name`` of ``plugin``, or None."""
        found = self._tools.get(f"{plugin}:{name}")
        return found if found is not None and found["name"] == name else None

    def put(self, plugin: str, tool: Any) -> None:
        definition = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        key = f"{plugin}:{tool.name}"
        with self._lock:
            if self._tools.get(key) != definition:
                self._tools[key] = definition
                self._dirty = True

    def save(self) -> None:
        """Write the file (atomically) if anything was added; a failure is logged, never raised."""
        with self._lock:
            if not self._dirty:
                return
            # key order kept as built: the model reads the parameters in the signature's order
            body = json.dumps({"format": FORMAT, "fingerprint": self.fingerprint, "tools": self._tools})
            self._dirty = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            temporary.write_text(body)
            temporary.replace(self.path)
        except OSError as exc:
            log.debug("tool_definition_cache_not_written", path=str(self.path), error=repr(exc))


def code_module(tool: Any) -> str:
    """The module a registered tool's code comes from (a lazy one's target; never imports)."""
    if type(tool) is Lazy:
        return tool.target
    return getattr(getattr(tool, "func", None), "__module__", None) or type(tool).__module__


def cacheable(tool: Any) -> bool:
    """A static definition, shaped by BaseTool's own ``to_openai`` / ``to_mcp`` (which the cache rebuilds)."""
    cls = type(tool)
    return (getattr(tool, "static_definition", False) is True and isinstance(tool, BaseTool)
            and cls.to_openai is BaseTool.to_openai and cls.to_mcp is BaseTool.to_mcp)


def shaped(fmt: str, definition: dict[str, Any]) -> dict[str, Any]:
    """A definition ``{"name", "description", "parameters"}`` in the shape of ``BaseTool.to_openai`` / ``to_mcp``."""
    if fmt == "openai":
        return {"type": "function", "function": {"name": definition["name"], "description": definition["description"],
                                                 "parameters": definition["parameters"]}}
    return {"name": definition["name"], "description": definition["description"],
            "inputSchema": definition["parameters"]}


def _is_definition(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("name"), str)
            and isinstance(value.get("description"), str) and isinstance(value.get("parameters"), dict))


def fingerprint(plugins: Iterable[tuple[str, str, str | None, str | None]], modules: Iterable[str] = ()) -> str | None:
    """The fingerprint of the plugins ``(name, module, distribution, version)`` as loaded in this
    process, and of the packages of ``modules`` (the targets of lazy registrations, not imported yet);
    None when one of them has no source file to stamp (then nothing may be cached)."""
    digest = hashlib.sha256()
    digest.update(f"{FORMAT}\n{sys.version}\n{sys.executable}\n".encode())
    tops: set[str] = {m.split(":", 1)[0].split(".", 1)[0] for m in modules}
    for name, module, distribution, version in sorted(plugins, key=lambda p: p[0]):
        digest.update(f"plugin {name} {module} {distribution} {version}\n".encode())
        tops.add(module.split(":", 1)[0].split(".", 1)[0])
    roots = _source_roots(tops)
    if roots is None:
        return None
    for root in roots:
        for line in _stamp_tree(root):
            digest.update(line.encode())
    for entry in sys.path:
        try:
            digest.update(f"path {entry} {os.stat(entry or '.').st_mtime_ns}\n".encode())
        except OSError:
            digest.update(f"path {entry} -\n".encode())
    return digest.hexdigest()


def _source_roots(tops: set[str]) -> list[str] | None:
    """The directories (or single files) holding the code of the top-level packages ``tops``:
    each one's own, and those of its imported subpackages that live elsewhere (assay maps
    ``assay.kernel`` to ``kernel/`` and so on)."""
    found: set[str] = set()
    for top in sorted(tops):
        module = sys.modules.get(top)
        if module is None:  # a lazy target's package, not imported yet: found without importing it
            spec = _find_spec(top)
            if spec is None:
                return None
            locations = list(spec.submodule_search_locations or [])
            if not locations and not spec.origin:
                return None
            found.update(os.path.realpath(p) for p in (locations or [spec.origin]))
            continue
        paths = list(getattr(module, "__path__", None) or [])
        if not paths:
            file = getattr(module, "__file__", None)
            if not file:
                return None
            found.add(os.path.realpath(file))
            continue
        prefix = top + "."
        for sub_name, sub in list(sys.modules.items()):
            if sub_name.startswith(prefix) and sub is not None:
                paths.extend(getattr(sub, "__path__", None) or [])
        found.update(os.path.realpath(p) for p in paths)
    # a directory inside another is stamped with it
    ordered = sorted(found)
    return [p for i, p in enumerate(ordered) if not any(p.startswith(q + os.sep) for q in ordered[:i])]


def _find_spec(top: str) -> Any:
    """The import spec of the top-level module ``top`` (finding a top-level module imports nothing)."""
    import importlib.util

    try:
        return importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None


def _stamp_tree(root: str) -> list[str]:
    if os.path.isfile(root):
        st = os.stat(root)
        return [f"file {root} {st.st_size} {st.st_mtime_ns}\n"]
    lines: list[str] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__" and not entry.name.startswith("."):
                    stack.append(entry.path)
            elif entry.name.endswith(".py"):
                st = entry.stat()
                lines.append(f"file {entry.path} {st.st_size} {st.st_mtime_ns}\n")
    return lines
