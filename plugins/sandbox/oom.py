"""The container's OOM-kill counter, read on the host from the container's memory cgroup.

The launcher reads the same counter inside (``memory.events`` / ``memory.oom_control``),
but when the OOM killer picks the launcher itself - memory the code holds without owning
it (tmpfs files, kernel buffers) leaves the launcher the largest process - there is no
trailer, and under gVisor an OOM stops the whole sandbox, so nothing inside can be asked.
The host then reads the counter itself: the cgroup is found once per session from the
container's first process (``State.Pid`` in the engine's inspect, then
``/proc/<pid>/cgroup``), and its counter is read before and after each execution.

Where the host cannot see the engine's cgroups (a remote engine, a rootless engine in
another cgroup namespace) the counter is unknown (None) and callers say so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

CGROUP_ROOT = "/sys/fs/cgroup"


def counter_file(
    inspect: Callable[[], dict[str, Any]], cgroup_root: str = CGROUP_ROOT
) -> str | None:
    """The host path of the container's OOM-kill counter file (None when it cannot be found)."""
    try:
        pid = int((inspect().get("State") or {}).get("Pid") or 0)
    except Exception:  # noqa: BLE001 - the engine may be gone; unknown is the answer
        return None
    if pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if "memory" in controllers.split(","):  # cgroup v1
            candidate = f"{cgroup_root}/memory{path}/memory.oom_control"
        elif hierarchy == "0" and controllers == "":  # cgroup v2 (unified)
            candidate = f"{cgroup_root}{path}/memory.events"
        else:
            continue
        if os.path.isfile(candidate):
            return candidate
    return None


def read_kills(path: str | None) -> int | None:
    """The ``oom_kill`` count in ``path`` (None when unreadable, e.g. the cgroup is already gone)."""
    if not path:
        return None
    try:
        with open(path, encoding="ascii") as fh:
            for line in fh:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return None
    return None
