"""Whether a process of this host still runs: the one check behind stale-run and stale-upload cleanup."""

from __future__ import annotations

import os


def pid_alive(pid: int | None) -> bool:
    """True while ``pid`` names a running process on this host (one of another user's counts).

    ``None``, 0 and negative numbers name no single process (``kill`` would signal a process
    group), so they are never alive.
    """
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True
