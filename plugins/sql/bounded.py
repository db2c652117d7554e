"""Running the guard's own work (parse, check, regenerate) inside the call's time limit.

The parse is pure Python: a thread cannot be killed, but an exception can be
raised in it. :func:`within` runs a function on the calling thread and, if it
is still running at the deadline, a watchdog thread (one for all calls)
raises :class:`Overran` in that thread (at its next bytecode), which stops
the parse there and then. The exception can only be raised while the
function runs: the watchdog and the calling thread agree on that under one
lock, and an exception set but not yet raised when the function returns is
withdrawn before returning.
"""

from __future__ import annotations

import ctypes
import threading
import time
from typing import Callable, TypeVar

from .errors import SQL_QUERY_TIMEOUT, TIMEOUT_HINT, SqlError

T = TypeVar("T")


class Overran(BaseException):
    """Raised inside the guarded work at its deadline (a BaseException: no ``except Exception`` swallows it)."""


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


class _Watch:
    """One guarded call: its thread, deadline, and whether it still runs / was stopped (under ``_WATCH``)."""

    __slots__ = ("thread_id", "deadline", "running", "fired")

    def __init__(self, thread_id: int, deadline: float) -> None:
        self.thread_id, self.deadline, self.running, self.fired = thread_id, deadline, True, False


_WATCH = threading.Condition()
_watched: set[_Watch] = set()
_watchdog: list[threading.Thread] = []  # the one watchdog thread, started with the first guarded call


def _watch_loop() -> None:
    """Stops every guarded call still running at its deadline (one daemon thread for all of them)."""
    with _WATCH:
        while True:
            now = time.monotonic()
            for watch in [w for w in _watched if w.running and w.deadline <= now]:
                watch.fired = True
                watch.running = False
                _raise_in(watch.thread_id, Overran)
            _watched.difference_update([w for w in _watched if not w.running])
            pending = [w.deadline for w in _watched]
            _WATCH.wait(min(pending) - now if pending else None)


def within(fn: Callable[[], T], timeout_s: float) -> tuple[T, float]:
    """``fn()`` and the seconds it took; raises :class:`Overran` when it ran past ``timeout_s`` (it was stopped)."""
    started = time.monotonic()
    watch = _Watch(threading.get_ident(), started + timeout_s)
    with _WATCH:
        if not _watchdog:
            _watchdog.append(threading.Thread(target=_watch_loop, name="assay-sql-guard-watchdog", daemon=True))
            _watchdog[0].start()
        _watched.add(watch)
        _WATCH.notify()
    try:
        try:
            value = fn()
        finally:
            with _WATCH:
                watch.running = False
                _watched.discard(watch)
            if watch.fired:
                _raise_in(watch.thread_id, None)  # set, not raised yet: withdrawn
    except Overran:
        raise Overran() from None
    if watch.fired:
        raise Overran()
    return value, time.monotonic() - started


def guard_within(check: Callable[[], T], timeout_s: float) -> tuple[T, float]:
    """The guard's ``check()`` and the seconds it took, stopped at ``timeout_s`` (``SQL_QUERY_TIMEOUT``)."""
    started = time.monotonic()
    try:
        return within(check, timeout_s)
    except Overran:
        elapsed = time.monotonic() - started
        raise SqlError(
            SQL_QUERY_TIMEOUT,
            f"the check of the SQL (its parse) hit the {timeout_s:g} s time limit and was stopped "
            f"{max(elapsed - timeout_s, 0) * 1000:.0f} ms after it; nothing was sent to the database",
            "Send a shorter or simpler query (a long literal list costs the check as much as the database). "
            + TIMEOUT_HINT,
            details={"stopped": True, "stage": "guard", "elapsed_ms": round(elapsed * 1000, 3),
                     "timeout_s": timeout_s},
        ) from None
