"""Bearer-token authentication for the service's ASGI apps (MCP over HTTP and the HTTP API).

An ASGI wrapper, so it guards every route of the app it wraps (and any route
added later) the same way: no ``Authorization: Bearer`` header, a malformed
one, or a token the store does not know (or revoked) answers 401 with
``WWW-Authenticate: Bearer`` and a JSON body carrying a stable code. The
owner of an accepted token is put in the ASGI scope (``assay.owner``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from assay.kernel.errors import AssayError

SERVICE_AUTH_REQUIRED = "SERVICE_AUTH_REQUIRED"
OUTAGES = (
    "CATALOG_UNAVAILABLE",
    "BROKER_UNAVAILABLE",
)  # 503 with their code, as the API's other routes
SERVICE_AUTH_INVALID = "SERVICE_AUTH_INVALID"

ASGIApp = Callable[  # starlette.types.ASGIApp's shape
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[MutableMapping[str, Any]]],
        Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ],
    Awaitable[None],
]


def bearer_token(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else ""
    return None


async def send_json(
    send: Callable[[dict], Awaitable[None]],
    status: int,
    body: dict[str, Any],
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def unauthorized_body(token: str | None) -> dict[str, Any]:
    if token is None:
        return {
            "code": SERVICE_AUTH_REQUIRED,
            "message": "this endpoint needs a bearer token",
            "hint": "Send 'Authorization: Bearer TOKEN'; make one with `assay tokens create`.",
        }
    return {
        "code": SERVICE_AUTH_INVALID,
        "message": "the bearer token is not valid (unknown, malformed or revoked)",
        "hint": "Check the token, or make a new one with `assay tokens create`.",
    }


class BearerAuth:
    """Wrap ``app``: requests need an active token of ``tokens``; ``public`` paths are open."""

    def __init__(self, app: ASGIApp, tokens: Any, public: Iterable[str] = ()) -> None:
        self.app, self.tokens, self.public = app, tokens, frozenset(public)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in self.public:
            await self.app(scope, receive, send)
            return
        token = bearer_token(scope.get("headers") or [])
        try:  # the token store may be the shared catalog: read on a thread, never on the event loop
            info = await asyncio.to_thread(self.tokens.verify, token) if token else None
        except AssayError as exc:
            if exc.code not in OUTAGES:
                raise
            await send_json(
                send,
                503,
                {"code": exc.code, "message": exc.message, "hint": exc.hint},
                [(b"retry-after", b"5")],
            )
            return
        if info is None:
            await send_json(
                send,
                401,
                unauthorized_body(token),
                [(b"www-authenticate", b'Bearer realm="assay"')],
            )
            return
        scope["assay.owner"] = info.owner
        scope["assay.token_id"] = info.token_id
        await self.app(scope, receive, send)
