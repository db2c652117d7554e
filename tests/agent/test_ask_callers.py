"""One way to run a question: ``assay ask``, the service's runs and a worker's runs all go through
:func:`assay.plugins.agent.ask.aask`, so what it does is the same for the three callers (each test runs once
per caller). The service and the workers had copies of it that had drifted: a blank question made
the model and connected the databases before it was refused, and a cancel while a database connected
was not seen (the service left the run ``running``; a worker saw it only once the model was asked)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from assay.kernel.resources import Resource, ResourceType

CALLERS = ["cli", "service", "worker"]
UNMAKEABLE = "scripted:/nonexistent/script.json"  # a model spec that fails when the model is made
WAIT_S = 20.0


class ConnectingDatabase(Resource):
    """A datasource whose connection check (``tables()``) hangs until the test releases it."""

    type = ResourceType.DATABASE

    def __init__(self, name: str) -> None:
        self.name = name
        self.connecting = threading.Event()
        self.release = threading.Event()

    def tables(self) -> list[str]:
        self.connecting.set()
        self.release.wait(WAIT_S)
        return []

    def get_prompt(self, budget=None) -> str:
        return f"database {self.name}"


@pytest.fixture(params=CALLERS)
def caller(request, make_assay_kernel, monkeypatch):
    """(name, kernel): the kernel a caller answers with (a worker's on a PostgreSQL catalog, as in production)."""
    from assay.plugins import runs_plugin
    from assay.plugins.models import scripted

    if request.param == "worker":
        pytest.importorskip("dramatiq")
        monkeypatch.setenv("ASSAY_CATALOG_URL", request.getfixturevalue("pg_catalog_url"))
    return request.param, make_assay_kernel(scripted, runs_plugin).start()


def ask_through(
    name: str,
    kernel,
    question: str,
    model: str,
    datasource: str | None = None,
    cancel_when: ConnectingDatabase | None = None,
):
    """Ask ``question`` the way caller ``name`` does; with ``cancel_when``: cancel the run the caller's way once
    that database is connecting, and release it once the run is recorded ended. The run's record."""
    run = {"service": _via_service, "worker": _via_worker, "cli": _via_cli}[name]
    run_id = run(kernel, question, model, datasource, cancel_when)
    return kernel.runs.get(run_id)


def _ended(kernel, run_id: str | None) -> bool:
    record = kernel.runs.get(run_id) if run_id else None
    return record is not None and record.status not in ("queued", "running")


async def _released_once_ended(kernel, database: ConnectingDatabase, run_id: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not await asyncio.to_thread(_ended, kernel, run_id) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    database.release.set()


def _via_cli(kernel, question, model, datasource, database):
    from assay.plugins.agent.ask import AskOptions, aask, ask

    options = AskOptions(
        question=question, model=model, databases=[datasource] if datasource else []
    )
    if database is None:
        return ask(kernel, options).run_id  # what `assay ask` calls

    async def cancelled() -> str:  # Ctrl-C: asyncio.run cancels the task
        events = []
        task = asyncio.ensure_future(aask(kernel, options, observers=[events.append]))
        await asyncio.to_thread(database.connecting.wait, WAIT_S)
        task.cancel()
        await _released_once_ended(kernel, database, events[0].run_id if events else None)
        with pytest.raises(asyncio.CancelledError):
            await task
        return events[0].run_id

    return asyncio.run(cancelled())


def _via_service(kernel, question, model, datasource, database):
    from assay.plugins.service.runner import RunManager, RunRequest
    from assay.plugins.service.settings import ServiceSettings
    from assay.plugins.service.tokens import TokenStore, store_path

    async def run() -> str:
        tokens = TokenStore(store_path(kernel.settings.home))
        manager = RunManager(kernel, ServiceSettings(model=model), tokens)
        live = await manager.start(
            "alice", "token_1", RunRequest(question=question, datasource=datasource)
        )
        if database is not None:  # DELETE /runs/ID
            await asyncio.to_thread(database.connecting.wait, WAIT_S)
            assert manager.cancel(live.run_id)
            await _released_once_ended(kernel, database, live.run_id)
        await asyncio.wait_for(live.task, WAIT_S)
        return live.run_id

    return asyncio.run(run())


def _via_worker(kernel, question, model, datasource, database):
    from assay.plugins.runs import RunRecord
    from assay.plugins.worker.dispatch import open_leases
    from assay.plugins.worker.execute import Executor
    from assay.plugins.worker.messages import RunMessage
    from assay.plugins.worker.settings import BrokerSettings

    leases = open_leases(kernel.settings)
    run_id = kernel.new_run(capture=False).run_id
    message = RunMessage(
        run_id=run_id,
        question=question,
        datasource=datasource,
        model=model,
        max_steps=5,
        max_wall_s=60.0,
        enqueued_at=time.time(),
    )
    at = leases.create(run_id, message.model_dump_json())  # what the API records before it enqueues
    kernel.runs.start(
        RunRecord(run_id=run_id, question=question, model=model, status="queued", started_at=at)
    )
    executor = Executor(kernel, BrokerSettings(poll_s=0.05), leases)
    worker = threading.Thread(target=executor.handle, args=(message.model_dump(),))
    worker.start()
    if database is not None:  # DELETE /runs/ID of a run on a worker: asked through the catalog
        assert database.connecting.wait(WAIT_S)
        leases.request_cancel(run_id)
        deadline = time.monotonic() + WAIT_S
        while not _ended(kernel, run_id) and time.monotonic() < deadline:
            time.sleep(0.05)
        database.release.set()
    worker.join(WAIT_S * 2)
    assert not worker.is_alive()
    return run_id


def test_a_blank_question_is_refused_before_the_model_is_made_by_every_caller(caller):
    name, kernel = caller
    record = ask_through(name, kernel, "   ", UNMAKEABLE)  # the model cannot be made: never tried
    assert record.status == "invalid_input"
    assert record.error["code"] == "AGENT_QUESTION_EMPTY"


def test_a_model_that_cannot_be_made_is_refused_with_its_code_by_every_caller(caller):
    name, kernel = caller
    record = ask_through(name, kernel, "How many?", UNMAKEABLE)
    assert record.status == "invalid_input"
    assert record.error["code"] == "MODEL_CONFIG_INVALID"


def test_a_cancel_while_a_database_connects_ends_the_run_cancelled_before_the_model_for_every_caller(
    caller,
):
    name, kernel = caller
    database = kernel.attach(ConnectingDatabase("connecting"))
    try:
        record = ask_through(
            name, kernel, "How many?", "scripted", "connecting", cancel_when=database
        )
    finally:
        database.release.set()
    assert record.status == "cancelled"
    assert record.status_reason == "cancelled before the model was asked"
    assert "model_request" not in [e.kind for e in kernel.runs.events(record.run_id)]
