"""The observer that writes an agent run into the runs store as it goes."""

from __future__ import annotations

import os
import socket
import time
from typing import TYPE_CHECKING, Any

from .records import RunRecord
from .store import RunStore

if TYPE_CHECKING:
    from ..agent.transcript import AgentEvent

NOT_STORED = frozenset(
    {"text"}
)  # streamed deltas: the assistant message that follows holds the whole text


class RunRecorder:
    """Call it with each :class:`~assay.plugins.agent.transcript.AgentEvent` of one run."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.started: set[str] = set()
        self._calls: dict[str, int] = {}
        self._artifacts: dict[str, list[str]] = {}

    def __call__(self, event: AgentEvent) -> None:
        if event.kind in NOT_STORED:
            return
        run_id = event.run_id
        if event.kind == "run_started" and run_id not in self.started:
            self.begin(
                run_id,
                event.data.get("question", ""),
                event.data.get("model", ""),
                at=event.at,
                parent_run_id=(event.data.get("thread") or {}).get("parent_run_id"),
            )
        self.store.append(run_id, event.kind, event.step, event.at, event.data)
        if event.kind == "tool_finished":
            self._calls[run_id] = self._calls.get(run_id, 0) + 1
            self._artifacts.setdefault(run_id, []).extend(event.data.get("artifact_ids") or [])
            self.store.update(
                run_id,
                steps=event.step,
                tool_calls=self._calls[run_id],
                artifact_ids=self._artifacts[run_id],
            )
        elif event.kind == "run_finished":
            self.end(run_id, event.data.get("summary") or {})

    def mark(self, run_id: str) -> tuple[int, int]:
        """Where this recorder's counters of ``run_id`` stand, to :meth:`undo` an event whose write was rolled back."""
        return self._calls.get(run_id, 0), len(self._artifacts.get(run_id, []))

    def undo(self, run_id: str, mark: tuple[int, int]) -> None:
        """Back to ``mark`` after the transaction holding an event's writes was rolled back (it is written again)."""
        calls, artifacts = mark
        if run_id in self._calls:
            self._calls[run_id] = calls
        if run_id in self._artifacts:
            del self._artifacts[run_id][artifacts:]
        self.store.forget(run_id)

    def begin(
        self,
        run_id: str,
        question: str,
        model: str,
        *,
        at: float | None = None,
        parent_run_id: str | None = None,
    ) -> None:
        """Create the run's record (also for a run refused before the agent started)."""
        if run_id in self.started:
            return
        self.started.add(run_id)
        self.store.start(
            RunRecord(
                run_id=run_id,
                question=question,
                model=model,
                started_at=at or time.time(),
                pid=os.getpid(),
                host=socket.gethostname(),
                parent_run_id=parent_run_id,
            )
        )

    def end(self, run_id: str, summary: dict[str, Any]) -> None:
        usage = summary.get("usage") or {}
        error = summary.get("error")
        self.store.update(
            run_id,
            status=summary.get("status", "failed"),
            status_reason=summary.get("status_reason", ""),
            error=error,
            answer=summary.get("answer"),
            steps=summary.get("steps", 0),
            tool_calls=len(summary.get("tool_calls") or []),
            artifact_ids=summary.get("artifact_ids") or [],
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            ended_at=time.time(),
            summary=summary,
        )
