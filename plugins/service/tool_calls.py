"""``POST /tools/{name}``: one tool call in a run of its own.

:func:`call_in_own_run` is the endpoint's work: a new run owned by the
caller, the arguments checked for other owners' artifact ids, the call
(``kernel.acall_tool``: a sync tool runs in a worker thread), the run
closed, the envelope as JSON bytes. The catalog and ownership reads and
writes run in worker threads too, never on the event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from .access import ArtifactOutOfScope, check_arguments, owner_scope
from .quota import charge_to_owner


def visible_artifact(kernel: Any, tokens: Any, who: str, artifact_id: str) -> bool:
    record = kernel.evidence.catalog.get(artifact_id)
    return record is not None and tokens.owner_of(record.run_id) == who


async def call_in_own_run(
    kernel: Any, tokens: Any, who: str, name: str, arguments: dict[str, Any]
) -> bytes:
    """The ``ToolCallResult`` of calling ``name`` (a tool that exists) in a new run of ``who``, as JSON."""
    from assay import ToolResult

    run = kernel.new_run()
    run.artifact_scope = owner_scope(
        tokens, who
    )  # inputs: this owner's runs, checked by the tool too
    charge_to_owner(run, kernel, tokens, who)
    try:
        await asyncio.to_thread(tokens.own, run.run_id, who)
        try:
            await asyncio.to_thread(
                check_arguments, arguments, lambda a: visible_artifact(kernel, tokens, who, a)
            )
        except ArtifactOutOfScope as exc:
            result = ToolResult.from_error(exc, tool=name)
        else:
            result = await kernel.acall_tool(name, arguments, run=run)
    finally:
        await asyncio.to_thread(run.close)  # the sandbox session and what else the call opened
    # the envelope is JSON-ready already: sent as is, not validated again against the response model
    return orjson.dumps(
        {"run_id": run.run_id, "result": result.model_dump(mode="json", exclude_none=True)}
    )
