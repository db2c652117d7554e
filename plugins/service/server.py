"""``assay serve``: the API app behind its guards, run by uvicorn, drained on SIGTERM.

The outermost layer logs each request (``http_request``: method, path,
status, duration, client, token id); the next adds the security headers (no framing by other sites,
no content sniffing) to every answer; the next limits the request body (413 past
``max_body_bytes``, by ``Content-Length`` and while reading), then
:class:`~.web_session.SessionAuth` lets the page's session cookie in (and answers ``/session``),
then :class:`~.auth.BearerAuth` checks the token, then the FastAPI app answers. On SIGTERM
uvicorn stops accepting connections and waits up to ``drain_s`` for open
ones (an SSE stream ends with its run); the app's shutdown then gives running
runs what is left of ``drain_s``, cancels the rest (their SQL is cancelled,
their sandbox closed) and closes the kernel, which removes the sandbox
containers.
"""

from __future__ import annotations

import time
from typing import Any

from assay.kernel.log import get_logger

from .auth import BearerAuth, send_json
from .settings import ServiceSettings

SERVICE_BODY_TOO_LARGE = "SERVICE_BODY_TOO_LARGE"
access = get_logger("assay.service.access")


class HttpLayer:
    """An ASGI layer around ``app`` that acts on HTTP requests (:meth:`http`) and passes anything else on."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise NotImplementedError


class BodyLimit(HttpLayer):
    def __init__(self, app: Any, max_bytes: int) -> None:
        super().__init__(app)
        self.max_bytes = max_bytes

    async def http(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        for name, value in scope.get("headers") or []:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._too_large(send)
                return
        seen = 0
        started = False

        async def limited_receive() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracking_send(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._too_large(send)

    async def _too_large(self, send: Any) -> None:
        await send_json(
            send,
            413,
            {
                "code": SERVICE_BODY_TOO_LARGE,
                "message": f"the request body is over {self.max_bytes} bytes",
                "hint": "Send less (ASSAY_SERVICE_MAX_BODY_BYTES sets the limit).",
            },
        )


class _TooLarge(Exception):
    pass


# Sent with every HTTP answer: no site may frame the page (clickjacking), and no answer is sniffed
# into another content type. The page shows reports in a sandboxed srcdoc frame, which these allow.
SECURITY_HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class SecurityHeaders(HttpLayer):
    """Wrap ``app``: add :data:`SECURITY_HEADERS` to every HTTP response start it sends."""

    async def http(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        async def with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers") or []}
                extra = [(name, value) for name, value in SECURITY_HEADERS if name not in names]
                message = {**message, "headers": [*(message.get("headers") or []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)


class AccessLog(HttpLayer):
    """Wrap ``app``: one structured ``http_request`` event per HTTP request (method, path, status,
    duration, client, token id; never the token itself or the query string). Refused tokens (401) are
    logged at WARNING, every other request at INFO."""

    async def http(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        started = time.perf_counter()
        status = 0

        async def watching(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watching)
        finally:
            client = scope.get("client") or ("", 0)
            fields = {
                "method": scope.get("method"),
                "path": scope.get("path"),
                "status": status or 500,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                "client": client[0],
                "token_id": scope.get("assay.token_id", ""),
            }
            (access.warning if status == 401 else access.info)("http_request", **fields)


def build(kernel: Any, settings: ServiceSettings, tokens: Any) -> tuple[Any, Any]:
    """(the guarded ASGI app, the FastAPI app inside it)."""
    from .api import PUBLIC, create_app
    from .web_routes import add_web_routes
    from .web_session import SessionAuth, SessionStore

    api = create_app(kernel, settings, tokens)
    add_web_routes(api, kernel, tokens)
    guarded = SessionAuth(
        BearerAuth(api, tokens, public=PUBLIC), tokens, SessionStore(settings.session_ttl_s)
    )
    return AccessLog(SecurityHeaders(BodyLimit(guarded, settings.max_body_bytes))), api


def serve(kernel: Any, settings: ServiceSettings, tokens: Any, host: str, port: int) -> None:
    import uvicorn

    app, _ = build(kernel, settings, tokens)
    from .header_deadline import with_header_timeout

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=max(1, int(settings.drain_s)),
        http=with_header_timeout(settings.header_timeout_s),
    )
    server = uvicorn.Server(config)
    import sys

    from .cli import url_of

    print(
        f"assay serve: {url_of(host, port)} (API: /openapi.json; bearer token required)",
        file=sys.stderr,
        flush=True,
    )
    server.run()
