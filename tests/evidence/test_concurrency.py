"""Many captures at once (threads and processes), and a capture killed half-way."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from assay.kernel.evidence import capture_sql_execution, read_artifact_result
from assay.kernel.evidence.maintenance import collect_garbage, verify_all
from tests.evidence.conftest import make_kernel

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog

N = 32


def _capture_one(sink, i: int):
    rows = ((i, j, f"worker {i} row {j}") for j in range(2_000 + i))
    return capture_sql_execution(
        sink,
        columns=["worker", "j", "text"],
        rows=rows,
        sql=f"select {i}",
        database="db",
        dialect="sqlite",
        elapsed_ms=0,
    )


def test_32_threads_capture_at_once(sink):
    records, errors = [None] * N, []
    barrier = threading.Barrier(N)

    def work(i):
        try:
            barrier.wait()
            records[i] = _capture_one(sink, i)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sink.catalog.count(sink.run_id) == N and len({r.artifact_id for r in records}) == N
    for i, r in enumerate(records):
        assert r.row_count == 2_000 + i
        assert (
            read_artifact_result(sink, r.artifact_id, {"path": [-1, "text"]}).value
            == f"worker {i} row {1_999 + i}"
        )


def _process_worker(i: int, run_id: str, barrier, queue) -> None:
    try:
        sink = make_kernel().new_run(run_id=run_id).artifacts
        barrier.wait()
        queue.put((i, _capture_one(sink, i).artifact_id))
    except Exception as exc:  # noqa: BLE001
        queue.put((i, f"error: {exc!r}"))


def test_32_processes_capture_into_one_catalog(home):
    ctx = multiprocessing.get_context("fork")
    barrier, queue = ctx.Barrier(N), ctx.Queue()
    run_id = "run_multiproc"
    procs = [
        ctx.Process(target=_process_worker, args=(i, run_id, barrier, queue)) for i in range(N)
    ]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=120) for _ in range(N))
    for p in procs:
        p.join(timeout=60)
    assert all(p.exitcode == 0 for p in procs)
    assert not [v for v in results.values() if v.startswith("error")], results
    kernel = make_kernel()
    catalog = kernel.new_run().artifacts.catalog
    assert catalog.count(run_id) == N
    assert verify_all(catalog).healthy
    assert {r.artifact_id for r in catalog.iter(run_id)} == set(results.values())


_KILLED_CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from tests.evidence.conftest import make_kernel
    from assay.kernel.evidence import capture_sql_execution

    marker = Path(sys.argv[1])
    sink = make_kernel().new_run(run_id="run_killed").artifacts

    def rows():
        for i in range(10_000_000):
            if i == 300_000:
                marker.write_text("halfway")
                time.sleep(120)
            yield (i, "row %d" % i, i * 0.25)

    capture_sql_execution(sink, columns=["i", "s", "f"], rows=rows(), sql="select big",
                          database="db", dialect="sqlite", elapsed_ms=0)
    print("finished", flush=True)
""")


def test_capture_killed_half_way_leaves_no_visible_artifact(home, tmp_path):
    marker = tmp_path / "halfway"
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CHILD, str(marker)],
        cwd=Path(__file__).parents[2],
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, child.stderr.read().decode()
            assert time.monotonic() < deadline, "the child never got half-way"
            time.sleep(0.05)
        staged = list((home / "artifacts" / "tmp").glob("*.partial"))
        assert (
            staged and staged[0].stat().st_size > 1_000_000
        )  # it really was half-way through writing
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    catalog = make_kernel().new_run().artifacts.catalog
    assert catalog.count() == 0
    content = home / "artifacts" / "content"
    assert not content.exists() or not [p for p in content.rglob("*") if p.is_file()]
    report = collect_garbage(catalog, grace_s=3600)
    assert report.staging_removed == 1  # its owner is dead, so it goes at once
    assert not list((home / "artifacts" / "tmp").glob("*.partial"))
