"""Sign-in once for the page: a bearer token exchanged for a session cookie.

``POST /session`` with ``{"token": "..."}`` checks the token and answers a
``Set-Cookie`` of a new random session id: ``HttpOnly`` (no script reads it),
``SameSite=Strict`` (no other site's page sends it), ``Path=/``, ``Max-Age``
of the session's life, and ``Secure`` when the request came over TLS. The
server keeps only a hash of the id, with the token it stands for and its
expiry (``session_ttl_s``); a session ends at its expiry, at ``DELETE
/session`` (logout), when its token is revoked, and when the server stops
(sessions live in the server's memory: a restart signs everyone out).
``GET /session`` says whether the request is signed in, and as whom.

:class:`SessionAuth` wraps :class:`~.auth.BearerAuth`: a request with an
``Authorization`` header is the bearer's as before; one without, carrying a
live session cookie, is let through as the session token's owner. Requests
authenticated by the cookie that change state (any method but GET, HEAD,
OPTIONS) must come from the page itself: their ``Origin`` (or, without one,
``Sec-Fetch-Site: same-origin``) must name this server, else 403
``SERVICE_CSRF_REFUSED``. Bearer requests carry no ambient credential and
are not checked.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .auth import SERVICE_AUTH_INVALID, send_json

SERVICE_CSRF_REFUSED = "SERVICE_CSRF_REFUSED"
COOKIE = "assay_session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MAX_SESSIONS = 10_000


@dataclass(frozen=True)
class Session:
    owner: str
    token_id: str
    expires_at: float


class SessionStore:
    """Live sessions by the SHA-256 of their id (the id itself is only in the browser's cookie)."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(session_id: str) -> str:
        return hashlib.sha256(session_id.encode()).hexdigest()

    def open(self, owner: str, token_id: str, now: float | None = None) -> tuple[str, Session]:
        now = time.time() if now is None else now
        session_id = secrets.token_urlsafe(32)
        session = Session(owner=owner, token_id=token_id, expires_at=now + self.ttl_s)
        with self._lock:
            self._sessions = {k: s for k, s in self._sessions.items() if s.expires_at > now}
            if len(self._sessions) >= MAX_SESSIONS:  # the oldest go first
                oldest = sorted(self._sessions, key=lambda k: self._sessions[k].expires_at)
                for key in oldest[: len(self._sessions) - MAX_SESSIONS + 1]:
                    del self._sessions[key]
            self._sessions[self._key(session_id)] = session
        return session_id, session

    def get(self, session_id: str, now: float | None = None) -> Session | None:
        now = time.time() if now is None else now
        with self._lock:
            session = self._sessions.get(self._key(session_id))
            if session is not None and session.expires_at <= now:
                del self._sessions[self._key(session_id)]
                return None
            return session

    def close(self, session_id: str) -> bool:
        with self._lock:
            return self._sessions.pop(self._key(session_id), None) is not None


def cookie_of(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name == b"cookie":
            for part in value.decode("latin-1").split(";"):
                key, _, val = part.strip().partition("=")
                if key == COOKIE and val:
                    return val
    return None


def header(headers: list[tuple[bytes, bytes]], wanted: bytes) -> str | None:
    for name, value in headers:
        if name == wanted:
            return value.decode("latin-1")
    return None


def same_origin(scope: dict[str, Any]) -> bool:
    """Whether the request says it comes from a page of this server (``Origin``, else ``Sec-Fetch-Site``)."""
    headers = scope.get("headers") or []
    origin = header(headers, b"origin")
    if origin is None:
        return header(headers, b"sec-fetch-site") == "same-origin"
    parts = urlsplit(origin)
    host = header(headers, b"host") or ""
    return (
        parts.scheme in ("http", "https")
        and parts.netloc == host
        and parts.scheme == scope.get("scheme", "http")
    )


class SessionAuth:
    """Wrap ``bearer`` (a :class:`~.auth.BearerAuth`): the ``/session`` routes, and cookie sign-in."""

    def __init__(self, bearer: Any, tokens: Any, sessions: SessionStore) -> None:
        self.bearer, self.tokens, self.sessions = bearer, tokens, sessions

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.bearer(scope, receive, send)
            return
        headers = scope.get("headers") or []
        if scope.get("path") == "/session":
            await self._session_route(scope, receive, send)
            return
        if scope.get("path", "").startswith(
            "/static/"
        ):  # the page's own files: open, like the page
            await self.bearer.app(scope, receive, send)
            return
        session_id = cookie_of(headers)
        if header(headers, b"authorization") is not None or session_id is None:
            await self.bearer(scope, receive, send)
            return
        session = await self._live(session_id)
        if session is None:  # an ended session: answered as a request without credentials
            await self.bearer(scope, receive, send)
            return
        if scope.get("method") not in SAFE_METHODS and not same_origin(scope):
            await _csrf_refused(send)
            return
        scope["assay.owner"], scope["assay.token_id"], scope["assay.session"] = (
            session.owner,
            session.token_id,
            True,
        )
        await self.bearer.app(scope, receive, send)  # authenticated: past the bearer check

    async def _live(self, session_id: str) -> Session | None:
        session = self.sessions.get(session_id)
        if session is None:
            return None
        if not await asyncio.to_thread(
            self.tokens.active, session.token_id
        ):  # its token was revoked
            self.sessions.close(session_id)
            return None
        return session

    async def _session_route(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        method = scope.get("method")
        headers = scope.get("headers") or []
        session_id = cookie_of(headers)
        if method == "GET":
            session = await self._live(session_id) if session_id else None
            # 200 either way: the page asks on every load, and a signed-out visitor is no error
            await send_json(
                send,
                200,
                {
                    "signed_in": session is not None,
                    "owner": session.owner if session else None,
                    "expires_at": session.expires_at if session else None,
                },
                [(b"cache-control", b"no-store")],
            )
            return
        if method not in ("POST", "DELETE"):
            await send_json(
                send,
                405,
                {
                    "code": "SERVICE_METHOD_NOT_ALLOWED",
                    "message": f"{method} /session",
                    "hint": "GET, POST or DELETE.",
                },
                [(b"allow", b"GET, POST, DELETE")],
            )
            return
        if not same_origin(scope):  # signing in or out from another site's page (login CSRF)
            await _csrf_refused(send)
            return
        if method == "DELETE":
            if session_id:
                self.sessions.close(session_id)
            await send_json(
                send, 200, {"signed_out": True}, [(b"set-cookie", self._cookie(scope, "", 0))]
            )
            return
        token = await _token_in_body(receive)
        info = await asyncio.to_thread(self.tokens.verify, token) if token else None
        if info is None:
            await send_json(
                send,
                401,
                {
                    "code": SERVICE_AUTH_INVALID,
                    "message": "the token is not valid (unknown, malformed or revoked)",
                    "hint": "Make one with `assay tokens create`.",
                },
            )
            return
        new_id, session = self.sessions.open(info.owner, info.token_id)
        await send_json(
            send,
            200,
            {"owner": session.owner, "expires_at": session.expires_at},
            [
                (b"set-cookie", self._cookie(scope, new_id, int(self.sessions.ttl_s))),
                (b"cache-control", b"no-store"),
            ],
        )

    @staticmethod
    def _cookie(scope: dict[str, Any], value: str, max_age: int) -> bytes:
        secure = "; Secure" if scope.get("scheme") == "https" else ""
        return f"{COOKIE}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}".encode()


async def _token_in_body(receive: Any) -> str | None:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > 8192:
            return None
        if not message.get("more_body"):
            break
    try:
        token = json.loads(body or b"{}").get("token")
    except (ValueError, AttributeError):
        return None
    return token if isinstance(token, str) and token else None


async def _csrf_refused(send: Any) -> None:
    await send_json(
        send,
        403,
        {
            "code": SERVICE_CSRF_REFUSED,
            "message": "a request signed in by cookie that "
            "changes state must come from this server's page (its Origin)",
            "hint": "Send it from the page, or use 'Authorization: Bearer TOKEN'.",
        },
    )
