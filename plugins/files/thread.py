"""A follow-up's files: those its parent run used, checked against the parent's record and registered again.

A run that used files keeps them in its record (``files``: :meth:`FilesResource.recorded`): per table
given, each file's path, size, mtime, SHA-256 and ``source`` artifact (an upload: its id). A follow-up
given no files of its own gets its parent's through :func:`reopen`: each file is found again (a path, or
an upload of the same owner) and checked first. A file that is gone is ``FILE_MISSING``; a size or mtime
that differs means the file is hashed, and bytes other than the recorded ones are ``FILE_CHANGED``. The
table of such a file is not registered (never silently re-read: the agent is told before it plans, and
the earlier evidence over the old bytes stays citable); the others are, in one datasource of the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import FILE_CHANGED, FILE_MISSING, FILE_NOT_FOUND, FileError
from .resource import file_state
from .sources import FileSpec


@dataclass
class Reopened:
    """The parent's files as the follow-up finds them."""

    resource: Any = None  # a FilesResource over the files that are unchanged (None: none is)
    tables: list[str] = field(
        default_factory=list
    )  # the tables given again (as named by the parent)
    problems: list[dict[str, Any]] = field(default_factory=list)  # table, name, path, code, message


def check_file(recorded: dict[str, Any], path: Path) -> tuple[int, int]:
    """Raise ``FILE_MISSING`` / ``FILE_CHANGED`` unless ``path`` holds the recorded bytes; returns the
    (size, mtime) it was checked at."""
    name = recorded.get("name") or path.name
    state = file_state(path, recorded.get("size"), recorded.get("mtime_ns"), recorded.get("sha256"))
    if state is None:
        raise FileError(
            FILE_MISSING,
            f"{name} is gone since the run being continued used it (it was {recorded['path']})",
            "Give the file again with --file (or upload it again) to query it.",
            details={"path": recorded["path"]},
        )
    st, changed = state  # as every statement checks it (FilesResource.check_unchanged)
    if not changed:
        return st.st_size, st.st_mtime_ns
    raise FileError(
        FILE_CHANGED,
        f"{name} changed since the run being continued used it (size {recorded.get('size'):,} -> "
        f"{st.st_size:,} bytes)",
        "Give the file again with --file (or upload it again) to query its new content; the thread's "
        "answers keep citing the old bytes.",
        details={"path": recorded["path"]},
    )


def reopen(
    record: dict[str, Any],
    locate: Callable[[dict[str, Any]], Path],
    open_specs: Callable[[list[FileSpec]], Any],
) -> Reopened:
    """The parent's ``record`` registered again: ``locate`` finds a recorded file (raises FileError when it
    cannot), ``open_specs`` makes the datasource over the tables whose files all hold the recorded bytes."""
    out = Reopened()
    specs: list[FileSpec] = []
    checked: dict[str, tuple[int, int, str | None]] = {}  # path -> size, mtime and SHA-256 verified
    for table in record.get("tables") or []:
        paths: list[Path] = []
        for recorded in table.get("files") or []:
            try:
                path = locate(recorded)
                size, mtime_ns = check_file(recorded, path)
            except FileError as exc:
                code = FILE_MISSING if exc.code == FILE_NOT_FOUND else exc.code
                out.problems.append(
                    {
                        "table": table.get("table"),
                        "name": recorded.get("name"),
                        "path": recorded.get("path"),
                        "source_artifact_id": recorded.get("source_artifact_id"),
                        "code": code,
                        "message": exc.message,
                    }
                )
                break
            paths.append(path)
            checked[str(path)] = (size, mtime_ns, recorded.get("sha256"))
        else:
            if paths:
                specs.append(FileSpec(table["table"], tuple(paths)))
    if specs:
        resource = open_specs(specs)
        for facts in resource.files:  # what was registered is what was checked (no change since)
            size, mtime_ns, sha256 = checked[facts.path]
            same = (facts.size, facts.mtime_ns) == (size, mtime_ns)
            if not same or (facts.sha256 and sha256 and facts.sha256 != sha256):
                if callable(getattr(resource, "close", None)):
                    resource.close()
                raise FileError(
                    FILE_CHANGED,
                    f"{Path(facts.path).name} changed while it was registered again",
                    "Ask again.",
                    details={"path": facts.path},
                )
            facts.sha256 = (
                facts.sha256 or sha256
            )  # its bytes are the recorded ones: not hashed again
        out.resource = resource
        out.tables = [s.name for s in specs]
    return out
