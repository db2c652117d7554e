"""The API side of runs on workers: enqueue, cancel through the catalog, stream events from the catalog.

Used by ``assay serve``'s run manager when ``ASSAY_BROKER_URL`` is set
(:func:`remote_runs`). A run is written to the shared catalog first (its
record with status ``queued`` and its lease holding the message, in one
transaction), then its message goes to the broker; a broker that does not
take the message fails the run at once with ``BROKER_UNAVAILABLE`` (never an
in-process run instead). A process killed between the two leaves a queued
run that the workers' reconciler enqueues again (:meth:`Executor.reconcile`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from assay.kernel.database import open_database
from assay.kernel.errors import AssayError
from assay.kernel.log import get_logger
from assay.plugins.runs import RunRecord, store_path
from assay.plugins.service.sse import END, KEEPALIVE, KEEPALIVE_S, event_frame, run_event

from .broker import Broker, broker_settings, check_shared_catalog
from .faults import fault_point
from .leases import LeaseStore
from .messages import RunMessage
from .recording import record_ended

log = get_logger("assay.worker.dispatch")
ENDED_STATUSES_WAIT_S = 30.0  # how long DELETE /runs/ID waits for a worker to record the cancel


def open_leases(kernel_settings: Any) -> LeaseStore:
    return LeaseStore(open_database(kernel_settings, store_path(kernel_settings), owner="runs"))


def preflight(kernel_settings: Any) -> None:
    """Before serving: the shared catalog is configured and the broker answers (else a coded error)."""
    check_shared_catalog(kernel_settings)
    broker = Broker(broker_settings(kernel_settings))
    try:
        broker.check()
    finally:
        broker.close()


class RemoteRuns:
    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        check_shared_catalog(kernel.settings)
        self.settings = broker_settings(kernel.settings)
        self.broker = Broker(self.settings)
        self.leases = open_leases(kernel.settings)

    def start(
        self,
        run_id: str,
        question: str,
        datasource: str | None,
        model: str,
        max_steps: int,
        max_wall_s: float,
        parent_run_id: str | None = None,
    ) -> None:
        """Record the run (queued) and its lease, then enqueue it; BROKER_UNAVAILABLE ends it failed.
        ``parent_run_id``: a follow-up of that run (recorded with it, and sent in a version-2 message)."""
        message = RunMessage(
            version=2 if parent_run_id else 1,
            run_id=run_id,
            question=question,
            datasource=datasource,
            model=model,
            max_steps=max_steps,
            max_wall_s=max_wall_s,
            enqueued_at=time.time(),
            parent_run_id=parent_run_id,
        )

        def record() -> None:
            with self.leases.db.transaction() as tx:  # the record and the lease: both or neither
                at = self.leases.create(
                    run_id, message.model_dump_json(), tx
                )  # the catalog's clock
                self.kernel.runs.start(
                    RunRecord(
                        run_id=run_id,
                        question=question,
                        model=model,
                        status="queued",
                        started_at=at,
                        parent_run_id=parent_run_id,
                    )
                )

        self.leases.db.retry(record)  # a dropped connection: the whole transaction once more
        fault_point("serve_recorded")
        try:
            self.broker.enqueue(message)
        except AssayError as exc:
            with self.leases.db.transaction():
                if self.leases.end_unclaimed(run_id):
                    record_ended(self.kernel, run_id, question, model, "failed", exc)
            raise
        log.info("run_enqueued", run_id=run_id, queue=self.settings.queue)

    async def cancel(self, run_id: str) -> bool:
        """Ask the run's worker to cancel it (or end it here while it is queued); wait for its status."""
        state = await asyncio.to_thread(self.leases.request_cancel, run_id)
        if state is None:
            return False
        if state == "queued" and await asyncio.to_thread(
            self.leases.db.retry, lambda: self._cancel_queued(run_id)
        ):
            return True
        deadline = time.monotonic() + ENDED_STATUSES_WAIT_S
        while time.monotonic() < deadline:
            record = await asyncio.to_thread(self.kernel.runs.get, run_id)
            if record is None or record.status not in ("queued", "running"):
                break
            await asyncio.sleep(self.settings.poll_s)
        return True

    def _cancel_queued(self, run_id: str) -> bool:
        """End a run no worker took yet as cancelled: lease, final event and status in one transaction."""
        with self.leases.db.transaction():
            if not self.leases.end_unclaimed(run_id):
                return False
            record = self.kernel.runs.get(run_id)
            record_ended(
                self.kernel,
                run_id,
                record.question if record else "",
                record.model if record else "",
                "cancelled",
                AssayError("SERVICE_RUN_CANCELLED", "cancelled while queued", "Ask again."),
                ended_at=self.leases.clock(),
            )
        return True

    async def stream(self, run_id: str, max_s: float) -> AsyncIterator[str]:
        """Server-sent events of a run on a worker, read back from the shared ``run_events`` table.

        Every ``poll_s`` the events after the last one sent are read; the stream ends after the run's
        ``run_finished`` (or when its record says it ended), and in any case after ``max_s``.
        """
        sent = 0
        deadline = time.monotonic() + max_s
        quiet = time.monotonic()
        while True:
            events = await asyncio.to_thread(self._after, run_id, sent)
            for seq, kind, step, at, data in events:
                sent = seq
                yield event_frame(seq, run_event(kind, run_id, step, at, data))
                if kind == "run_finished":
                    yield END
                    return
            if events:
                quiet = time.monotonic()
            else:
                record = await asyncio.to_thread(self.kernel.runs.get, run_id)
                if (
                    record is None
                    or record.status not in ("queued", "running")
                    or time.monotonic() > deadline
                ):
                    yield END
                    return
                if time.monotonic() - quiet >= KEEPALIVE_S:
                    quiet = time.monotonic()
                    yield KEEPALIVE
            await asyncio.sleep(self.settings.poll_s)

    def queued_s(self, run_id: str) -> float | None:
        """How long the run waited for a worker (so far, while it waits), on the catalog's clock."""
        times = self.leases.queue_times(run_id)
        if times is None:
            return None
        enqueued, claimed = times
        return max(0.0, (claimed if claimed is not None else self.leases.clock()) - enqueued)

    def _after(self, run_id: str, seq: int) -> list[tuple[int, str, int, float, Any]]:
        return [
            (e.seq, e.kind, e.step, e.at, e.data)
            for e in self.kernel.runs.events(run_id)
            if e.seq > seq
        ]

    def close(self) -> None:
        self.broker.close()
