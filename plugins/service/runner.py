"""The service's runs: started in the background, streamed to watchers, cancelled, drained.

Each ``POST /runs`` becomes an asyncio task answering the question
(:func:`assay.plugins.agent.ask.aask`, as ``assay ask`` and the workers do) on a
fresh run scoped to its owner, recorded in the runs
store as it goes (:class:`assay.plugins.runs.RunRecorder`) and fanned out to
the SSE watchers of that run. Admission is bounded: runs per token going at
once (queued or running), runs the server holds at once, questions per
token per minute; past a bound the answer is 429 with ``Retry-After``. At
most ``max_runs_total`` run at once; the others wait their turn in a queue
of ``max_queued``.

With ``ASSAY_BROKER_URL`` set, a run is not executed here: it is recorded in
the shared catalog and enqueued for ``assay worker`` processes
(:class:`assay.plugins.worker.dispatch.RemoteRuns`, loaded only then); the
per-minute limit still applies here, the queue is the broker's.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from assay.kernel.errors import AssayError
from assay.kernel.log import get_logger
from assay.plugins.agent import AgentEvent, AgentSettings
from assay.plugins.agent.ask import AskOptions, aask, refused
from assay.plugins.agent.loop import agent_settings
from assay.plugins.agent.transcript import AgentObserver
from assay.plugins.runs import RunRecorder

from .access import owner_scope
from .limits import SERVICE_BUSY, SERVICE_RATE_LIMITED, Refused, per_minute_wait
from .quota import charge_to_owner
from .settings import ServiceSettings
from .sse import run_event

log = get_logger("assay.service.runs")

SERVICE_MODEL_NOT_ALLOWED = "SERVICE_MODEL_NOT_ALLOWED"
SERVICE_DRAINING = "SERVICE_DRAINING"
SERVICE_IDEMPOTENCY_KEY_REUSED = "SERVICE_IDEMPOTENCY_KEY_REUSED"
SERVICE_FILES_ON_WORKERS = "SERVICE_FILES_ON_WORKERS"
WATCHER_QUEUE = 1000  # events a slow SSE watcher may fall behind before it is cut off


@dataclass
class RunRequest:
    question: str
    datasource: str | None = None
    model: str | None = None
    max_steps: int | None = None
    max_wall_s: float | None = None
    parent_run_id: str | None = (
        None  # a follow-up of this run (the API checked that the owner is the same)
    )
    files: list[str] = field(
        default_factory=list
    )  # ``table=path`` of the owner's uploads (the API checked them), attached as one datasource
    inherits_files: bool = (
        False  # a follow-up given no files: its parent's uploads (the API checked them)
    )


@dataclass
class LiveRun:
    run_id: str
    owner: str
    token_id: str
    task: asyncio.Task | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    watchers: set[asyncio.Queue] = field(default_factory=set)
    state: str = "queued"  # queued -> running -> ended
    replayed: bool = (
        False  # answered again for a repeated Idempotency-Key, not started by this request
    )

    def publish(self, item: dict[str, Any] | None) -> None:
        if item is not None:
            self.history.append(item)
        for queue in list(self.watchers):
            try:
                queue.put_nowait(item)
            except asyncio.QueueFull:  # a watcher that does not read is dropped, the run goes on
                self.watchers.discard(queue)


class RunManager:
    def __init__(self, kernel: Any, settings: ServiceSettings, tokens: Any) -> None:
        self.kernel, self.settings, self.tokens = kernel, settings, tokens
        self.live: dict[str, LiveRun] = {}
        self._slots = asyncio.Semaphore(settings.max_runs_total)
        self._asked: dict[str, deque[float]] = {}
        self.draining = False
        self.finished = 0
        self.remote = _remote_runs(kernel)
        self.open_uploads: Any = (
            None  # (name, ["table=path", ...]) -> a files datasource (files plugin)
        )
        self.reopen_uploads: Any = (
            None  # (owner, name, the parent's files record) -> Reopened (files plugin)
        )

    # --- admission -------------------------------------------------------------

    def _admit(self, token_id: str, counted: bool = True) -> None:
        s = self.settings
        if self.draining:
            raise Refused(
                SERVICE_DRAINING,
                "the server is shutting down",
                "Try again on the next server.",
                503,
                retry_after=5,
            )
        now = time.monotonic()
        asked = self._asked.setdefault(token_id, deque())
        wait = per_minute_wait(asked, now, s.questions_per_minute)
        if wait is not None:
            raise Refused(
                SERVICE_RATE_LIMITED,
                f"more than {s.questions_per_minute} questions a minute for this token",
                f"Wait {wait} s.",
                429,
                retry_after=wait,
            )
        mine = sum(1 for r in self.live.values() if r.token_id == token_id)
        if not counted:  # runs on workers: only the per-minute limit is this process's to keep
            asked.append(now)
            return
        if mine >= s.max_runs_per_token:
            raise Refused(
                SERVICE_BUSY,
                f"this token already has {mine} runs going (limit {s.max_runs_per_token})",
                "Wait for one to end, or cancel one (DELETE /runs/ID).",
                429,
                retry_after=5,
            )
        if len(self.live) >= s.max_runs_total + s.max_queued:
            raise Refused(
                SERVICE_BUSY,
                f"the server holds {len(self.live)} runs (limit "
                f"{s.max_runs_total} running + {s.max_queued} queued)",
                "Try again shortly.",
                429,
                retry_after=5,
            )
        asked.append(now)

    def _model_spec(self, asked: str | None) -> str:
        default = self.settings.model or agent_settings(self.kernel).model
        if asked is None or asked == default:
            return default
        if asked not in self.settings.models:
            allowed = ", ".join([default, *self.settings.models])
            raise Refused(
                SERVICE_MODEL_NOT_ALLOWED,
                f"model {asked!r} is not offered by this server",
                f"Use one of: {allowed}.",
                404,
            )
        return asked

    def _agent_settings(self, request: RunRequest) -> AgentSettings:
        s = self.settings
        base = agent_settings(self.kernel)
        wall = min(request.max_wall_s or s.run_wall_s, s.run_wall_s, base.max_wall_s)
        steps = min(request.max_steps or s.max_steps, s.max_steps)
        return base.model_copy(update={"max_wall_s": wall, "max_steps": steps})

    # --- runs -------------------------------------------------------------------

    async def start(
        self, owner: str, token_id: str, request: RunRequest, key: str | None = None
    ) -> LiveRun:
        """Admit and start (or enqueue) a run. With an Idempotency-Key ``key`` already used by ``owner``
        within ``idempotency_ttl_s``: that run (``replayed``), nothing new started. Catalog and broker I/O
        run on threads, never on the event loop."""
        spec = self._model_spec(request.model)
        fingerprint = _fingerprint(request, spec)
        if key is not None:
            earlier = await asyncio.to_thread(
                self.tokens.requested, owner, key, self.settings.idempotency_ttl_s
            )
            if earlier is not None:
                return self._replayed(owner, token_id, key, fingerprint, *earlier)
        if self.remote is not None and (request.files or request.inherits_files):
            raise Refused(
                SERVICE_FILES_ON_WORKERS,
                "questions over uploaded files are not run on workers yet",
                "Ask without files, or serve without ASSAY_BROKER_URL.",
                400,
            )
        if self.remote is not None:
            self._admit(token_id, counted=False)
            run_id = self.kernel.new_run(capture=False).run_id
            if key is not None:
                held = await asyncio.to_thread(
                    self.tokens.remember,
                    owner,
                    key,
                    fingerprint,
                    run_id,
                    self.settings.idempotency_ttl_s,
                )
                if held[0] != run_id:
                    return self._replayed(owner, token_id, key, fingerprint, *held)
            try:
                await asyncio.to_thread(self._enqueue, owner, run_id, request, spec)
            except BaseException:
                if key is not None:  # a 503: the client's retry with the same key must start a run
                    await asyncio.to_thread(
                        _quietly, self.tokens.forget_request, owner, key, run_id
                    )
                raise
            return LiveRun(run_id, owner, token_id)
        self._admit(token_id)
        run = self.kernel.new_run()
        run.artifact_scope = owner_scope(self.tokens, owner)  # tool inputs: this owner's runs only
        charge_to_owner(run, self.kernel, self.tokens, owner, self.settings)
        live = LiveRun(run.run_id, owner, token_id)
        self.live[run.run_id] = live  # counted at once: admission of the next request sees it
        try:
            if key is not None:
                held = await asyncio.to_thread(
                    self.tokens.remember,
                    owner,
                    key,
                    fingerprint,
                    run.run_id,
                    self.settings.idempotency_ttl_s,
                )
                if held[0] != run.run_id:
                    self.live.pop(run.run_id, None)
                    await asyncio.to_thread(run.close)
                    return self._replayed(owner, token_id, key, fingerprint, *held)
            await asyncio.to_thread(self.tokens.own, run.run_id, owner)
        except BaseException:
            self.live.pop(run.run_id, None)
            await asyncio.to_thread(run.close)
            if key is not None:
                await asyncio.to_thread(
                    _quietly, self.tokens.forget_request, owner, key, run.run_id
                )
            raise
        live.task = asyncio.get_running_loop().create_task(self._execute(live, run, request, spec))
        return live

    def _replayed(
        self, owner: str, token_id: str, key: str, fingerprint: str, run_id: str, held: str
    ) -> LiveRun:
        if held != fingerprint:
            raise Refused(
                SERVICE_IDEMPOTENCY_KEY_REUSED,
                "this Idempotency-Key was used for another request "
                "(another question, datasource, model or limits)",
                "Use a new key for a new request.",
                409,
            )
        return LiveRun(run_id, owner, token_id, state="", replayed=True)

    def _enqueue(self, owner: str, run_id: str, request: RunRequest, spec: str) -> None:
        """A run for a worker: recorded (queued) in the shared catalog, then sent to the broker (on a thread)."""
        self.tokens.own(run_id, owner)
        settings = self._agent_settings(request)
        try:
            self.remote.start(
                run_id,
                request.question,
                request.datasource,
                spec,
                settings.max_steps,
                settings.max_wall_s,
                parent_run_id=request.parent_run_id,
            )
        except (
            AssayError
        ) as exc:  # the broker did not take it: the run is recorded failed, never run here
            raise Refused(exc.code, exc.message, exc.hint, 503, retry_after=5) from None

    async def _execute(self, live: LiveRun, run: Any, request: RunRequest, spec: str) -> None:
        recorder = RunRecorder(self.kernel.runs)
        loop = asyncio.get_running_loop()

        def observe(event: AgentEvent) -> None:
            item = run_event(event.kind, event.run_id, event.step, event.at, event.data)
            try:
                running = asyncio.get_running_loop() is loop
            except RuntimeError:
                running = False
            if running:
                live.publish(item)
            else:  # a tool's worker thread
                loop.call_soon_threadsafe(live.publish, item)

        observers: list[AgentObserver] = [
            observe,
            recorder,
        ]  # watchers first: the stream does not wait for the SQLite write
        try:
            recorder.begin(run.run_id, request.question, spec, parent_run_id=request.parent_run_id)
            async with self._slots:
                live.state = "running"
                options = AskOptions(
                    question=request.question,
                    model=spec,
                    databases=[request.datasource] if request.datasource else [],
                    settings=self._agent_settings(request),
                    parent_run_id=request.parent_run_id,
                    files=list(request.files),
                    open_files=self._uploads_opener(run),
                    reopen_files=self._uploads_reopener(live.owner),
                )
                await aask(self.kernel, options, run=run, observers=observers, record_run=False)
        except asyncio.CancelledError:
            if live.state == "queued":  # cancelled before it ran: still recorded, with its status
                refused(
                    run.run_id,
                    request.question,
                    spec,
                    AssayError("SERVICE_RUN_CANCELLED", "cancelled while queued", "Ask again."),
                    observers,
                    status=_cancelled(),
                )
        except Exception as exc:  # noqa: BLE001 - a bug must still end the run with a status
            log.error("service_run_crashed", run_id=run.run_id, error=repr(exc))
            refused(
                run.run_id,
                request.question,
                spec,
                AssayError(
                    "SERVICE_RUN_FAILED",
                    f"{type(exc).__name__}: {exc}",
                    "A bug in the server; see its log.",
                ),
                observers,
                status=_failed(),
            )
        finally:
            await asyncio.to_thread(run.close)  # the sandbox session and SQL pools the run opened
            live.state = "ended"
            live.publish(None)
            self.live.pop(live.run_id, None)
            self.finished += 1

    def _uploads_opener(self, run: Any) -> Any:
        """``AskOptions.open_files`` for the run's uploads: one datasource of the run's own (not the
        kernel's: no other run lists, prompts or queries it), closed with the run."""
        if self.open_uploads is None:
            return None

        def opener(kernel: Any, patterns: list[str]) -> Any:
            name = f"uploads_{re.sub('[^a-z0-9]', '', run.run_id.lower())[-12:]}"
            return run.attach(self.open_uploads(name, patterns))

        return opener

    def _uploads_reopener(self, owner: str) -> Any:
        """``AskOptions.reopen_files`` for a follow-up: the parent's uploads, found again among the
        owner's files by id and checked against the parent's record, attached to the run alone."""
        if self.reopen_uploads is None:
            return None

        def reopener(kernel: Any, run: Any, record: dict[str, Any]) -> Any:
            name = f"uploads_{re.sub('[^a-z0-9]', '', run.run_id.lower())[-12:]}"
            reopened = self.reopen_uploads(owner, name, record)
            if reopened.resource is not None:
                run.attach(reopened.resource)
            return reopened

        return reopener

    def visible(self, run_id: str, owner: str) -> bool:
        return self.tokens.owner_of(run_id) == owner

    def cancel(self, run_id: str) -> bool:
        live = self.live.get(run_id)
        if live is None or live.task is None or live.task.done():
            return False
        live.task.cancel()
        return True

    def watch(self, run_id: str) -> tuple[list[dict[str, Any]], asyncio.Queue | None]:
        """What happened so far, and a queue of what follows (None when the run is not live)."""
        live = self.live.get(run_id)
        if live is None:
            return [], None
        queue: asyncio.Queue = asyncio.Queue(WATCHER_QUEUE)
        live.watchers.add(queue)
        return list(live.history), queue

    def unwatch(self, run_id: str, queue: asyncio.Queue) -> None:
        live = self.live.get(run_id)
        if live is not None:
            live.watchers.discard(queue)

    async def drain(self, grace_s: float) -> None:
        """Stop admitting; let running runs finish for ``grace_s``; cancel the rest and wait for them."""
        self.draining = True
        tasks = [r.task for r in self.live.values() if r.task is not None]
        if not tasks:
            return
        log.info("service_draining", runs=len(tasks), grace_s=grace_s)
        _, pending = await asyncio.wait(tasks, timeout=grace_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=30)


def _quietly(fn: Any, *args: Any) -> None:
    """``fn(*args)``, its error dropped: what failed first is what the client must see."""
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - the catalog that failed the request may fail this too
        pass


def _fingerprint(request: RunRequest, spec: str) -> str:
    """What makes two POST /runs the same request (for an Idempotency-Key used twice)."""
    asked = {
        "question": request.question,
        "datasource": request.datasource,
        "model": spec,
        "max_steps": request.max_steps,
        "max_wall_s": request.max_wall_s,
        **({"parent_run_id": request.parent_run_id} if request.parent_run_id else {}),
        **({"files": request.files} if request.files else {}),
    }
    return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()


def _remote_runs(kernel: Any) -> Any:
    """The broker's side of runs when ``ASSAY_BROKER_URL`` is set, else None (runs execute here)."""
    if not kernel.settings.provided("broker", "ASSAY_BROKER_"):
        return None
    from assay.plugins.worker.broker import configured

    if not configured(kernel.settings):
        return None
    from assay.plugins.worker.dispatch import RemoteRuns

    return RemoteRuns(kernel)


def _cancelled() -> Any:
    from assay.plugins.agent import RunStatus

    return RunStatus.CANCELLED


def _failed() -> Any:
    from assay.plugins.agent import RunStatus

    return RunStatus.FAILED
