"""Registered data files, bind-mounted read-only under ``/data``: the one exception to "no host mounts".

A session's container may get the files a files datasource registered (docs/files.md) - each one a
regular file whose real path, size and mtime the host recorded - mounted read-only (``ro``, ``nosuid``,
``nodev``, ``noexec``) at ``/data/<name>.<ext>`` (a table over several files: ``/data/<name>/<file>``).
Only the host gives them (:meth:`SandboxManager.connect`'s ``data_files``); the model's overrides can
never ask for a mount (``mounts``, ``volumes``, ``binds`` stay refused). :func:`problems` re-checks
them with the rest of the spec right before creation, and :func:`inspect_problems` checks the engine's
inspect output after it: exactly these mounts, read-only, nothing else.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass
from typing import Any

DATA_ROOT = "/data"
_TARGET = re.compile(r"^/data/[a-z0-9_][a-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_. -]*)?$")


@dataclass(frozen=True)
class DataMount:
    """One registered file, read-only at ``target`` inside the sandbox."""

    source: str  # the host's real path (links resolved at registration)
    target: str  # /data/<name>.<ext> or /data/<name>/<file>
    size: int
    mtime_ns: int

    @property
    def options(self) -> tuple[str, ...]:
        return ("ro", "nosuid", "nodev", "noexec", "rprivate")


def problems(mounts: tuple[DataMount, ...]) -> list[str]:
    """Why these data mounts may not be given to a container (empty: they may)."""
    out: list[str] = []
    seen: set[str] = set()
    for m in mounts:
        if not isinstance(m, DataMount):
            out.append(f"data mount {m!r} is not a DataMount")
            continue
        target = posixpath.normpath(m.target)
        if target != m.target or not _TARGET.match(m.target) or ".." in m.target.split("/"):
            out.append(f"data mount target {m.target!r} must be a plain path under {DATA_ROOT}/")
        if m.target in seen or any(
            m.target.startswith(s + "/") or s.startswith(m.target + "/") for s in seen
        ):
            out.append(f"data mount target {m.target!r} is given twice")
        seen.add(m.target)
        if not os.path.isabs(m.source) or os.path.realpath(m.source) != m.source:
            out.append(f"data mount source {m.source!r} must be a real absolute path (no links)")
            continue
        try:
            st = os.lstat(m.source)
        except OSError:
            out.append(f"data mount source {m.source!r} is gone")
            continue
        if not stat.S_ISREG(st.st_mode):
            out.append(f"data mount source {m.source!r} is not a regular file")
        elif st.st_size != m.size or st.st_mtime_ns != m.mtime_ns:
            out.append(f"data mount source {m.source!r} changed after it was registered")
    return out


def inspect_problems(mounts: tuple[DataMount, ...], info: dict[str, Any]) -> list[str]:
    """Compare an engine's Docker-compatible inspect output with the data mounts: every bind is one of
    them, read-only, from its source; each of them is there; no volume at all."""
    expected = {m.target: m.source for m in mounts}
    out: list[str] = []
    found: dict[str, str] = {}
    for item in info.get("Mounts") or []:
        kind = item.get("Type")
        if kind in ("tmpfs",):
            continue
        dest = str(item.get("Destination") or item.get("Target") or "")
        if kind != "bind" or dest not in expected:
            out.append(f"the container has a host mount at {dest!r} ({kind})")
            continue
        if item.get("RW") is not False:
            out.append(f"the data mount at {dest!r} is writable")
        if str(item.get("Source") or "") != expected[dest]:
            out.append(f"the data mount at {dest!r} comes from {item.get('Source')!r}")
        found[dest] = str(item.get("Source") or "")
    for bind in (info.get("HostConfig") or {}).get("Binds") or []:
        parts = str(bind).split(":")
        dest = parts[1] if len(parts) > 1 else ""
        opts = parts[2].split(",") if len(parts) > 2 else []
        if dest not in expected or parts[0] != expected[dest]:
            out.append(f"the container has a host bind {bind!r}")
        elif "ro" not in opts:
            out.append(f"the data bind {bind!r} is not read-only")
    missing = sorted(set(expected) - set(found))
    if missing:
        out.append(f"data mounts missing: {', '.join(missing)}")
    return out


def _plain(mounts: tuple[DataMount, ...], refused: str, where: str) -> tuple[DataMount, ...]:
    for m in mounts:
        if any(ch in m.source + m.target for ch in refused):
            from assay.kernel.sandbox.errors import SANDBOX_OVERRIDE_REFUSED, SandboxError

            raise SandboxError(
                SANDBOX_OVERRIDE_REFUSED,
                f"the data file {m.source!r} cannot be named in {where}",
                "Rename it without ':', ',', '=' or quotes, or use the podman runtime.",
            )
    return mounts


def checked_for_binds(mounts: tuple[DataMount, ...]) -> tuple[DataMount, ...]:
    """The mounts, refused when a path would break a ``source:target:options`` bind string."""
    return _plain(mounts, ":,\n", "a bind string")


def cli_args(mounts: tuple[DataMount, ...]) -> list[str]:
    """``--mount`` flags for a docker-compatible CLI (podman, nerdctl, docker)."""
    args: list[str] = []
    for m in _plain(mounts, ",=\n\"'", "an engine's command line"):
        args += ["--mount", f"type=bind,source={m.source},target={m.target},readonly"]
    return args
