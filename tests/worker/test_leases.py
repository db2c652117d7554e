"""Run leases in the shared catalog (PostgreSQL): one claim wins, a lapsed lease is taken once, a lost
worker writes no final status, a broker that refuses the message fails the run at once."""

from __future__ import annotations

import socket
import time

import pytest

pytest.importorskip("dramatiq")


@pytest.fixture
def kernel(pg_catalog_url, monkeypatch):
    from assay import Kernel, Settings

    monkeypatch.setenv("ASSAY_CATALOG_URL", pg_catalog_url)
    k = Kernel(
        load_entrypoints=False, plugins=["assay.plugins.runs_plugin"], settings=Settings.from_env()
    )
    k.start()
    yield k
    k.close()


@pytest.fixture
def leases(kernel):
    from assay.plugins.worker.dispatch import open_leases

    return open_leases(kernel.settings)


def test_of_two_workers_claiming_one_run_exactly_one_gets_it(leases):
    leases.create("run_a")
    assert [leases.claim("run_a", w, 10) is not None for w in ("w1", "w2")] == [True, False]
    assert leases.get("run_a").worker == "w1" and leases.get("run_a").attempts == 1


def test_a_lapsed_lease_is_taken_by_one_sweep_and_its_worker_then_cannot_finish(leases):
    leases.create("run_b")
    assert leases.claim("run_b", "w1", 0.05)
    time.sleep(0.2)
    assert leases.take_lapsed() == [("run_b", "w1")] and leases.take_lapsed() == []
    assert not leases.renew("run_b", "w1", 10) and leases.finish("run_b", "w1") is None
    assert leases.claim("run_b", "w2", 10) is None  # a redelivered message does not run it again


def test_a_cancel_of_a_queued_run_keeps_workers_from_claiming_it(leases):
    leases.create("run_c")
    assert leases.request_cancel("run_c") == "queued" and leases.claim("run_c", "w1", 10) is None
    assert leases.end_unclaimed("run_c") and leases.get("run_c").state == "ended"


def test_the_lost_worker_sweep_marks_the_run_failed_with_the_reason(kernel, leases):
    from assay.plugins.runs import RunRecord
    from assay.plugins.worker.execute import Executor
    from assay.plugins.worker.settings import BrokerSettings

    kernel.runs.start(RunRecord(run_id="run_d", question="q", started_at=time.time()))
    leases.create("run_d")
    assert leases.claim("run_d", "host:1:dead", 0.05)
    time.sleep(0.2)
    assert Executor(kernel, BrokerSettings(), leases).sweep() == 1
    record = kernel.runs.get("run_d")
    assert record.status == "failed" and record.error["code"] == "RUN_WORKER_LOST"
    assert [e.kind for e in kernel.runs.events("run_d")] == ["run_finished"]


def test_a_broker_that_does_not_take_the_message_fails_the_run_at_once(request, monkeypatch):
    from assay.kernel.errors import AssayError
    from assay.plugins.worker.dispatch import RemoteRuns

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ASSAY_BROKER_URL", f"redis://127.0.0.1:{port}/0")
    monkeypatch.setenv("ASSAY_BROKER_CONNECT_TIMEOUT_S", "1")
    kernel = request.getfixturevalue("kernel")  # made with the broker settings above
    remote = RemoteRuns(kernel)
    with pytest.raises(AssayError) as refused:
        remote.start("run_e", "q", None, "scripted", 5, 30.0)
    assert refused.value.code == "BROKER_UNAVAILABLE"
    record = kernel.runs.get("run_e")
    assert record.status == "failed" and record.error["code"] == "BROKER_UNAVAILABLE"


def test_a_message_a_worker_cannot_read_fails_its_run_instead_of_leaving_it_queued(kernel, leases):
    from assay.plugins.runs import RunRecord
    from assay.plugins.worker.execute import Executor
    from assay.plugins.worker.settings import BrokerSettings

    kernel.runs.start(
        RunRecord(run_id="run_f", question="q", status="queued", started_at=time.time())
    )
    leases.create("run_f")
    Executor(kernel, BrokerSettings(), leases).handle(
        {"version": 3, "run_id": "run_f", "question": "q"}
    )
    record = kernel.runs.get("run_f")
    assert record.status == "failed" and record.error["code"] == "WORKER_MESSAGE_INVALID"
    assert leases.get("run_f").state == "ended"


def test_a_follow_up_on_a_worker_that_reads_only_version_1_fails_instead_of_running_without_its_thread(
    kernel, leases, monkeypatch
):
    from typing import Literal

    from pydantic import BaseModel, ConfigDict

    from assay.plugins.runs import RunRecord
    from assay.plugins.worker import execute
    from assay.plugins.worker.messages import RunMessage
    from assay.plugins.worker.settings import BrokerSettings

    class RunMessageV1(BaseModel):  # the format of a worker from before threads
        model_config = ConfigDict(extra="forbid", frozen=True)
        version: Literal[1] = 1
        run_id: str
        question: str
        datasource: str | None = None
        model: str
        max_steps: int
        max_wall_s: float
        enqueued_at: float

    monkeypatch.setattr(execute, "RunMessage", RunMessageV1)
    kernel.runs.start(
        RunRecord(run_id="run_g", question="and by month?", status="queued", started_at=time.time())
    )
    leases.create("run_g")
    message = RunMessage(
        version=2,
        run_id="run_g",
        question="and by month?",
        model="scripted",
        max_steps=5,
        max_wall_s=30.0,
        enqueued_at=time.time(),
        parent_run_id="run_a",
    )
    execute.Executor(kernel, BrokerSettings(), leases).handle(message.model_dump())
    record = kernel.runs.get("run_g")
    assert record.status == "failed" and record.error["code"] == "WORKER_MESSAGE_INVALID"
