"""`assay mcp` driven by the official MCP client of the same SDK, over stdio and streamable HTTP."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

pytest.importorskip("mcp")
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.service.conftest import free_port, make_token, stop, wait_port

pytestmark = pytest.mark.timeout(180)


def stdio_params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "assay.kernel.cli", "mcp"], env=env
    )


async def exercise(client) -> dict:
    """The session every transport must serve the same way."""
    tools = await client.list_tools()
    names = {t.name for t in tools.tools}
    sql = next(t for t in tools.tools if t.name == "sql_query")
    result = await client.call_tool(
        "sql_query", {"sql": "SELECT id, region, amount FROM sales ORDER BY id"}
    )
    assert not result.is_error, result.content
    artifact_id = result.structured_content["artifacts"][0]["artifact_id"]
    return {
        "names": names,
        "sql_schema": sql.input_schema,
        "result": result,
        "artifact_id": artifact_id,
    }


async def test_stdio_lists_every_tool_with_its_schema_and_queries_the_sample_db(service_env):
    async with Client(stdio_params(service_env)) as client:
        seen = await exercise(client)
    from assay import Kernel

    kernel = Kernel()
    assert seen["names"] == set(kernel.tools)
    expected = next(d for d in kernel.tool_definitions("mcp") if d["name"] == "sql_query")
    assert seen["sql_schema"] == expected["inputSchema"]
    assert (
        "120" in seen["result"].content[0].text
        or seen["result"].structured_content["data"]["row_count"] == 120
    )


async def test_stdio_artifact_resource_reads_back_verified_bounded_rows(service_env):
    async with Client(stdio_params(service_env)) as client:
        seen = await exercise(client)
        aid = seen["artifact_id"]
        listed = await client.list_resources()
        uris = {str(r.uri) for r in listed.resources}
        assert f"artifact://{aid}" in uris and "assay://run/manifest" in uris
        templates = await client.list_resource_templates()
        assert templates.resource_templates[0].uri_template.startswith("artifact://{artifact_id}")
        first = await client.read_resource(f"artifact://{aid}")
        chosen = await client.read_resource(f"artifact://{aid}?rows=100:103")
        manifest = await client.read_resource("assay://run/manifest")
    import json

    body = json.loads(first.contents[0].text)
    assert body["verified"] is True and body["total_rows"] == 120 and len(body["rows"]) == 50
    assert f"artifact://{aid}?rows=50:100" in body["more"]
    rows = json.loads(chosen.contents[0].text)["rows"]
    assert rows == [[100, "north", 300], [101, "south", 303], [102, "east", 306]]
    assert json.loads(manifest.contents[0].text)["artifacts"][0]["artifact_id"] == aid


async def test_stdio_bad_arguments_are_an_error_result_with_code_and_hint(service_env):
    async with Client(stdio_params(service_env)) as client:
        bad = await client.call_tool("sql_query", {"sql": 42, "nope": True})
        write = await client.call_tool("sql_query", {"sql": "DELETE FROM sales"})
        missing = await client.call_tool("no_such_tool", {})
    assert bad.is_error and "TOOL_ARGUMENTS_INVALID" in bad.content[0].text
    assert bad.structured_content["error_code"] == "TOOL_ARGUMENTS_INVALID"
    assert write.is_error and write.structured_content["error_code"].startswith("SQL_")
    assert "hint:" in write.content[0].text
    assert missing.is_error and missing.structured_content["error_code"] == "TOOL_NOT_FOUND"


async def test_stdio_an_artifact_of_another_run_is_not_found(service_env):
    async with Client(stdio_params(service_env)) as first:
        other = (await exercise(first))["artifact_id"]
    async with Client(stdio_params(service_env)) as second:
        read = await second.call_tool("read_artifact_result", {"artifact_id": other})
        from mcp.shared.exceptions import MCPError

        with pytest.raises(MCPError) as err:
            await second.read_resource(f"artifact://{other}")
    assert read.is_error and read.structured_content["error_code"] == "SERVICE_ARTIFACT_NOT_FOUND"
    assert "SERVICE_ARTIFACT_NOT_FOUND" in str(err.value)


@pytest.fixture
def mcp_http_with(service_env):
    """Starts `assay mcp --http` with extra ASSAY_SERVICE_* settings; gives its URL and a token."""
    procs = []

    def start(**settings):
        env = dict(
            service_env, **{f"ASSAY_SERVICE_{k.upper()}": str(v) for k, v in settings.items()}
        )
        token = make_token(env)
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "assay.kernel.cli", "mcp", "--http", f"127.0.0.1:{port}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        wait_port(port, proc)
        return f"http://127.0.0.1:{port}/mcp", token

    yield start
    for proc in procs:
        stop(proc)


@pytest.fixture
def mcp_http(mcp_http_with):
    return mcp_http_with()


def http_transport(url: str, token: str | None, conversation: str | None = None):
    """A client in the SDK's default (session-less) mode, naming its conversation (Assay-Conversation) or not."""
    import httpx2

    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    if conversation is not None:
        headers["Assay-Conversation"] = conversation
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60))


async def test_http_on_an_ipv6_address_serves_a_session_and_prints_its_url(service_env):
    token = make_token(service_env)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.kernel.cli", "mcp", "--http", f"[::1]:{port}"],
        env=service_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_port(port, proc, host="::1")
        async with Client(http_transport(f"http://[::1]:{port}/mcp", token)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
    finally:
        stop(proc)
    assert "sql_query" in names
    assert f"http://[::1]:{port}/mcp" in proc.stderr.read()


async def test_http_with_a_token_serves_a_named_conversation(mcp_http):
    url, token = mcp_http
    async with Client(http_transport(url, token, "main")) as client:
        seen = await exercise(client)
        read = await client.read_resource(f"artifact://{seen['artifact_id']}?rows=0:2")
    import json

    assert "sql_query" in seen["names"]
    assert json.loads(read.contents[0].text)["rows"] == [[0, "north", 0], [1, "south", 3]]


@pytest.mark.parametrize(
    "header",
    [None, "Bearer asy_000000000000_wrongwrongwrongwrongwrong", "Basic abc", "Bearer not-a-token"],
)
def test_http_without_or_with_a_wrong_token_is_401(mcp_http, header):
    url, _ = mcp_http
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if header is not None:
        headers["Authorization"] = header
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx.post(url, json=body, headers=headers, timeout=30)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["code"] in ("SERVICE_AUTH_REQUIRED", "SERVICE_AUTH_INVALID")


async def test_http_client_without_a_token_cannot_connect(mcp_http):
    url, _ = mcp_http
    with pytest.raises(BaseException):  # noqa: B017 - the SDK raises its own transport error for a 401
        async with Client(http_transport(url, None)) as client:
            await client.list_tools()


# --- conversations: what one MCP client's requests share, and nothing more ----------------------------------------


async def run_code(url: str, token: str, conversation: str | None, code: str):
    async with Client(http_transport(url, token, conversation)) as client:
        return await client.call_tool("code_interpreter", {"code": code})


def reported(result):
    """The REPORT_RESULT a code_interpreter call assigned."""
    return result.structured_content["data"]["result"]


async def test_http_sessionless_clients_of_one_token_do_not_share_a_variable(mcp_http):
    url, token = mcp_http
    first = await run_code(url, token, None, "secret = 41\nprint('set')")
    second = await run_code(url, token, None, "print(secret)")
    assert not first.is_error, first.content
    assert second.is_error and "NameError" in second.content[0].text, second.content


async def test_http_a_sessionless_call_naming_no_conversation_has_a_run_closed_when_it_ends(
    mcp_http,
):
    url, token = mcp_http
    workspace = reported(await run_code(url, token, None, "import os\nREPORT_RESULT = os.getcwd()"))
    assert os.path.isdir(os.path.dirname(workspace)) and not os.path.exists(workspace)


async def test_http_sessionless_clients_of_one_token_do_not_see_each_others_artifacts(mcp_http):
    url, token = mcp_http
    async with Client(http_transport(url, token, None)) as first:
        aid = (await exercise(first))["artifact_id"]
    from mcp.shared.exceptions import MCPError

    async with Client(http_transport(url, token, None)) as second:
        listed = {str(r.uri) for r in (await second.list_resources()).resources}
        with pytest.raises(MCPError) as err:
            await second.read_resource(f"artifact://{aid}")
        read = await second.call_tool("read_artifact_result", {"artifact_id": aid})
    assert f"artifact://{aid}" not in listed
    assert "SERVICE_ARTIFACT_NOT_FOUND" in str(err.value)
    assert read.is_error and read.structured_content["error_code"] == "SERVICE_ARTIFACT_NOT_FOUND"


async def test_http_clients_naming_different_conversations_do_not_share_a_variable(mcp_http):
    url, token = mcp_http
    await run_code(url, token, "alpha", "secret = 41")
    other = await run_code(url, token, "beta", "print(secret)")
    assert other.is_error and "NameError" in other.content[0].text, other.content


async def test_http_a_named_conversation_keeps_its_variables_and_artifacts_across_clients(mcp_http):
    url, token = mcp_http
    await run_code(url, token, "alpha", "secret = 41")
    await run_code(
        url, token, "beta", "secret = 7"
    )  # another conversation of the same token, in between
    async with Client(http_transport(url, token, "alpha")) as client:
        again = await client.call_tool("code_interpreter", {"code": "REPORT_RESULT = secret + 1"})
        aid = (await exercise(client))["artifact_id"]
    async with Client(http_transport(url, token, "alpha")) as later:
        listed = {str(r.uri) for r in (await later.list_resources()).resources}
        body = (await later.read_resource(f"artifact://{aid}?rows=0:1")).contents[0].text
    assert not again.is_error and reported(again) == 42, again.content
    assert f"artifact://{aid}" in listed and '"rows": [[0, "north", 0]]' in body


async def test_http_the_oldest_idle_conversation_past_the_cap_is_closed_and_says_so(mcp_http_with):
    url, token = mcp_http_with(mcp_conversations_per_token=2)
    workspace = reported(
        await run_code(url, token, "one", "import os\nmine = 'one'\nREPORT_RESULT = os.getcwd()")
    )
    for name in ("two", "three"):
        await run_code(url, token, name, f"mine = {name!r}")
    gone = not os.path.exists(
        workspace
    )  # the local sandbox session's directory: removed with its session
    closed = await run_code(url, token, "one", "REPORT_RESULT = mine")
    kept = await run_code(url, token, "three", "REPORT_RESULT = mine")
    afresh = await run_code(url, token, "one", "REPORT_RESULT = 'mine' in dir()")
    assert os.path.isdir(os.path.dirname(workspace)) and gone
    assert (
        closed.is_error
        and closed.structured_content["error_code"] == "SERVICE_MCP_CONVERSATION_CLOSED"
    )
    assert "2 conversations" in closed.content[0].text
    assert not kept.is_error and reported(kept) == "three"
    assert not afresh.is_error and reported(afresh) is False


async def test_http_a_new_conversation_is_refused_while_every_one_of_the_token_is_busy(
    mcp_http_with,
):
    import asyncio

    url, token = mcp_http_with(mcp_conversations_per_token=1)
    slow = asyncio.create_task(
        run_code(url, token, "busy", "import time\ntime.sleep(4)\nREPORT_RESULT = 'slept'")
    )
    await asyncio.sleep(2)
    refused = await run_code(url, token, "another", "REPORT_RESULT = 1")
    assert (
        refused.is_error
        and refused.structured_content["error_code"] == "SERVICE_MCP_CONVERSATION_LIMIT"
    )
    assert reported(await slow) == "slept"


async def test_http_a_handshake_client_keeps_its_session_as_its_conversation(mcp_http):
    url, token = mcp_http
    async with (
        Client(http_transport(url, token), mode="legacy") as first,
        Client(http_transport(url, token), mode="legacy") as second,
    ):
        await first.call_tool("code_interpreter", {"code": "secret = 41"})
        mine = await first.call_tool("code_interpreter", {"code": "REPORT_RESULT = secret + 1"})
        other = await second.call_tool(
            "code_interpreter", {"code": "REPORT_RESULT = 'secret' in dir()"}
        )
    assert reported(mine) == 42 and reported(other) is False


async def test_http_an_idle_conversation_is_closed_after_the_idle_time(mcp_http_with):
    import asyncio

    url, token = mcp_http_with(mcp_conversation_idle_s=1)
    await run_code(url, token, "sleepy", "mine = 1")
    await run_code(url, token, "listing", "mine = 2")
    await asyncio.sleep(3)
    closed = await run_code(url, token, "sleepy", "print(mine)")
    from mcp.shared.exceptions import MCPError

    async with Client(http_transport(url, token, "listing")) as client:
        with pytest.raises(MCPError) as listed:
            await client.list_resources()
    assert (
        closed.is_error
        and closed.structured_content["error_code"] == "SERVICE_MCP_CONVERSATION_CLOSED"
    )
    assert "idle" in closed.content[0].text
    assert (
        "SERVICE_MCP_CONVERSATION_CLOSED" in str(listed.value) and listed.value.error.data["hint"]
    )


async def test_http_a_malformed_conversation_id_is_refused(mcp_http):
    url, token = mcp_http
    refused = await run_code(url, token, "x" * 200, "print(1)")
    assert (
        refused.is_error
        and refused.structured_content["error_code"] == "SERVICE_MCP_CONVERSATION_INVALID"
    )


async def test_stdio_resources_list_is_capped_newest_first_and_says_how_many_were_left_out(
    service_env,
):
    env = dict(service_env, ASSAY_SERVICE_MCP_RESOURCES_LISTED="2")
    async with Client(stdio_params(env)) as client:
        made = []
        for n in range(4):
            result = await client.call_tool(
                "sql_query", {"sql": f"SELECT id FROM sales WHERE id < {n + 1}"}
            )
            made.append(result.structured_content["artifacts"][0]["artifact_id"])
        listing = await client.list_resources()
    listed = listing.resources
    assert listing.meta["assay/artifacts"] == 4 and listing.meta["assay/left_out"] == 2
    artifacts = [str(r.uri) for r in listed if str(r.uri).startswith("artifact://")]
    manifest = next(r for r in listed if str(r.uri) == "assay://run/manifest")
    assert artifacts == [f"artifact://{made[3]}", f"artifact://{made[2]}"]
    assert "4 artifacts" in manifest.description and "2 older" in manifest.description
