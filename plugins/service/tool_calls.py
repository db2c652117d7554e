"""``POST /tools/{name}``: one tool call in a run of its own, and the lean lane that serves it.

:func:`call_in_own_run` is the endpoint's work: a new run owned by the
caller, the arguments checked for other owners' artifact ids, the call, the
run closed, the envelope as JSON bytes. A sync tool and the run's close go
to one worker thread; the run's ownership row is written on the event loop
while that thread works, and the reply waits for both.

:class:`ToolLane` sits between the bearer check and the FastAPI app and
answers a well-formed call itself (a JSON body that is a valid
:class:`~.api_models.ToolCall`, a tool that exists), since FastAPI's routing,
dependency solving and body validation cost about as much as the rest of
the request. Anything else goes on to FastAPI with the body it read, so
errors keep the shapes ``/openapi.json`` documents; the route declared there
runs the same :func:`call_in_own_run`.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from typing import Any

import orjson
from pydantic import ValidationError

from .access import ArtifactOutOfScope, check_arguments, owner_scope
from .api_models import ToolCall
from .quota import charge_to_owner

PREFIX = "/tools/"


def visible_artifact(kernel: Any, tokens: Any, who: str, artifact_id: str) -> bool:
    record = kernel.evidence.catalog.get(artifact_id)
    return record is not None and tokens.owner_of(record.run_id) == who


async def call_in_own_run(kernel: Any, tokens: Any, who: str, name: str, arguments: dict[str, Any]) -> bytes:
    """The ``ToolCallResult`` of calling ``name`` (a tool that exists) in a new run of ``who``, as JSON."""
    from assay import ToolResult

    tool = kernel.get_tool(name)
    run = kernel.new_run()
    run.artifact_scope = owner_scope(tokens, who)  # inputs: this owner's runs, checked by the tool too
    charge_to_owner(run, kernel, tokens, who)
    try:
        check_arguments(arguments, lambda a: visible_artifact(kernel, tokens, who, a))
    except ArtifactOutOfScope as exc:
        tokens.own(run.run_id, who)
        run.close()
        result = ToolResult.from_error(exc, tool=name)
    else:
        if tool.is_async:
            tokens.own(run.run_id, who)
            try:
                result = await kernel.acall_tool(name, arguments, run=run)
            finally:
                await asyncio.to_thread(run.close)
        else:
            # submitted now (run_in_executor starts the thread at once, unlike a task), so the ownership
            # row below is written while the call runs instead of before it
            context = contextvars.copy_context()
            call = asyncio.get_running_loop().run_in_executor(
                None, functools.partial(context.run, _call_and_close, kernel, name, arguments, run))
            try:
                tokens.own(run.run_id, who)
            except BaseException:
                await asyncio.wait([call])  # the call has started: it ends before the failure is reported
                raise
            result = await call
    # the envelope is JSON-ready already: sent as is, not validated again against the response model
    return orjson.dumps({"run_id": run.run_id, "result": result.model_dump(mode="json", exclude_none=True)})


def _call_and_close(kernel: Any, name: str, arguments: dict[str, Any], run: Any) -> Any:
    try:
        return kernel.call_tool(name, arguments, run=run)
    finally:
        run.close()  # the sandbox session and what else the call opened


class ToolLane:
    """Wrap the API app: answer well-formed ``POST /tools/{name}`` calls, hand everything else to ``app``."""

    def __init__(self, app: Any, kernel: Any, tokens: Any) -> None:
        self.app, self.kernel, self.tokens = app, kernel, tokens

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        name = _tool_name(scope)
        if name is None:
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            call = ToolCall.model_validate_json(body) if body else None
        except ValidationError:
            call = None
        if call is None or self.kernel.get_tool(name) is None:  # FastAPI answers with its error shapes
            await self.app(scope, _replay(body, receive), send)
            return
        payload = await call_in_own_run(self.kernel, self.tokens, scope.get("assay.owner") or "", name,
                                        call.arguments)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(payload)).encode()),
                                (b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})


def _tool_name(scope: dict[str, Any]) -> str | None:
    """The tool a request is a plain JSON call of, else None (another route, method or content type)."""
    if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
        return None
    path = scope["path"]
    if not path.startswith(PREFIX) or "/" in path[len(PREFIX):] or len(path) == len(PREFIX):
        return None
    for key, value in scope["headers"]:
        if key == b"content-type":
            if value.split(b";", 1)[0].strip().lower() != b"application/json":
                return None
            return path[len(PREFIX):]
    return None


def _replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that hands the app the body read already, then the connection's own messages."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
