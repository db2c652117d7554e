"""Admission limits of the service: :class:`Refused`, the per-minute window, and the per-token limits of
``POST /tools/{name}`` (calls going at once and calls started per minute).

A tool call may open a sandbox session; without a cap of its own one token
could take the whole pool (``SANDBOX_MAX_SESSIONS``) and other users' runs
would fail. Checked and counted in one step on the event loop.
"""

from __future__ import annotations

import math
import time
from collections import deque

from assay.kernel.errors import AssayError

from .settings import ServiceSettings

SERVICE_RATE_LIMITED = "SERVICE_RATE_LIMITED"
SERVICE_BUSY = "SERVICE_BUSY"


class Refused(AssayError):
    """Admission refused: ``status`` is the HTTP status, ``retry_after`` seconds (429)."""

    def __init__(
        self, code: str, message: str, hint: str, status: int, retry_after: int | None = None
    ) -> None:
        super().__init__(code, message, hint)
        self.status, self.retry_after = status, retry_after


def per_minute_wait(recent: deque[float], now: float, limit: int) -> int | None:
    """Seconds to wait before one more start fits ``limit`` starts a minute (``recent``: the start times,
    oldest first; the ones over a minute old are dropped), or None when it fits now."""
    while recent and now - recent[0] >= 60:
        recent.popleft()
    if len(recent) < limit:
        return None
    return max(1, math.ceil(60 - (now - recent[0])))


class InFlight:
    """How many of one kind of request each token has going, capped at ``cap`` (``what`` names them)."""

    def __init__(self, cap: int, what: str, setting: str) -> None:
        self.cap, self.what, self.setting = cap, what, setting
        self.going: dict[str, int] = {}

    def admit(self, token_id: str) -> None:
        """Count one in for ``token_id``, or raise :class:`Refused` (429 ``SERVICE_BUSY``)."""
        going = self.going.get(token_id, 0)
        if going >= self.cap:
            raise Refused(
                SERVICE_BUSY,
                f"this token already has {going} {self.what} going (limit {self.cap})",
                f"Wait for one to end ({self.setting} sets the limit).",
                429,
                retry_after=2,
            )
        self.going[token_id] = going + 1

    def release(self, token_id: str) -> None:
        self.going[token_id] -= 1
        if not self.going[token_id]:
            del self.going[token_id]


class ToolCallLimits:
    """Per token: POST /tools calls going at once (``max_tool_calls_per_token``) and started in the last
    minute (``tool_calls_per_minute``). Both are checked and counted in one step on the event loop."""

    def __init__(self, settings: ServiceSettings) -> None:
        self.settings = settings
        self.going = InFlight(
            settings.max_tool_calls_per_token,
            "tool calls",
            "ASSAY_SERVICE_MAX_TOOL_CALLS_PER_TOKEN",
        )
        self.started: dict[str, deque[float]] = {}

    def admit(self, token_id: str) -> None:
        """Count a call of ``token_id`` in, or raise :class:`Refused` (429 with ``Retry-After``)."""
        s = self.settings
        recent = self.started.setdefault(token_id, deque())
        wait = per_minute_wait(recent, time.monotonic(), s.tool_calls_per_minute)
        if wait is not None:
            raise Refused(
                SERVICE_RATE_LIMITED,
                f"more than {s.tool_calls_per_minute} tool calls a minute for this token",
                f"Wait {wait} s.",
                429,
                retry_after=wait,
            )
        self.going.admit(token_id)
        recent.append(time.monotonic())

    def release(self, token_id: str) -> None:
        self.going.release(token_id)
