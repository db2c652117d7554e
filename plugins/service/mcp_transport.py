"""Running the MCP server: stdio for desktop hosts, streamable HTTP behind a bearer token."""

from __future__ import annotations

import asyncio
from typing import Any

from .settings import ServiceSettings

MCP_PATH = "/mcp"


async def serve_stdio(kernel: Any, settings: ServiceSettings) -> None:
    """One MCP conversation on this process's stdin/stdout (the host starts one process per session)."""
    from mcp.server.stdio import stdio_server

    from .mcp_server import AssayMcpServer

    assay = AssayMcpServer(kernel, settings)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await assay.server.run(
                read_stream, write_stream, assay.server.create_initialization_options()
            )
    finally:
        assay.close()


def http_app(
    kernel: Any, settings: ServiceSettings, tokens: Any, host: str = "127.0.0.1"
) -> tuple[Any, Any]:
    """The ASGI app of MCP over streamable HTTP, every request needing a bearer token, and its server."""
    from .auth import BearerAuth
    from .mcp_server import AssayMcpServer
    from .server import SecurityHeaders

    assay = AssayMcpServer(kernel, settings, tokens)
    app = assay.server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        max_request_body_size=settings.max_body_bytes,
        session_idle_timeout=settings.mcp_conversation_idle_s,
    )
    return SecurityHeaders(BearerAuth(app, tokens)), assay


async def serve_http(
    kernel: Any, settings: ServiceSettings, tokens: Any, host: str, port: int
) -> None:
    import uvicorn

    from .header_deadline import with_header_timeout

    app, assay = http_app(kernel, settings, tokens, host)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        http=with_header_timeout(settings.header_timeout_s),
    )
    try:
        await uvicorn.Server(config).serve()
    finally:
        assay.close()


def run(coro: Any) -> None:
    asyncio.run(coro)
