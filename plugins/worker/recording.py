"""Writing a run on a worker: fenced by its lease, kept through catalog blinks, ended atomically.

:class:`FencedRecorder` is the observer a worker gives the agent. Every write
of the run (an event with the counters it moves) is one transaction that
first locks the run's lease row held by this worker (:meth:`LeaseStore.fence`):
a worker that lost its run (frozen past its lease, then swept) writes nothing
more. An event the catalog does not take (it is down) is kept, in order, and
written before the next one; the run goes on. At the run's end the kept ones
are written first, retried for up to ``write_retry_s``; then the lease is
ended, the final event and the status written, in one transaction, retried
for up to another ``write_retry_s``. Events that could still not be written
are named in the final summary (``transcript_incomplete``), so a transcript
is complete or says it is not.
If even the end cannot be written, the lease lapses and a sweep ends the run
``RUN_WORKER_LOST``: never ``running`` for ever.

:func:`record_ended` writes the end of a run this process did not execute
(a sweep's ``RUN_WORKER_LOST``, a queued run cancelled or expired).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import replace
from typing import Any

from assay.kernel.errors import AssayError
from assay.kernel.log import get_logger
from assay.plugins.runs import RunRecorder
from assay.plugins.runs.recorder import NOT_STORED

from .faults import fault_point
from .leases import LeaseLost, LeaseStore

log = get_logger("assay.worker")

_BACKOFF_S = (0.05, 0.1, 0.2, 0.5, 1.0)


class FencedRecorder:
    """The runs-store recorder of one run, writing only while this worker holds the run's lease."""

    def __init__(
        self,
        recorder: RunRecorder,
        leases: LeaseStore,
        run_id: str,
        worker: str,
        write_retry_s: float = 120.0,
    ) -> None:
        self.recorder, self.leases, self.run_id, self.worker = recorder, leases, run_id, worker
        self.write_retry_s = write_retry_s
        self.lost = False
        self.pending: deque[Any] = deque()  # events the catalog did not take yet, in order
        self.ended = False
        self._lock = threading.Lock()  # events come from the agent's loop and from tools' threads

    def __call__(self, event: Any) -> None:
        if event.kind in NOT_STORED:
            return
        with self._lock:
            if self.lost:
                return
            if event.kind == "run_finished":
                self._finish(event)
                return
            self.pending.append(event)
            self._flush(deadline=0.0)

    # --- writes ------------------------------------------------------------------

    def _write(self, event: Any) -> None:
        """One event in one fenced transaction (LeaseLost: nothing written)."""
        mark = self.recorder.mark(self.run_id)
        try:
            with self.leases.db.transaction() as tx:
                self.leases.fence(tx, self.run_id, self.worker)
                self.recorder(event)
        except BaseException:
            self.recorder.undo(self.run_id, mark)
            raise

    def update(self, **fields: Any) -> None:
        """Fields of the run's record, fenced, retried through a blink (LeaseLost when the run is not ours)."""

        def write() -> None:
            with self.leases.db.transaction() as tx:
                self.leases.fence(tx, self.run_id, self.worker)
                self.recorder.store.update(self.run_id, **fields)

        self.retrying(write, time.monotonic() + self.write_retry_s)

    def _flush(self, deadline: float) -> bool:
        """Write the kept events in order; until ``deadline`` (monotonic) through catalog errors."""
        while self.pending:
            try:
                self.retrying(lambda: self._write(self.pending[0]), deadline)
            except LeaseLost:
                self._lose()
                return False
            except Exception as exc:  # noqa: BLE001 - the catalog is down: kept for the next write
                log.warning(
                    "worker_event_kept", run_id=self.run_id, kept=len(self.pending), error=repr(exc)
                )
                return False
            self.pending.popleft()
        return True

    @staticmethod
    def retrying(fn: Any, deadline: float) -> None:
        """``fn()``, again with back-off after an error until ``deadline`` (monotonic); LeaseLost at once."""
        for attempt in range(1_000_000):
            try:
                fn()
                return
            except LeaseLost:
                raise
            except Exception:  # noqa: BLE001 - retried until the deadline, then raised
                if time.monotonic() >= deadline:
                    raise
                time.sleep(
                    min(
                        _BACKOFF_S[min(attempt, len(_BACKOFF_S) - 1)],
                        max(0.0, deadline - time.monotonic()),
                    )
                )

    def _lose(self) -> None:
        self.lost = True  # another worker's sweep ended it (RUN_WORKER_LOST): its status stands
        self.pending.clear()
        log.warning("worker_lease_lost", run_id=self.run_id, worker=self.worker)

    # --- the end -----------------------------------------------------------------

    def _finish(self, event: Any) -> None:
        deadline = time.monotonic() + self.write_retry_s
        if not self._flush(deadline) and self.lost:
            return
        if self.pending:  # still not written: the transcript says so
            event = _incomplete(event, [e.kind for e in self.pending])
            self.pending.clear()
        try:  # the end has its own write_retry_s: events missing for an outage longer than one are named
            self.retrying(lambda: self._end(event), time.monotonic() + self.write_retry_s)
        except LeaseLost:
            self._lose()
        except Exception as exc:  # noqa: BLE001 - the lease lapses; a sweep ends the run RUN_WORKER_LOST
            log.error("worker_run_end_not_written", run_id=self.run_id, error=repr(exc))

    def _end(self, event: Any) -> None:
        """Lease ended, final event and status: one transaction, all of it or none."""
        mark = self.recorder.mark(self.run_id)
        try:
            with self.leases.db.transaction() as tx:
                ended_at = self.leases.finish(self.run_id, self.worker, tx)
                if ended_at is None:
                    raise LeaseLost(self.run_id)
                fault_point("worker_ending")
                self.recorder(event)
                tx.execute("UPDATE runs SET ended_at = ? WHERE run_id = ?", (ended_at, self.run_id))
        except BaseException:
            self.recorder.undo(self.run_id, mark)
            raise
        self.ended = True


def _incomplete(event: Any, missing: list[str]) -> Any:
    """``run_finished`` whose summary names the events that could not be written."""
    summary = dict(event.data.get("summary") or {})
    summary["transcript_incomplete"] = {"missing_events": len(missing), "kinds": missing}
    summary["status_reason"] = (
        f"{summary.get('status_reason', '')}; transcript incomplete: {len(missing)} "
        "event(s) could not be written (the catalog was unavailable)"
    ).lstrip("; ")
    return replace(event, data={**event.data, "summary": summary})


def record_ended(
    kernel: Any,
    run_id: str,
    question: str,
    model: str,
    status: str,
    error: AssayError,
    steps: int = 0,
    ended_at: float | None = None,
    reason: str | None = None,
) -> None:
    """Write the final event and status of a run this process did not execute (lost, or ended queued)."""
    record = kernel.runs.get(run_id)
    reasons = {
        "failed": "the worker executing it was lost",
        "cancelled": "cancelled before a worker took it",
    }
    summary = {
        "run_id": run_id,
        "question": question,
        "model": model,
        "status": status,
        "status_reason": reason or reasons.get(status, status),
        "error": {"code": error.code, "message": error.message, "hint": error.hint},
        "answer": None,
        "steps": steps,
        "artifact_ids": list(record.artifact_ids) if record else [],
        "tool_calls": [],
    }
    if record is None:
        RunRecorder(kernel.runs).begin(run_id, question, model)
    at = ended_at if ended_at is not None else time.time()
    kernel.runs.append(run_id, "run_finished", steps, at, {"summary": summary})
    kernel.runs.update(
        run_id,
        status=status,
        status_reason=summary["status_reason"],
        error=summary["error"],
        ended_at=at,
        summary=summary,
    )
