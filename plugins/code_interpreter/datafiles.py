"""The run's registered files, readable in its sandbox at ``/data`` (host side).

A run's files datasources (``assay ask --file``, ``ASSAY_FILES``, a service run's uploads) say which
files were registered: their real paths, sizes and mtimes, and how they were sniffed. The sandbox
session is created with each of them bind-mounted read-only (plugins/sandbox/datamounts.py) - never a
directory, never a path the files plugin did not register - and gets a small read-only manifest
(``.assay-runner/files.json``) from which ``load_file("name")`` reads a file the way SQL does (same
delimiter, encoding, header, column names). Before every cell each file is checked again like a
query's (``FILE_CHANGED`` / ``FILE_MISSING``), so Python never reads bytes other than the registered
ones; the cell's artifact names the files' ``source`` artifacts.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MANIFEST_NAME = "files.json"


@dataclass
class DataFiles:
    """The files one run's sandbox gets: the mounts, the manifest ``load_file`` reads, their owners."""

    resources: list[Any] = field(default_factory=list)  # files datasources (FilesResource)
    mounts: tuple[Any, ...] = ()  # plugins.sandbox.datamounts.DataMount
    tables: list[dict[str, Any]] = field(default_factory=list)

    def manifest(self, root: str) -> bytes:
        return json.dumps({"root": root, "tables": self.tables}, indent=1).encode()

    def check_unchanged(self) -> None:
        """``FILE_CHANGED`` / ``FILE_MISSING`` (the files plugin's own check) before a cell reads them."""
        for resource in self.resources:
            resource.check_unchanged()

    def sources(self, sink: Any) -> list[str]:
        """The mounted files' ``source`` artifacts in this run (captured once per run)."""
        if sink is None:
            return []
        ids: list[str] = []
        for resource in self.resources:
            ids.extend(i for i in resource.source_artifacts(sink) if i not in ids)
        return ids


def _file_resources(run: Any) -> list[Any]:
    found: list[Any] = []
    pools = [run.own_resources().values()]
    if run.kernel is not None:
        pools.append(run.kernel.resources.values())
    for pool in pools:
        for resource in pool:
            if callable(getattr(resource, "sandbox_tables", None)) and resource not in found:
                found.append(resource)
    return found


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_. -]+", "_", name).lstrip(".- ") or "file"


def _suffix(path: str) -> str:
    from assay.plugins.files.formats import format_of

    _, ext, compression = format_of(Path(path))
    return ext + {"gzip": ".gz", "zstd": ".zst"}.get(compression or "", "")


def collect(run: Any) -> DataFiles:
    """The run's registered files as read-only mounts under ``/data`` and the manifest describing them."""
    from assay.plugins.sandbox.datamounts import DataMount

    out = DataFiles()
    by_source: dict[str, str] = {}  # real path -> target
    targets: set[str] = set()
    names: set[str] = set()
    for resource in _file_resources(run):
        used = False
        for entry in resource.sandbox_tables():
            files = entry["files"]
            rel_paths, problem = [], None
            for i, facts in enumerate(files):
                source = facts["path"]
                if source in by_source:
                    rel_paths.append(by_source[source][len("/data/") :])
                    continue
                if len(files) == 1:
                    base = entry["file"]
                    target = f"/data/{base}{_suffix(source)}"
                    n = 2
                    while target in targets:
                        target = f"/data/{base}_{n}{_suffix(source)}"
                        n += 1
                else:
                    name = _safe(os.path.basename(source))
                    target = f"/data/{entry['file']}/{name}"
                    if target in targets:
                        target = f"/data/{entry['file']}/{i}_{name}"
                try:
                    mode = os.stat(source).st_mode
                except OSError:
                    mode = 0
                if not mode & stat.S_IROTH:
                    problem = (
                        f"{os.path.basename(source)} is not readable by the sandbox's user "
                        "(it is not world-readable on the host)"
                    )
                    continue
                out.mounts += (DataMount(source, target, facts["size"], facts["mtime_ns"]),)
                targets.add(target)
                by_source[source] = target
                rel_paths.append(target[len("/data/") :])
                used = True
            key = (
                entry["table"]
                if entry["table"] not in names
                else f"{entry['datasource']}.{entry['table']}"
            )
            names.add(key)
            out.tables.append(
                {
                    "name": key,
                    "file": entry["file"],
                    "format": entry["format"],
                    "encoding": entry["encoding"],
                    "delimiter": entry["delimiter"],
                    "sheet": entry["sheet"],
                    "columns": entry["columns"],
                    "paths": rel_paths,
                    "problem": problem,
                }
            )
        if used:
            out.resources.append(resource)
    return out
