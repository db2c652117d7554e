"""Container labels that say who owns a sandbox and when it expires.

Every container carries the owner's pid *and* that process's start time (so
a recycled pid is not mistaken for the owner), the host name, and an expiry.
A reaper removes containers whose owner is gone or whose time is up, even
ones left by a process that was SIGKILLed.
"""

from __future__ import annotations

import os
import socket
import time
from functools import lru_cache

LABEL = "assay.sandbox"
SESSION = "assay.sandbox.session"
OWNER_PID = "assay.sandbox.owner-pid"
OWNER_START = "assay.sandbox.owner-start"
OWNER_HOST = "assay.sandbox.owner-host"
CREATED = "assay.sandbox.created"
EXPIRES = "assay.sandbox.expires"
RUNTIME = "assay.sandbox.runtime"
POOLED = "assay.sandbox.pooled"
UID_BLOCK = "assay.sandbox.uid-block"  # the first uid of the session's own block (uids.py)


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    fields = data[data.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


@lru_cache(maxsize=1)
def _hostname() -> str:
    return socket.gethostname()


def owner_labels(
    session_id: str, runtime: str, lifetime_s: float, *, pooled: bool = False
) -> dict[str, str]:
    """The labels for a new container owned by this process."""
    now = time.time()
    pid = os.getpid()
    labels = {
        LABEL: "1",
        SESSION: session_id,
        OWNER_PID: str(pid),
        OWNER_START: process_start_time(pid) or "",
        OWNER_HOST: _hostname(),
        CREATED: f"{now:.3f}",
        EXPIRES: f"{now + lifetime_s:.3f}",
        RUNTIME: runtime,
    }
    if pooled:
        labels[POOLED] = "1"
    return labels


def orphan_reason(labels: dict[str, str], now: float | None = None) -> str | None:
    """Why a labelled container should be removed, or None if its owner still wants it.

    Containers from another host are never judged (their pids mean nothing here)
    unless they have expired.
    """
    if labels.get(LABEL) != "1":
        return None
    now = time.time() if now is None else now
    try:
        if float(labels.get(EXPIRES, "0")) <= now:
            return "expired"
    except ValueError:
        return "bad expiry label"
    if labels.get(OWNER_HOST) != _hostname():
        return None
    try:
        pid = int(labels.get(OWNER_PID, ""))
    except ValueError:
        return "bad owner label"
    start = process_start_time(pid)
    if start is None:
        return "owner gone"
    if labels.get(OWNER_START) and start != labels[OWNER_START]:
        return "owner gone (pid reused)"
    return None


def owned_by_me(labels: dict[str, str]) -> bool:
    """True for containers this very process created."""
    return (
        labels.get(LABEL) == "1"
        and labels.get(OWNER_PID) == str(os.getpid())
        and labels.get(OWNER_HOST) == _hostname()
        and labels.get(OWNER_START) == (process_start_time(os.getpid()) or "")
    )
