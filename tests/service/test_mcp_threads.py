"""An MCP conversation closed and opened again under the same id continues its thread: its variables are
gone, its earlier evidence is still its own (read back verified); another conversation's is not."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from tests.service.test_mcp import exercise, http_transport, mcp_http_with, run_code  # noqa: E402,F401

pytestmark = pytest.mark.timeout(180)


async def test_http_a_conversation_reopened_after_idle_still_reads_its_earlier_artifact(
    mcp_http_with,  # noqa: F811
):
    url, token = mcp_http_with(mcp_conversation_idle_s=1)
    async with Client(http_transport(url, token, "sleepy")) as client:
        aid = (await exercise(client))["artifact_id"]
    async with Client(http_transport(url, token, "other")) as client:
        theirs = (await exercise(client))["artifact_id"]
    await asyncio.sleep(3)
    closed = await run_code(
        url, token, "sleepy", "print(1)"
    )  # told it was closed; the next request reopens it
    async with Client(http_transport(url, token, "sleepy")) as client:
        mine = await client.call_tool("read_artifact_result", {"artifact_id": aid})
        other = await client.call_tool("read_artifact_result", {"artifact_id": theirs})
    assert (
        closed.is_error
        and closed.structured_content["error_code"] == "SERVICE_MCP_CONVERSATION_CLOSED"
    )
    assert not mine.is_error, mine.content
    assert other.is_error and other.structured_content["error_code"] == "SERVICE_ARTIFACT_NOT_FOUND"
