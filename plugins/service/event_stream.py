"""The response of ``GET /runs/ID/events``: a run executed in this process as SSE frames
(:func:`run_stream`, framed by :mod:`.sse`, the one framer), cut short when the stream's token is
revoked (:func:`while_token_active`), sent by a response that frees its stream slot however it ends
(:class:`ReleasingStream`); and one frame's schema in the OpenAPI document (:data:`SSE_EVENT`).

Apart from :mod:`.sse` because it needs Starlette and the run manager; the workers' stream
(:mod:`assay.plugins.worker.dispatch`) imports the framer only.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi.responses import StreamingResponse

from .runner import RunManager
from .sse import END, KEEPALIVE, KEEPALIVE_S, event_frame, frame

# One frame of the stream as the OpenAPI document shows it.
SSE_EVENT = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "event": {"type": "string"},
        "data": {"type": "string"},
    },
}


async def run_stream(
    manager: RunManager, run_id: str, history: list[dict[str, Any]], queue: asyncio.Queue | None
):
    """The run's events as frames: ``history``, then each one its watch ``queue`` gets until the run
    ends (``None``), a keep-alive while it is idle; ``END`` at once for no queue (an ended run). The
    queue is unwatched however the stream ends."""
    seq = 0
    try:
        for item in history:
            seq += 1
            yield event_frame(seq, item)
        if queue is None:
            yield END
            return
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
            except TimeoutError:
                yield KEEPALIVE
                continue
            if item is None:
                yield END
                return
            seq += 1
            yield event_frame(seq, item)
    finally:
        if queue is not None:
            manager.unwatch(run_id, queue)


async def while_token_active(stream: Any, tokens: Any, token_id: str):
    """``stream``'s frames while its token stays valid: the token is checked before each frame is sent,
    and a revoked one ends the stream with an ``error`` event naming the code."""
    try:
        async for chunk in stream:
            if not await asyncio.to_thread(tokens.active, token_id):
                body = {
                    "code": "SERVICE_AUTH_INVALID",
                    "message": "the bearer token was revoked",
                    "hint": "Make a new one with `assay tokens create`.",
                }
                yield frame("error", body)
                return
            yield chunk
    finally:
        await stream.aclose()


class ReleasingStream(StreamingResponse):
    """A streamed response that calls ``release`` when it is over, however it ends (even unstarted)."""

    def __init__(self, content: Any, release: Any, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._release = release

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()
            close = getattr(
                self.body_iterator, "aclose", None
            )  # typed AsyncIterable: an async generator here
            if close is not None:
                await close()
