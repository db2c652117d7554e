"""Small built-in tools that need nothing but the kernel."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Annotated

from pydantic import Field

from assay import hookimpl, tool

UTC_OFFSET_MIN, UTC_OFFSET_MAX = -12 * 60, 14 * 60  # the offsets in use: UTC-12:00 to UTC+14:00


@tool
def current_time(
    tz_offset_minutes: Annotated[int, Field(ge=UTC_OFFSET_MIN, le=UTC_OFFSET_MAX)] = 0,
) -> str:
    """The current date and time, as ISO 8601.

    Args:
        tz_offset_minutes: Offset from UTC in minutes, for example 480 for UTC+8 (from -720 to 840).
    """
    return datetime.now(timezone(timedelta(minutes=tz_offset_minutes))).isoformat(
        timespec="seconds"
    )


@tool
def arithmetic(
    a: float,
    b: float,
    op: Annotated[
        str, Field(description="One of add, sub, mul, div.", pattern="^(add|sub|mul|div)$")
    ],
) -> float:
    """Exact arithmetic on two numbers, so the model never does sums in its head.

    Args:
        a: The left operand.
        b: The right operand.
    """
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return a / b


@hookimpl
def register_tools(register):
    register(current_time)
    register(arithmetic)
