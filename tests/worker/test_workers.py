"""Runs on `assay worker` processes through a broker, on Redis and on RabbitMQ (loopback, bounded).

One API process, three workers, the catalog on PostgreSQL, content in the S3
store (moto): every run ends with a status exactly once, a worker killed
mid-run leaves an honest status, a cancel reaches a run on a worker.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter

import httpx
import pytest

from tests.evidence.conftest import s3_endpoint  # noqa: F401 - a fixture
from tests.service.test_api import ask, events
from tests.worker.conftest import SLOW, Cluster

pytest.importorskip("fastapi")
pytest.importorskip("dramatiq")
pytestmark = pytest.mark.timeout(300)


def ended(cluster: Cluster, run_id: str, within_s: float = 60) -> dict:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        run = httpx.get(
            f"{cluster.api.url}/runs/{run_id}", headers=cluster.api.headers(), timeout=30
        ).json()
        if run["status"] not in ("queued", "running"):
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not end within {within_s} s")


def catalog(url: str, sql: str, *args) -> list[tuple]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()


def running_on(cluster: Cluster, run_id: str, within_s: float = 60) -> int:
    """The pid of the worker holding the run, once its tool call has started."""
    url = cluster.shared["ASSAY_CATALOG_URL"]
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        started = catalog(
            url,
            "SELECT count(*) FROM run_events WHERE run_id = %s AND kind = 'tool_started'",
            run_id,
        )
        lease = catalog(
            url, "SELECT worker FROM run_leases WHERE run_id = %s AND state = 'running'", run_id
        )
        if started[0][0] and lease:
            return int(lease[0][0].split(":")[1])
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not start its tool call")


def test_a_hundred_runs_on_three_workers_each_end_exactly_once(tmp_path, shared_env):
    cluster = Cluster(tmp_path, shared_env, workers=3)
    try:
        ids = [ask(cluster.api, datasource="sales")["run_id"] for _ in range(100)]
        streamed = [
            e["kind"] for e in events(cluster.api, ids[0])
        ]  # SSE, read back from the catalog
        runs = [ended(cluster, i, within_s=120) for i in ids]
        assert Counter(r["status"] for r in runs) == {"answered": 100}
        url = shared_env["ASSAY_CATALOG_URL"]
        finished = dict(
            catalog(
                url,
                "SELECT run_id, count(*) FROM run_events WHERE kind = 'run_finished' "
                "GROUP BY run_id",
            )
        )
        assert finished == dict.fromkeys(ids, 1)  # each run ended once, none twice, none lost
        leases = catalog(url, "SELECT state, attempts, worker FROM run_leases")
        assert len(leases) == 100 and {(s, a) for s, a, _ in leases} == {("ended", 1)}
        assert len({w for _, _, w in leases}) == 3  # all three workers took runs
        assert (
            streamed[0] == "run_started"
            and streamed[-1] == "run_finished"
            and "tool_finished" in streamed
        )
        aid = runs[0]["artifact_ids"][
            0
        ]  # captured on a worker, read and verified on the API's host
        content = httpx.get(
            f"{cluster.api.url}/artifacts/{aid}", headers=cluster.api.headers(), timeout=30
        )
        assert content.status_code == 200
        assert content.headers["etag"] == f'"{hashlib.sha256(content.content).hexdigest()}"'
        rows = httpx.get(
            f"{cluster.api.url}/artifacts/{aid}",
            params={"rows": "0:1"},
            headers=cluster.api.headers(),
            timeout=30,
        ).json()
        assert rows["verified"] is True and rows["rows"][0][0] == "east"
    finally:
        cluster.stop()


def test_a_worker_killed_mid_run_leaves_the_run_failed_with_the_reason_once(tmp_path, shared_env):
    cluster = Cluster(tmp_path, shared_env, workers=2, script=SLOW)
    try:
        run_id = ask(cluster.api)["run_id"]
        cluster.kill(running_on(cluster, run_id))
        run = ended(cluster, run_id, within_s=60)
        assert run["status"] == "failed" and run["error"]["code"] == "RUN_WORKER_LOST"
        time.sleep(
            float(shared_env["ASSAY_BROKER_REDELIVERY_S"]) + 3
        )  # the redelivered message comes back...
        url = shared_env["ASSAY_CATALOG_URL"]
        kinds = [
            k
            for (k,) in catalog(
                url, "SELECT kind FROM run_events WHERE run_id = %s ORDER BY seq", run_id
            )
        ]
        assert (
            kinds.count("run_finished") == 1 and kinds.count("run_started") == 1
        )  # ...and is not run again
        assert catalog(url, "SELECT state, attempts FROM run_leases WHERE run_id = %s", run_id) == [
            ("ended", 1)
        ]
        assert ended(cluster, run_id)["status"] == "failed"
    finally:
        cluster.stop()


@pytest.mark.parametrize("broker_url", ["redis"], indirect=True)
def test_a_cancel_reaches_a_run_on_a_worker(tmp_path, shared_env):
    cluster = Cluster(tmp_path, shared_env, workers=1, script=SLOW)
    try:
        run_id = ask(cluster.api)["run_id"]
        running_on(cluster, run_id)
        started = time.monotonic()
        gone = httpx.delete(
            f"{cluster.api.url}/runs/{run_id}", headers=cluster.api.headers(), timeout=60
        ).json()
        assert gone["status"] == "cancelled" and time.monotonic() - started < 10
    finally:
        cluster.stop()
