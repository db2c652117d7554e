"""`assay mcp` driven by the official MCP client of the same SDK, over stdio and streamable HTTP."""

from __future__ import annotations

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
    return StdioServerParameters(command=sys.executable, args=["-m", "assay.kernel.cli", "mcp"], env=env)


async def exercise(client) -> dict:
    """The session every transport must serve the same way."""
    tools = await client.list_tools()
    names = {t.name for t in tools.tools}
    sql = next(t for t in tools.tools if t.name == "sql_query")
    result = await client.call_tool("sql_query", {"sql": "SELECT id, region, amount FROM sales ORDER BY id"})
    assert not result.is_error, result.content
    artifact_id = result.structured_content["artifacts"][0]["artifact_id"]
    return {"names": names, "sql_schema": sql.input_schema, "result": result, "artifact_id": artifact_id}


async def test_stdio_lists_every_tool_with_its_schema_and_queries_the_sample_db(service_env):
    async with Client(stdio_params(service_env)) as client:
        seen = await exercise(client)
    from assay import Kernel

    kernel = Kernel()
    assert seen["names"] == set(kernel.tools)
    expected = next(d for d in kernel.tool_definitions("mcp") if d["name"] == "sql_query")
    assert seen["sql_schema"] == expected["inputSchema"]
    assert "120" in seen["result"].content[0].text or seen["result"].structured_content["data"]["row_count"] == 120


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
def mcp_http(service_env):
    token = make_token(service_env)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "assay.kernel.cli", "mcp", "--http", f"127.0.0.1:{port}"],
                            env=service_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", token
    finally:
        stop(proc)


def http_transport(url: str, token: str | None):
    import httpx2

    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60))


async def test_http_on_an_ipv6_address_serves_a_session_and_prints_its_url(service_env):
    token = make_token(service_env)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "assay.kernel.cli", "mcp", "--http", f"[::1]:{port}"],
                            env=service_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_port(port, proc, host="::1")
        async with Client(http_transport(f"http://[::1]:{port}/mcp", token)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
    finally:
        stop(proc)
    assert "sql_query" in names
    assert f"http://[::1]:{port}/mcp" in proc.stderr.read()


async def test_http_with_a_token_serves_the_same_session(mcp_http):
    url, token = mcp_http
    async with Client(http_transport(url, token)) as client:
        seen = await exercise(client)
        read = await client.read_resource(f"artifact://{seen['artifact_id']}?rows=0:2")
    import json

    assert "sql_query" in seen["names"]
    assert json.loads(read.contents[0].text)["rows"] == [[0, "north", 0], [1, "south", 3]]


@pytest.mark.parametrize("header", [None, "Bearer asy_000000000000_wrongwrongwrongwrongwrong", "Basic abc",
                                    "Bearer not-a-token"])
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
