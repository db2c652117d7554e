"""The fault table: the catalog or the broker blinks, an API or a worker dies at the worst moment.

Each test owns its PostgreSQL cluster and its Redis server (tests/worker/private_services.py) and kills
them for real (``pg_ctl -m immediate``; SIGKILL of a Redis without persistence), or kills `assay serve` /
`assay worker` at a fault point (``ASSAY_TEST_FAULT``). Each asserts 0 runs lost, 0 stuck past the
reconciler's bound, 0 executed twice, and every transcript complete or marked incomplete
(:func:`tests.worker.faults.assert_no_run_lost`).
"""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from tests.conftest import require
from tests.service.test_api import ask, events
from tests.worker.conftest import AMQP_URL, Cluster, _answers, _remove_queue
from tests.worker.faults import (
    PACED,
    REQUEUE_AFTER_S,
    assert_no_run_lost,
    catalog,
    settle,
)

pytest.importorskip("fastapi")
pytest.importorskip("dramatiq")
pytestmark = pytest.mark.timeout(300)


def _outage(pg, kind: str) -> None:
    if kind == "down 30 s":
        pg.down_for(30)
    elif kind == "down 5 s":
        pg.down_for(5)
    else:  # blinks: three short outages a second apart
        for _ in range(3):
            pg.down_for(0.5)
            time.sleep(1)


@pytest.mark.parametrize("outage", ["down 30 s", "blinks", "down 5 s"])
def test_a_catalog_outage_while_runs_are_queued_loses_no_run(
    tmp_path, fault_env, private_pg, outage
):
    cluster = Cluster(tmp_path, fault_env, workers=2, script=PACED)
    try:
        ids = [ask(cluster.api, datasource="sales")["run_id"] for _ in range(12)]
        _outage(private_pg, outage)
        figures = assert_no_run_lost(fault_env["ASSAY_CATALOG_URL"], ids, within_s=120)
        print("fault", outage, figures)
    finally:
        cluster.stop()


def test_a_catalog_outage_with_runs_queued_on_rabbitmq_loses_no_run(
    tmp_path, fault_env, private_pg
):
    require(_answers(5672), "rabbitmq on 127.0.0.1")
    queue = "assay_test_" + uuid.uuid4().hex[:10]
    env = {**fault_env, "ASSAY_BROKER_URL": AMQP_URL, "ASSAY_BROKER_QUEUE": queue}
    cluster = Cluster(tmp_path, env, workers=2, script=PACED)
    try:
        ids = [ask(cluster.api, datasource="sales")["run_id"] for _ in range(12)]
        _outage(private_pg, "down 5 s")
        figures = assert_no_run_lost(fault_env["ASSAY_CATALOG_URL"], ids, within_s=120)
        print("fault rabbitmq down 5 s", figures)
    finally:
        cluster.stop()
        _remove_queue("rabbitmq", AMQP_URL, queue)


def test_redis_restarted_without_persistence_loses_no_queued_run(
    tmp_path, fault_env, private_redis
):
    cluster = Cluster(tmp_path, fault_env, workers=0, script=PACED)
    try:
        ids = [ask(cluster.api, datasource="sales")["run_id"] for _ in range(10)]
        private_redis.kill()  # every message gone with it
        private_redis.start()
        cluster.add_worker()
        cluster.add_worker()
        figures = assert_no_run_lost(
            fault_env["ASSAY_CATALOG_URL"], ids, within_s=REQUEUE_AFTER_S * 3 + 60
        )
        print("fault redis restarted", figures)
    finally:
        cluster.stop()


def test_serve_killed_between_recording_a_run_and_enqueuing_it_loses_no_run(tmp_path, fault_env):
    cluster = Cluster(
        tmp_path, {**fault_env, "ASSAY_TEST_FAULT": "serve_recorded"}, workers=1, script=PACED
    )
    try:
        with pytest.raises(httpx.TransportError):
            httpx.post(
                f"{cluster.api.url}/runs",
                json={"question": "Which region?", "datasource": "sales"},
                headers=cluster.api.headers(),
                timeout=30,
            )
        assert cluster.api.proc.wait(timeout=30) == 70  # died at the fault point, after the record
        url = fault_env["ASSAY_CATALOG_URL"]
        ids = [r for (r,) in catalog(url, "SELECT run_id FROM runs")]
        assert len(ids) == 1
        figures = assert_no_run_lost(url, ids, within_s=REQUEUE_AFTER_S * 3 + 30)
        print("fault serve killed", figures)
    finally:
        cluster.stop()


def test_a_worker_dying_while_it_ends_its_run_leaves_it_lost_not_running(tmp_path, fault_env):
    cluster = Cluster(tmp_path, fault_env, workers=0, script=PACED)
    try:
        doomed = cluster.add_worker(env={"ASSAY_TEST_FAULT": "worker_ending"})
        run_id = ask(cluster.api, datasource="sales")["run_id"]
        assert doomed.wait(timeout=60) == 70  # died inside the transaction ending the lease
        cluster.add_worker()  # its sweep finds the lease lapsed
        url = fault_env["ASSAY_CATALOG_URL"]
        settle(url, [run_id], within_s=30)
        started = time.monotonic()
        streamed = [e["kind"] for e in events(cluster.api, run_id)]
        assert time.monotonic() - started < 10 and streamed[-1] == "run_finished"  # the stream ends
        figures = assert_no_run_lost(url, [run_id], within_s=1, allowed=("failed",))
        error = catalog(url, "SELECT error FROM runs WHERE run_id = %s", run_id)[0][0]
        assert "RUN_WORKER_LOST" in error
        print("fault worker dies ending", figures)
    finally:
        cluster.stop()
