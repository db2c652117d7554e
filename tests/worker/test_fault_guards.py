"""A worker's own guards: it drains on SIGTERM, writes nothing once its run was declared lost, refuses an
ASSAY_HOME it cannot write, and takes a run's times from the catalog's clock, not its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.service.test_api import ask
from tests.worker.conftest import SLOW, Cluster
from tests.worker.faults import PACED, assert_no_run_lost, catalog, settle
from tests.worker.test_workers import running_on

pytest.importorskip("fastapi")
pytest.importorskip("dramatiq")
pytestmark = pytest.mark.timeout(300)

# a code cell that sleeps (the worker is frozen meanwhile), then a query whose result is captured
FROZEN = [
    {
        "tool": "code_interpreter",
        "arguments": {"code": "import time\ntime.sleep(6)\nprint('slept')"},
    },
    {"tool": "sql_query", "arguments": {"sql": "SELECT region FROM sales LIMIT 2"}},
    {"text": "Done."},
]


def test_sigterm_drains_then_cancels_what_still_runs_and_the_run_ends_cancelled(
    tmp_path, fault_env
):
    cluster = Cluster(tmp_path, fault_env, workers=0, script=SLOW)
    try:
        worker = cluster.add_worker(args=("--drain", "1"))
        run_id = ask(cluster.api)["run_id"]
        running_on(cluster, run_id)
        started = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
        assert (
            time.monotonic() - started < 15
        )  # 1 s of drain, then the cancel is recorded and it exits
        url = fault_env["ASSAY_CATALOG_URL"]
        status, error = catalog(url, "SELECT status, error FROM runs WHERE run_id = %s", run_id)[0]
        assert status == "cancelled", (status, error)
        assert_no_run_lost(url, [run_id], within_s=1, allowed=("cancelled",))
    finally:
        cluster.stop()


def test_a_worker_frozen_past_its_lease_writes_nothing_after_its_run_was_declared_lost(
    tmp_path, fault_env
):
    cluster = Cluster(tmp_path, fault_env, workers=0, script=FROZEN)
    url = fault_env["ASSAY_CATALOG_URL"]
    try:
        frozen = cluster.add_worker()
        run_id = ask(cluster.api, datasource="sales")["run_id"]
        running_on(cluster, run_id)
        os.kill(frozen.pid, signal.SIGSTOP)
        try:
            cluster.add_worker()  # its sweep declares the run lost once the lease lapses
            settle(url, [run_id], within_s=30)
        finally:
            os.kill(frozen.pid, signal.SIGCONT)
        lost = catalog(url, "SELECT max(seq) FROM run_events WHERE run_id = %s", run_id)[0][0]
        artifacts = _artifacts(url, run_id)
        time.sleep(
            8
        )  # the thawed worker finishes its cell and would record it, then query and capture
        after = catalog(
            url, "SELECT seq, kind FROM run_events WHERE run_id = %s AND seq > %s", run_id, lost
        )
        assert after == []
        assert _artifacts(url, run_id) == artifacts
        status, error = catalog(url, "SELECT status, error FROM runs WHERE run_id = %s", run_id)[0]
        assert status == "failed" and json.loads(error)["code"] == "RUN_WORKER_LOST"
    finally:
        cluster.stop()


def _artifacts(url: str, run_id: str) -> int:
    if catalog(url, "SELECT to_regclass('artifacts') IS NULL")[0][0]:
        return 0  # no artifact was ever recorded
    return catalog(url, "SELECT count(*) FROM artifacts WHERE run_id = %s", run_id)[0][0]


def test_a_worker_refuses_to_consume_on_an_assay_home_it_cannot_write(tmp_path, fault_env):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env.update(fault_env)
    env["ASSAY_HOME"] = str(
        blocker / "home"
    )  # under a file: nothing can be created there, not even by root
    try:
        out = subprocess.run(
            [sys.executable, "-m", "assay.kernel.cli", "worker"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(
            "the worker started consuming on an ASSAY_HOME it cannot write"
        ) from None
    assert out.returncode != 0 and "WORKER_HOME_UNWRITABLE" in out.stderr, out.stderr


SKEW = "import time as _t\n_real = _t.time\n_t.time = lambda: _real() - 110.0\n"


def test_run_times_come_from_the_catalogs_clock_whatever_the_workers_clock_says(
    tmp_path, fault_env
):
    shim = tmp_path / "skewed"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(SKEW)  # this worker's clock is 110 s behind
    cluster = Cluster(tmp_path, fault_env, workers=0, script=PACED)
    try:
        cluster.add_worker(
            env={"PYTHONPATH": f"{shim}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        )
        run_id = ask(cluster.api, datasource="sales")["run_id"]
        settle(fault_env["ASSAY_CATALOG_URL"], [run_id], within_s=60)
        run = httpx.get(
            f"{cluster.api.url}/runs/{run_id}", headers=cluster.api.headers(), timeout=30
        ).json()
        assert run["status"] == "answered"
        assert 0 <= run["ended_at"] - run["started_at"] < 30, run
        assert 0 <= run["queued_s"] < 30, run
    finally:
        cluster.stop()
