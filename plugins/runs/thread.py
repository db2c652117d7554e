"""Threads: a follow-up run names the run it continues (``parent_run_id``); the chain of them is its thread.

:func:`thread_chain` reads a run's thread from the runs store, oldest run
first and the run itself last. The chain is bounded (``MAX_THREAD_RUNS``) and
a loop in the links (which only a hand-edited store could hold) ends it,
so reading a thread always ends. :func:`resolve_parent` turns what a user
typed (a run id, or ``last``) into the run to continue, with a stable error
code when there is none.
"""

from __future__ import annotations

import json
import re
from typing import Any

from assay.kernel.errors import AssayError

from .records import RunRecord
from .store import RunStore

MAX_THREAD_RUNS = 200
THREAD_PARENT_NOT_FOUND = "THREAD_PARENT_NOT_FOUND"
THREAD_PARENT_RUNNING = "THREAD_PARENT_RUNNING"


def thread_chain(store: RunStore, run_id: str, *, limit: int = MAX_THREAD_RUNS) -> list[RunRecord]:
    """``run_id``'s thread: its ancestors oldest first, then the run itself ([] when there is no such run)."""
    chain: list[RunRecord] = []
    seen: set[str] = set()
    current: str | None = run_id
    while current and current not in seen and len(chain) < limit:
        seen.add(current)
        record = store.get(current)
        if record is None:
            break
        chain.append(record)
        current = record.parent_run_id
    chain.reverse()
    return chain


def thread_ids(store: RunStore, run_id: str) -> list[str]:
    """The run ids of ``run_id``'s thread, oldest first."""
    return [r.run_id for r in thread_chain(store, run_id)]


def resolve_parent(store: RunStore, given: str) -> RunRecord:
    """The run a follow-up continues: a run id, or ``last`` (the newest run that is not running)."""
    given = given.strip()
    if given == "last":
        for record in store.list(limit=50):
            if record.shown_status not in ("running",):
                return record
        raise AssayError(
            THREAD_PARENT_NOT_FOUND,
            "there is no earlier run to continue",
            "Ask a first question with `assay ask`, then continue it.",
        )
    found = store.get(given)
    if found is None:
        raise AssayError(
            THREAD_PARENT_NOT_FOUND,
            f"no run {given!r} to continue",
            "Give a run id `assay runs list` shows, or `last`.",
        )
    if found.shown_status == "running":
        raise AssayError(
            THREAD_PARENT_RUNNING,
            f"run {given!r} is still running",
            "Continue it when it has ended (`assay runs show` says its status).",
        )
    return found


_ARTIFACT_ID = re.compile(r"\bart_[0-9a-f]{20}\b")


def cited_in_thread(
    kernel: Any, record: RunRecord, events: list[dict[str, Any]], own: dict[str, Any]
) -> tuple[list[str], dict[str, Any]]:
    """A follow-up's thread (run ids, oldest first, the run last) and the earlier runs' artifacts it cites.

    Cited: an id the model wrote (its messages and tool arguments; not the system prompt, which lists the
    whole thread's evidence), a tool result names, or a report of the run binds (its stored document).
    """
    chain = thread_ids(kernel.runs, record.run_id)
    if len(chain) < 2:
        return chain, {}
    earlier = set(chain[:-1])
    named: dict[str, None] = {}
    for event in events:
        data = event.get("data") or {}
        if event.get("kind") == "message" and (data.get("message") or {}).get("role") == "system":
            continue
        named.update(dict.fromkeys(_ARTIFACT_ID.findall(json.dumps(data, default=str))))
    for artifact in own.values():
        document = (
            (artifact.provenance or {}).get("document") if artifact.kind == "report" else None
        )
        if document:
            named.update(dict.fromkeys(_ARTIFACT_ID.findall(json.dumps(document, default=str))))
    catalog = kernel.evidence.catalog
    cited: dict[str, Any] = {}
    for artifact_id in named:
        found = own.get(artifact_id) or catalog.get(artifact_id)
        if found is not None and found.run_id in earlier:
            cited[artifact_id] = found
    return chain, cited
