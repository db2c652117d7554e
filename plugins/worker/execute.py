"""A worker executing runs taken from the broker: claim, run the agent, renew, cancel, finish.

:meth:`Executor.handle` is the Dramatiq actor's body (one call per message,
on one of the worker's threads). A run is executed only after its lease was
claimed in the shared catalog (:mod:`.leases`), so a message delivered twice
runs once; a claim the catalog did not answer raises, for Dramatiq's Retries
middleware to bring the message back (:mod:`.broker`). While it runs, a guard
thread renews the lease and looks for a cancel; every write of the run (its
events, its artifact records, its end) is fenced by the lease
(:mod:`.recording`). :meth:`Executor.sweep` (a thread of every worker) marks
runs whose worker died failed with ``RUN_WORKER_LOST``, and
:meth:`Executor.reconcile` enqueues again, or expires, queued runs whose
message is gone.

"Retried from its last checkpoint" is honestly this, for an agent run: the
transcript and every captured artifact up to the worker's death stay in the
catalog, and report checkpoints (``report_state``) stay resumable, but the
model conversation is not continued on another worker (a model's turn cannot
be replayed without repeating its tool calls), so the run ends ``failed`` with
``RUN_WORKER_LOST`` and the reason, never silently re-run.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
import uuid
from collections import deque
from typing import Any

from pydantic import ValidationError

from assay.kernel.errors import AssayError
from assay.kernel.log import get_logger
from assay.plugins.agent.ask import AskOptions, aask, refused
from assay.plugins.agent.loop import agent_settings
from assay.plugins.runs import RunRecorder

from .leases import ENDED, QUEUED, RUNNING, LeaseLost, LeaseStore
from .messages import RunMessage
from .recording import FencedRecorder, record_ended
from .settings import BrokerSettings

log = get_logger("assay.worker")

RUN_WORKER_LOST = "RUN_WORKER_LOST"
RUN_QUEUE_EXPIRED = "RUN_QUEUE_EXPIRED"
WORKER_MESSAGE_INVALID = "WORKER_MESSAGE_INVALID"
FENCE_KEPT_S = 3600.0  # longer than any run's tools may outlive it


def worker_id() -> str:
    """``host:pid:random``: unique per process, and says where the process ran."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Executor:
    def __init__(
        self, kernel: Any, settings: BrokerSettings, leases: LeaseStore, broker: Any = None
    ) -> None:
        self.kernel, self.settings, self.leases, self.broker = kernel, settings, leases, broker
        self.worker = worker_id()
        self.running: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future]] = {}
        self._mine: set[str] = set()  # runs this process is claiming or executing
        self._ended: deque[tuple[float, str]] = (
            deque()
        )  # (when, run id) of runs ended here, still fenced
        self._begun: set[str] = (
            set()
        )  # runs this process began executing (kept as long as their fence)
        self._lock = threading.Lock()
        self._local = threading.local()

    def _loop(self) -> asyncio.AbstractEventLoop:
        """This worker thread's event loop, kept across runs: its few executor threads, and their
        catalog connections, are reused instead of opened anew for every run."""
        loop = getattr(self._local, "loop", None)
        if loop is None:
            from concurrent.futures import ThreadPoolExecutor

            loop = self._local.loop = asyncio.new_event_loop()
            loop.set_default_executor(ThreadPoolExecutor(4, thread_name_prefix="assay-run"))
        return loop

    # --- one message ---------------------------------------------------------------

    def handle(self, payload: dict[str, Any]) -> None:
        try:
            message = RunMessage.model_validate(payload)
        except (
            ValidationError
        ) as exc:  # acknowledged (it would come back for ever); its run ends failed
            log.error("worker_message_invalid", error=str(exc).splitlines()[0])
            run_id = payload.get("run_id") if isinstance(payload, dict) else None
            if isinstance(run_id, str):
                with self.leases.db.transaction():
                    if self.leases.end_unclaimed(run_id):
                        record_ended(
                            self.kernel,
                            run_id,
                            str(payload.get("question", "")),
                            str(payload.get("model", "")),
                            "failed",
                            AssayError(
                                WORKER_MESSAGE_INVALID,
                                "this worker cannot read the run's message: "
                                f"{str(exc).splitlines()[0]}",
                                "Run the same assay version on the API and the workers.",
                            ),
                        )
            return
        run_id, s = message.run_id, self.settings
        with self._lock:
            # delivered twice to this very process: it runs it, or ran it (never again, even if its lease was
            # left running: a claim ``again`` is only for a run this process never began)
            if run_id in self._mine or run_id in self._begun:
                log.info("worker_run_skipped", run_id=run_id, state="here")
                return
            self._mine.add(run_id)
        try:
            # a catalog error raises to Dramatiq's Retries middleware: the message comes back after a back-off,
            # then goes to the dead-letter queue; it is never acknowledged unclaimed. ``again``: a claim of this
            # process that committed before the catalog failed is this process's to run (it never began it)
            times = self.leases.claim(run_id, self.worker, s.lease_s, again=True)
            if times is None:
                self._not_claimed(message)
                return
            log.info("worker_run_claimed", run_id=run_id, worker=self.worker)
            try:
                self._loop().run_until_complete(self._execute(message, times))
            except Exception as exc:  # noqa: BLE001 - claimed: the lease decides what becomes of it, not a retry
                log.error("worker_run_crashed", run_id=run_id, error=repr(exc))
        finally:
            with self._lock:
                self._mine.discard(run_id)

    def _not_claimed(self, message: RunMessage) -> None:
        run_id = message.run_id
        lease = self.leases.get(run_id)
        if lease is None or lease.state == ENDED:
            log.info("worker_run_skipped", run_id=run_id, state=lease.state if lease else "unknown")
        elif lease.state == QUEUED and lease.cancel_requested:
            self._end_queued(run_id, message, "cancelled")
        elif lease.state == RUNNING and lease.lapsed:
            self.sweep(run_id)
        elif lease.state == RUNNING and self.broker is not None:
            # delivered again while another worker holds it (a redelivery): look once its lease would lapse
            self.broker.enqueue(message, delay_s=self.settings.lease_s)

    async def _execute(self, message: RunMessage, times: tuple[float, float]) -> None:
        kernel, run_id = self.kernel, message.run_id
        with self._lock:
            self._begun.add(run_id)
        recorder = RunRecorder(kernel.runs)
        recorder.started.add(run_id)  # the API wrote the record (status queued)
        guarded = FencedRecorder(
            recorder, self.leases, run_id, self.worker, self.settings.write_retry_s
        )
        # started_at: when a worker took it, on the catalog's clock (the wait before is the lease's enqueued_at)
        try:
            await asyncio.to_thread(
                guarded.update,
                status="running",
                pid=os.getpid(),
                host=socket.gethostname(),
                started_at=times[1],
            )
        except LeaseLost:
            return
        catalog = kernel.evidence.catalog
        catalog.fence(
            run_id,
            lambda tx: self.leases.fence(tx, run_id, self.worker),  # artifacts: fenced too
            lambda write: guarded.retrying(write, time.monotonic() + self.settings.write_retry_s),
        )
        run = kernel.new_run(run_id=run_id)
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        try:
            settings = agent_settings(kernel).model_copy(
                update={"max_wall_s": message.max_wall_s, "max_steps": message.max_steps}
            )
            options = AskOptions(
                question=message.question,
                model=message.model,
                settings=settings,
                databases=[message.datasource] if message.datasource else [],
                parent_run_id=message.parent_run_id,  # its thread: read from the shared catalog
            )
            # the guard renews the lease and looks for a cancel from here on, while the databases connect too
            agent = asyncio.ensure_future(
                aask(kernel, options, run=run, observers=[guarded], record_run=False)
            )
            with self._lock:
                self.running[run_id] = (loop, agent)
            threading.Thread(
                target=self._guard,
                args=(run_id, loop, agent, guarded, stop),
                daemon=True,
                name=f"lease-{run_id[:12]}",
            ).start()
            try:
                await agent
            except asyncio.CancelledError:
                pass  # recorded by the agent as cancelled (or dropped: the lease was lost)
        except Exception as exc:  # noqa: BLE001 - a bug must still end the run with a status
            log.error("worker_run_crashed", run_id=run_id, error=repr(exc))
            refused(
                run_id,
                message.question,
                message.model,
                AssayError(
                    "SERVICE_RUN_FAILED",
                    f"{type(exc).__name__}: {exc}",
                    "A bug in the worker; see its log.",
                ),
                [guarded],
                status=_status("failed"),
            )
        finally:
            stop.set()
            self._unfence_old(catalog, run_id)
            with self._lock:
                self.running.pop(run_id, None)
            await asyncio.to_thread(run.close)  # the sandbox session and SQL pools the run opened
            log.info("worker_run_done", run_id=run_id, lost=guarded.lost)

    def _unfence_old(self, catalog: Any, ended: str) -> None:
        """The fence of a run stays after it ends (a tool's thread may outlive the run's cancel and try to
        record an artifact: the ended lease refuses it); fences of runs ended FENCE_KEPT_S ago are dropped."""
        now = time.monotonic()
        with self._lock:
            self._ended.append((now, ended))
            old = []
            while self._ended and now - self._ended[0][0] > FENCE_KEPT_S:
                old.append(self._ended.popleft()[1])
                self._begun.discard(old[-1])
        for run_id in old:
            catalog.fence(run_id, None)

    def _guard(
        self,
        run_id: str,
        loop: asyncio.AbstractEventLoop,
        agent: asyncio.Future,
        guarded: FencedRecorder,
        stop: threading.Event,
    ) -> None:
        """Renew the lease every lease_s/3 and look for a cancel every poll_s, until the run ends."""
        renewed = time.monotonic()
        try:
            self._watch(run_id, loop, agent, guarded, stop, renewed)
        finally:
            self.leases.db.close()  # this thread's catalog connection: the thread ends with the run

    def _watch(
        self,
        run_id: str,
        loop: asyncio.AbstractEventLoop,
        agent: asyncio.Future,
        guarded: FencedRecorder,
        stop: threading.Event,
        renewed: float,
    ) -> None:
        s = self.settings
        while not stop.wait(s.poll_s):
            try:
                if time.monotonic() - renewed >= s.lease_s / 3:
                    if not self.leases.renew(run_id, self.worker, s.lease_s):
                        guarded.lost = True  # lapsed and taken: nothing more of this run is written
                        loop.call_soon_threadsafe(agent.cancel)
                        return
                    renewed = time.monotonic()
                if self.leases.cancel_requested(run_id):
                    log.info("worker_run_cancel", run_id=run_id)
                    loop.call_soon_threadsafe(agent.cancel)
                    return
            except Exception as exc:  # noqa: BLE001 - a catalog hiccup: try again next round
                log.warning("worker_guard_failed", run_id=run_id, error=repr(exc))

    def cancel_all(self) -> int:
        """Cancel every run this worker executes (shutdown after the grace period)."""
        with self._lock:
            going = list(self.running.values())
        for loop, agent in going:
            loop.call_soon_threadsafe(agent.cancel)
        return len(going)

    def busy(self) -> bool:
        """Whether a run is being claimed or executed here."""
        with self._lock:
            return bool(self._mine)

    # --- runs whose worker died -------------------------------------------------------

    def sweep(self, run_id: str | None = None) -> int:
        """Mark failed (RUN_WORKER_LOST) the running runs whose lease lapsed; how many this call took."""
        # one transaction (this thread's connection, which the runs store's writes below use too): the lease
        # is ended together with the run's final event and status, or neither is and the next sweep retries
        with self.leases.db.transaction():
            taken = self.leases.take_lapsed(run_id)
            now = self.leases.clock() if taken else None
            for lost_id, holder in taken:
                self._lost(lost_id, holder, now)
        for lost_id, holder in taken:
            log.warning("worker_run_lost", run_id=lost_id, worker=holder, swept_by=self.worker)
        return len(taken)

    def _lost(self, lost_id: str, holder: str, now: float | None = None) -> None:
        record = self.kernel.runs.get(lost_id)
        steps = record.steps if record else 0
        record_ended(
            self.kernel,
            lost_id,
            record.question if record else "",
            record.model if record else "",
            "failed",
            AssayError(
                RUN_WORKER_LOST,
                f"worker {holder} stopped renewing this run's lease (it was killed, or "
                f"lost the catalog) after step {steps}",
                "Ask again. The transcript and evidence up to "
                "that step are kept; the model conversation is not resumed on another worker.",
            ),
            steps=steps,
            ended_at=now,
        )

    # --- queued runs whose message is gone --------------------------------------------

    def reconcile(self) -> dict[str, int]:
        """Queued runs untouched past ``requeue_after_s``: enqueued again (a second delivery is harmless: one
        claim wins), or past ``queue_expiry_s`` failed with RUN_QUEUE_EXPIRED; queued runs whose cancel was
        asked but not recorded: ended ``cancelled``. Counts of each."""
        s = self.settings
        counts = {"requeued": 0, "expired": 0, "cancelled": 0}
        for stale in self.leases.stale_queued(s.requeue_after_s, s.queue_expiry_s):
            message = _message(stale.message)
            if stale.cancel_requested or stale.expired or message is None:
                kind = "cancelled" if stale.cancel_requested else "expired"
                self._end_queued(stale.run_id, message, kind)
                counts[kind] += 1
            elif self.broker is not None:
                self.broker.enqueue(message)
                counts["requeued"] += 1
                log.warning("worker_run_requeued", run_id=stale.run_id, by=self.worker)
        return counts

    def _end_queued(self, run_id: str, message: RunMessage | None, kind: str) -> None:
        s = self.settings
        record = self.kernel.runs.get(run_id)
        question = message.question if message else (record.question if record else "")
        model = message.model if message else (record.model if record else "")
        if kind == "cancelled":
            error = AssayError("SERVICE_RUN_CANCELLED", "cancelled while queued", "Ask again.")
            status, reason = "cancelled", None
        else:
            error = AssayError(
                RUN_QUEUE_EXPIRED,
                f"no worker took this run within {s.queue_expiry_s:g} s of its "
                "enqueueing (its message was lost, or no worker ran)",
                "Check that `assay worker` "
                "processes run and reach the broker (`assay worker` reports dead letters); ask again.",
            )
            status, reason = "failed", "no worker took it in time"
        with self.leases.db.transaction():
            if self.leases.end_unclaimed(run_id):
                record_ended(
                    self.kernel,
                    run_id,
                    question,
                    model,
                    status,
                    error,
                    ended_at=self.leases.clock(),
                    reason=reason,
                )
        log.warning("worker_queued_run_ended", run_id=run_id, status=status, code=error.code)


def _message(stored: str) -> RunMessage | None:
    try:
        return RunMessage.model_validate_json(stored) if stored else None
    except ValidationError:
        return None


def _status(name: str) -> Any:
    from assay.plugins.agent import RunStatus

    return RunStatus(name)
