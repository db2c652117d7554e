"""MCP conversations: which requests share one assay run, and how many runs a token keeps open.

A conversation is one assay run (its run id, sandbox session and evidence
scope). Which requests belong to one is decided from what the protocol lets
the server know:

* over stdio the process serves one client: the process is the conversation;
* a handshake-era HTTP client (``initialize``) has the ``Mcp-Session-Id`` the
  handshake issued: that session is the conversation, ended by its DELETE or
  the SDK's idle timeout;
* a 2026-era (session-less) HTTP client sends nothing that tells two clients
  apart (no handshake, no session id; the ``_meta`` client info is the same
  for every client of one SDK), so it names its conversation itself with the
  ``Assay-Conversation`` header; the id is scoped to the bearer token;
* a session-less request without that header is a conversation of its own: a
  run opened for that tool call and closed when it ends.

What is kept is bounded: a token has at most ``mcp_conversations_per_token``
conversations open (a new one closes the one idle longest; when all are busy
it is refused), and a conversation idle for ``mcp_conversation_idle_s`` is
closed. Closing closes the run and its sandbox session. The next request of a
closed conversation is told so (``SERVICE_MCP_CONVERSATION_CLOSED``) instead
of silently finding its variables gone; the one after starts a new run that
continues the closed one's thread (docs/agent.md, "Threads"): its variables
are gone, but the earlier runs' artifacts stay readable and listed, as a
follow-up question's are.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio

from assay.kernel.errors import AssayError
from assay.kernel.log import get_logger

from .access import ArtifactOutOfScope
from .quota import charge_to_owner
from .settings import ServiceSettings

log = get_logger("assay.service.mcp")

CONVERSATION_HEADER = "assay-conversation"
CONVERSATION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
TOMBSTONES = (
    4096  # closed conversations remembered, to tell their next request; the oldest are forgotten
)

SERVICE_MCP_CONVERSATION_CLOSED = "SERVICE_MCP_CONVERSATION_CLOSED"
SERVICE_MCP_CONVERSATION_LIMIT = "SERVICE_MCP_CONVERSATION_LIMIT"
SERVICE_MCP_CONVERSATION_INVALID = "SERVICE_MCP_CONVERSATION_INVALID"
SERVICE_SESSION_NOT_FOUND = "SERVICE_SESSION_NOT_FOUND"


class ConversationClosed(AssayError):
    code = SERVICE_MCP_CONVERSATION_CLOSED

    def __init__(self, label: str, why: str) -> None:
        super().__init__(
            SERVICE_MCP_CONVERSATION_CLOSED,
            f"conversation {label} was closed {why}: its variables, sandbox session and resources "
            "are gone, and this request was not carried out",
            "Send the request again: it starts a new conversation (a new run) under the same id.",
        )


class ConversationLimit(AssayError):
    code = SERVICE_MCP_CONVERSATION_LIMIT

    def __init__(self, cap: int) -> None:
        super().__init__(
            SERVICE_MCP_CONVERSATION_LIMIT,
            f"this token has {cap} MCP conversations open and every one has a request going",
            "Wait for a request to end and send it again, or raise "
            "ASSAY_SERVICE_MCP_CONVERSATIONS_PER_TOKEN on the server.",
        )


class ConversationInvalid(AssayError):
    code = SERVICE_MCP_CONVERSATION_INVALID

    def __init__(self) -> None:
        super().__init__(
            SERVICE_MCP_CONVERSATION_INVALID,
            "the Assay-Conversation header is not a conversation id",
            "Send 1 to 128 characters of A-Z a-z 0-9 . _ : - starting with a letter or digit "
            "(a UUID will do), the same on every request of one conversation.",
        )


class SessionNotFound(AssayError):
    code = SERVICE_SESSION_NOT_FOUND

    def __init__(self) -> None:
        super().__init__(
            SERVICE_SESSION_NOT_FOUND,
            "no such MCP session for this token",
            "Start a new MCP session.",
        )


class NoConversation(ArtifactOutOfScope):
    """A resource read of a session-less request naming no conversation: it has no run, so nothing to read."""

    def __init__(self) -> None:
        AssayError.__init__(
            self,
            self.code,
            "this request names no conversation, so it has no run and no artifacts",
            "Send the header Assay-Conversation: ID on every request of one conversation (or "
            "use a handshake session) to read what its tool calls made.",
        )


@dataclass(frozen=True)
class Caller:
    """Who sent a request and which conversation it belongs to (``key`` None: a conversation of its own)."""

    key: str | None
    label: str
    owner: str
    token: str
    bounded: bool = True  # stdio's one conversation is neither capped nor closed when idle
    on_end: Any = None  # the SDK session's exit stack (handshake-era HTTP)


def identify(ctx: Any, over_http: bool) -> Caller:
    """The conversation of one request, per transport and protocol era (see the module docstring).

    Over HTTP a request the transport gave no HTTP request for is a
    conversation of its own, never the process-wide one of stdio.
    """
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None) or {}
    owner = scope.get("assay.owner") or "local"
    token = scope.get("assay.token_id")
    connection = getattr(ctx.session, "_connection", None)
    session_id = getattr(connection, "session_id", None)
    if session_id:
        return Caller(
            f"mcp-session:{session_id}",
            "of this MCP session",
            owner,
            token or "local",
            on_end=getattr(connection, "exit_stack", None),
        )
    if not over_http:
        return Caller("stdio", "of this process", owner, "stdio", bounded=False)
    named = request.headers.get(CONVERSATION_HEADER) if request is not None else None
    if named is None:
        return Caller(None, "of this request", owner, token or "local")
    if not CONVERSATION_ID.fullmatch(named):
        raise ConversationInvalid()
    return Caller(f"token:{token}:conversation:{named}", repr(named), owner, token or "local")


class Conversation:
    """One conversation: its own assay run (sandbox session and evidence scope)."""

    def __init__(
        self,
        kernel: Any,
        caller: Caller,
        key: str,
        tokens: Any = None,
        thread: tuple[str, ...] = (),
    ) -> None:
        self.kernel, self.key, self.owner, self.token = kernel, key, caller.owner, caller.token
        self.bounded, self.once = caller.bounded, caller.key is None
        self.run = kernel.new_run()
        self.run.continue_thread(
            thread
        )  # the runs of this conversation closed before: their evidence is its own too
        if tokens is not None:
            tokens.own(self.run.run_id, caller.owner)
            charge_to_owner(self.run, kernel, tokens, caller.owner)  # the owner's evidence quota
        self.busy = 0
        self.ending = False
        self.last_used = time.monotonic()
        log.info(
            "mcp_conversation_started", run_id=self.run.run_id, owner=self.owner, once=self.once
        )

    def visible(self, artifact_id: str) -> bool:
        record = self.kernel.evidence.catalog.get(artifact_id)
        return record is not None and record.run_id in self.run.evidence_runs()

    def close(self) -> None:
        log.info("mcp_conversation_closed", run_id=self.run.run_id)
        self.run.close()


class Conversations:
    """The open conversations of one server, bounded per token and in idle time."""

    def __init__(self, kernel: Any, settings: ServiceSettings, tokens: Any = None) -> None:
        """``tokens`` is the token store of an HTTP server; None: stdio, one client for the process."""
        self.kernel, self.settings, self.tokens = kernel, settings, tokens
        self.open: dict[str, Conversation] = {}
        self.closed: OrderedDict[str, str] = OrderedDict()  # key -> why it was closed
        self.threads: OrderedDict[str, tuple[str, ...]] = (
            OrderedDict()
        )  # key -> its closed runs, oldest first

    @contextlib.asynccontextmanager
    async def use(self, ctx: Any, *, create: bool = True) -> AsyncIterator[Conversation | None]:
        """The request's conversation, held busy while the request runs.

        Without a conversation to name, ``create=False`` yields None (a
        listing or a read has nothing to show) and a tool call gets a run of
        its own, closed when the call ends.
        """
        caller = identify(ctx, over_http=self.tokens is not None)
        if caller.key is None and not create:
            yield None
            return
        found = self.open.get(caller.key) if caller.key is not None else None
        if found is not None and found.owner != caller.owner:
            raise SessionNotFound()  # another token's holder who learnt the session id gets nothing of it
        if found is not None and found.busy == 0 and self._idle(found):
            await self._close(found, self._idle_why())
            found = None
        if found is None and caller.key is not None and caller.key in self.closed:
            raise ConversationClosed(caller.label, self.closed.pop(caller.key))
        if found is None:
            found = await self._admit(caller)
        found.busy += 1
        try:
            yield found
        finally:
            found.busy -= 1
            found.last_used = time.monotonic()
            if found.busy == 0 and (found.once or found.ending):
                await self._close(found, None)

    async def _admit(self, caller: Caller) -> Conversation:
        cap = self.settings.mcp_conversations_per_token
        while caller.bounded:  # counted again after each close: other requests run while one awaits
            mine = [c for c in self.open.values() if c.token == caller.token]
            if len(mine) < cap:
                break
            idle = [c for c in mine if c.busy == 0 and not c.once]
            if not idle:
                raise ConversationLimit(cap)
            oldest = min(idle, key=lambda c: c.last_used)
            await self._close(
                oldest,
                f"because its token opened more than {cap} conversations "
                "(ASSAY_SERVICE_MCP_CONVERSATIONS_PER_TOKEN) and it was the one idle longest",
            )
            raced = self.open.get(caller.key) if caller.key is not None else None
            if raced is not None:  # another request of this conversation opened it meanwhile
                return raced
        key = caller.key or f"once:{uuid.uuid4().hex}"
        conversation = self.open[key] = Conversation(
            self.kernel, caller, key, self.tokens, thread=self.threads.pop(key, ())
        )
        if caller.on_end is not None:
            caller.on_end.push_async_callback(
                self.end, key
            )  # the session ended (DELETE, idle timeout)
        return conversation

    def _idle(self, conversation: Conversation) -> bool:
        return (
            conversation.bounded
            and not conversation.once
            and time.monotonic() - conversation.last_used > self.settings.mcp_conversation_idle_s
        )

    def _idle_why(self) -> str:
        return f"after {self.settings.mcp_conversation_idle_s:g} s idle (ASSAY_SERVICE_MCP_CONVERSATION_IDLE_S)"

    async def _close(self, conversation: Conversation, why: str | None) -> None:
        """Forget a conversation (remembering why, to tell its next request) and close its run."""
        if self.open.get(conversation.key) is conversation:
            del self.open[conversation.key]
        if why is not None and not conversation.once:
            self.closed[conversation.key] = why
            self.threads[conversation.key] = conversation.run.evidence_runs()
            while len(self.closed) > TOMBSTONES:
                self.closed.popitem(last=False)
            while len(self.threads) > TOMBSTONES:
                self.threads.popitem(last=False)
            log.info("mcp_conversation_evicted", run_id=conversation.run.run_id, why=why)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(conversation.close)

    async def end(self, key: str) -> None:
        """The SDK session of ``key`` ended: close its conversation (once its requests are done)."""
        self.closed.pop(key, None)
        conversation = self.open.get(key)
        if conversation is None:
            return
        if conversation.busy:
            conversation.ending = True
        else:
            await self._close(conversation, None)

    async def sweep(self) -> None:
        """Close every conversation idle past the idle time."""
        for conversation in [c for c in self.open.values() if self._idle(c)]:
            if conversation.busy == 0 and self._idle(
                conversation
            ):  # a request may have taken it meanwhile
                await self._close(conversation, self._idle_why())

    @contextlib.asynccontextmanager
    async def sweeping(self, _server: Any = None) -> AsyncIterator[dict[str, Any]]:
        """The server's lifespan: a task closing idle conversations while the server runs."""
        every = min(max(self.settings.mcp_conversation_idle_s / 4, 0.25), 60.0)

        async def loop() -> None:
            while True:
                await anyio.sleep(every)
                await self.sweep()

        async with anyio.create_task_group() as group:
            group.start_soon(loop)
            try:
                yield {}
            finally:
                group.cancel_scope.cancel()

    def close(self) -> None:
        """Close every conversation (the server stops)."""
        for conversation in list(self.open.values()):
            del self.open[conversation.key]
            conversation.close()
