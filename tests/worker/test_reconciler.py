"""Queued runs whose message is gone are enqueued again, once per bound, or failed past the second bound; a
message whose claim keeps meeting a catalog outage is retried, then dead-lettered, never acknowledged."""

from __future__ import annotations

import json
import socket
import time
import uuid

import pytest

from tests.conftest import require
from tests.worker.conftest import REDIS_URL, _answers, _remove_queue

pytest.importorskip("dramatiq")


@pytest.fixture
def queue(monkeypatch, pg_catalog_url):
    require(_answers(6379), "redis on 127.0.0.1")
    name = "assay_test_" + uuid.uuid4().hex[:10]
    monkeypatch.setenv("ASSAY_CATALOG_URL", pg_catalog_url)
    monkeypatch.setenv("ASSAY_BROKER_URL", REDIS_URL)
    monkeypatch.setenv("ASSAY_BROKER_QUEUE", name)
    yield name
    _remove_queue("redis", REDIS_URL, name)


@pytest.fixture
def kernel(queue):
    from assay import Kernel, Settings

    k = Kernel(
        load_entrypoints=False, plugins=["assay.plugins.runs_plugin"], settings=Settings.from_env()
    )
    k.start()
    yield k
    k.close()


def _executor(kernel, **bounds):
    from assay.plugins.worker.broker import Broker, broker_settings
    from assay.plugins.worker.dispatch import open_leases
    from assay.plugins.worker.execute import Executor

    settings = broker_settings(kernel.settings).model_copy(update=bounds)
    return Executor(kernel, settings, open_leases(kernel.settings), broker=Broker(settings))


def _messages(executor) -> int:
    return int(executor.broker.broker.client.hlen(f"dramatiq:{executor.settings.queue}.msgs"))


def test_a_queued_run_whose_message_is_gone_is_enqueued_again_once_per_bound(kernel):
    from assay.plugins.worker.dispatch import RemoteRuns

    RemoteRuns(kernel).start("run_r1", "q", None, "scripted", 5, 30.0)
    executor = _executor(kernel, requeue_after_s=1.0, queue_expiry_s=60.0)
    executor.broker.flush()  # the message is lost (a Redis restarted without persistence)
    assert (
        executor.reconcile()["requeued"] == 0 and _messages(executor) == 0
    )  # not before the bound
    time.sleep(1.2)
    assert (
        executor.reconcile()["requeued"] == 1 and executor.reconcile()["requeued"] == 0
    )  # once per bound
    assert _messages(executor) == 1
    assert kernel.runs.get("run_r1").status == "queued"


def test_a_run_no_worker_took_past_the_second_bound_is_failed_with_its_code(kernel):
    from assay.plugins.worker.dispatch import RemoteRuns

    RemoteRuns(kernel).start("run_r2", "q", None, "scripted", 5, 30.0)
    executor = _executor(kernel, requeue_after_s=60.0, queue_expiry_s=1.0)
    time.sleep(1.2)
    assert executor.reconcile()["expired"] == 1
    record = kernel.runs.get("run_r2")
    assert record.status == "failed" and record.error["code"] == "RUN_QUEUE_EXPIRED"
    assert [e.kind for e in kernel.runs.events("run_r2")] == ["run_finished"]
    assert executor.leases.get("run_r2").state == "ended"
    assert executor.reconcile() == {"requeued": 0, "expired": 0, "cancelled": 0}  # ended once


def test_a_claim_that_meets_a_catalog_outage_is_retried_then_dead_lettered_and_reported(
    kernel, capsys
):
    import dramatiq

    from assay.plugins.worker.messages import RunMessage

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    executor = _executor(kernel, claim_retries=2, retry_min_backoff_s=0.05, retry_max_backoff_s=0.1)
    down = type(executor.leases)(_down_database(closed))
    executor.leases = down  # every claim: CATALOG_UNAVAILABLE
    attempts = []
    handle = executor.handle

    def counted(payload):
        attempts.append(time.monotonic())
        return handle(payload)

    executor.broker.actor.fn = counted
    executor.broker.enqueue(
        RunMessage(
            run_id="run_r3",
            question="q",
            model="scripted",
            max_steps=5,
            max_wall_s=30.0,
            enqueued_at=time.time(),
        )
    )
    worker = dramatiq.Worker(executor.broker.broker, worker_threads=1, worker_timeout=50)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while executor.broker.dead_letters() == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        worker.stop(timeout=5000)
    assert (
        executor.broker.dead_letters() == 1 and len(attempts) == 3
    )  # the first try and two retries
    dead = executor.broker.broker.client.hvals(f"dramatiq:{executor.settings.queue}.XQ.msgs")
    assert json.loads(dead[0])["args"][0]["run_id"] == "run_r3"
    from assay.kernel.log import get_logger
    from assay.plugins.worker.cli import _report_dead_letters

    assert _report_dead_letters(executor.broker, executor.settings, get_logger("test"), None) == 1
    assert (
        f"1 message(s) in the dead-letter queue {executor.settings.queue}.XQ"
        in capsys.readouterr().err
    )


def _down_database(port: int):
    from assay.kernel.database_pg import PostgresDatabase

    return PostgresDatabase(f"postgresql://postgres@127.0.0.1:{port}/test?connect_timeout=1")
