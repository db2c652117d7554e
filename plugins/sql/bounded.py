"""Running the guard's own work (parse, check, regenerate) inside the call's time limit.

:func:`within` sets a deadline for the calling thread; the tokenizer and the
parser of every dialect (:mod:`.dialects`) check it every 256 tokens
(:func:`check_deadline`) and raise :class:`Overran` past it, which ends the
parse there and then. The check is in the tokenizer's and the parser's own
code, never in anything else the thread may run (no exception is sent into
the thread from outside).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from .errors import SQL_QUERY_TIMEOUT, TIMEOUT_HINT, SqlError

T = TypeVar("T")
_state = threading.local()


class Overran(BaseException):
    """Raised by the tokenizer or the parser past the guarded call's deadline (a BaseException: no ``except Exception`` in the
    parser or the guard swallows it)."""


def check_deadline() -> None:
    """Raise :class:`Overran` when this thread's guarded call is past its deadline (no-op outside one)."""
    deadline = getattr(_state, "deadline", None)
    if deadline is not None and time.monotonic() >= deadline:
        raise Overran()


def within(fn: Callable[[], T], timeout_s: float) -> tuple[T, float]:
    """``fn()`` and the seconds it took, under a deadline ``timeout_s`` away (raises :class:`Overran`)."""
    started = time.monotonic()
    outer = getattr(_state, "deadline", None)
    _state.deadline = started + timeout_s
    try:
        return fn(), time.monotonic() - started
    finally:
        _state.deadline = outer


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
            details={
                "stopped": True,
                "stage": "guard",
                "elapsed_ms": round(elapsed * 1000, 3),
                "timeout_s": timeout_s,
            },
        ) from None
