"""One model turn's tool calls: checked against the run's tools, run, results in the model's order.

Calls of tools that allow it (``BaseTool.concurrent``) run concurrently with
their neighbours; any other call runs alone, after what came before it. A
call of a tool the run does not offer answers ``TOOL_NOT_FOUND`` (the
allow-list is the run's tool list, not the kernel's); calls past
``max_tool_calls_per_turn`` answer ``AGENT_TOOL_CALLS_LIMIT`` without running.
A call still running when the run is cancelled is recorded as finished with
``AGENT_TOOL_CALL_CANCELLED`` (so the run record lists it), then the
cancellation goes on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from assay.kernel.errors import TOOL_NOT_FOUND
from assay.kernel.messages import ToolCall
from assay.kernel.tool_result import ToolResult

if TYPE_CHECKING:
    from assay.kernel.context import RunContext
    from assay.kernel.protocols import KernelAPI as Kernel

AGENT_TOOL_CALLS_LIMIT = "AGENT_TOOL_CALLS_LIMIT"
AGENT_TOOL_CALL_CANCELLED = "AGENT_TOOL_CALL_CANCELLED"

Started = Callable[[ToolCall], None]
Finished = Callable[[ToolCall, ToolResult], None]


async def run_tool_calls(
    kernel: Kernel,
    run: RunContext,
    calls: list[ToolCall],
    *,
    allowed: frozenset[str] | None,
    max_calls: int,
    started: Started,
    finished: Finished,
) -> list[ToolResult]:
    """Results of ``calls``, in their order."""
    results: list[ToolResult | None] = [None] * len(calls)

    async def one(index: int) -> None:
        call = calls[index]
        started(call)
        began = time.monotonic()
        try:
            result = await _call(kernel, run, call, allowed)
        except (
            asyncio.CancelledError
        ):  # the run was cancelled (Ctrl-C, SIGTERM) while the call ran: record it
            finished(
                call,
                ToolResult.fail(
                    AGENT_TOOL_CALL_CANCELLED,
                    f"{call.name} was cancelled while it ran: the run was cancelled",
                    "Ask again if the answer is still needed.",
                    tool=call.name,
                    elapsed_ms=(time.monotonic() - began) * 1000,
                ),
            )
            raise
        results[index] = result
        finished(call, result)

    batch: list[int] = []
    for index, call in enumerate(calls):
        if index >= max_calls:
            result = ToolResult.fail(
                AGENT_TOOL_CALLS_LIMIT,
                f"not run: this turn asked for {len(calls)} tool calls and at most {max_calls} run per turn",
                "Ask again for the calls you still need, fewer at a time.",
                tool=call.name,
            )
            results[index] = result
            started(call)
            finished(call, result)
            continue
        if _concurrent(kernel, call.name, allowed):
            batch.append(index)
            continue
        await _gather(batch, one)
        batch = []
        await one(index)
    await _gather(batch, one)
    return [r for r in results if r is not None]


async def _gather(indexes: list[int], one: Callable[[int], Awaitable[None]]) -> None:
    if len(indexes) == 1:
        await one(indexes[0])
    elif indexes:
        await asyncio.gather(*(one(i) for i in indexes))


def _concurrent(kernel: Kernel, name: str, allowed: frozenset[str] | None) -> bool:
    if allowed is not None and name not in allowed:
        return True  # answered at once, runs nothing
    try:
        tool = kernel.get_tool(name)
    except Exception:  # noqa: BLE001 - a tool that fails to load answers its error when called
        return False
    return tool is None or bool(getattr(tool, "concurrent", False))


async def _call(
    kernel: Kernel, run: RunContext, call: ToolCall, allowed: frozenset[str] | None
) -> ToolResult:
    if allowed is not None and call.name not in allowed:
        return ToolResult.fail(
            TOOL_NOT_FOUND,
            f"no tool named {call.name!r} in this run",
            f"Available tools: {', '.join(sorted(allowed)) or 'none'}.",
            tool=call.name,
        )
    return await kernel.acall_tool(call.name, call.arguments, run=run)
