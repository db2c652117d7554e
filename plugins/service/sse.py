"""Server-sent events as ``GET /runs/ID/events`` sends them: the one framer, for runs executed here
(:mod:`.event_stream`) and runs read back from the shared catalog
(:mod:`assay.plugins.worker.dispatch`).

A run's event is ``id: SEQ``, ``event: KIND`` and ``data: JSON`` (the event
as :func:`run_event` shapes it); the stream ends with an ``end`` event, a
revoked token with an ``error`` event; a comment line keeps an idle
connection open every :data:`KEEPALIVE_S`.
"""

from __future__ import annotations

import json
from typing import Any

KEEPALIVE_S = 15.0
KEEPALIVE = ": keep-alive\n\n"


def frame(kind: str, data: Any, event_id: int | None = None) -> str:
    """One event: its ``id`` line (when given), ``event: KIND``, ``data:`` the JSON of ``data`` on one line
    (values JSON cannot hold as their str), and the blank line that ends it."""
    head = "" if event_id is None else f"id: {event_id}\n"
    return f"{head}event: {kind}\ndata: {json.dumps(data, default=str)}\n\n"


def run_event(kind: str, run_id: str, step: int, at: float, data: Any) -> dict[str, Any]:
    """The JSON of one event of a run, as its watchers receive it."""
    return {"kind": kind, "run_id": run_id, "step": step, "at": at, "data": data}


def event_frame(seq: int, item: dict[str, Any]) -> str:
    """A run's event ``item`` (:func:`run_event`) as the ``seq``-th event of its stream."""
    return frame(item["kind"], item, seq)


END = frame("end", {})
