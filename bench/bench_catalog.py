"""The catalog database: small captures and run events per second, SQLite (default) vs PostgreSQL.

    python bench/bench_catalog.py [--pg postgresql://postgres@127.0.0.1:5432/test] [--n 300] [--procs 4]

Each figure is the best of 3: ``n`` small captures (a 3-row SQL result: the
content written to the local store, the record to the catalog) and ``n``
run events (``RunStore.append``, one commit each), by 1 process and by
``procs`` processes at once into one catalog. PostgreSQL gets a fresh schema,
dropped at the end. Figures depend on the machine and its load; the point is
the ratio between the backends on one machine at one time.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _work(env: dict[str, str], what: str, n: int, tag: str, barrier) -> None:
    os.environ.update(env)
    from assay import Kernel, Settings
    from assay.kernel.evidence import capture_sql_execution
    from assay.plugins.runs import RunRecord

    kernel = Kernel(
        load_entrypoints=False,
        plugins=["assay.plugins.artifact_stores.local", "assay.plugins.runs_plugin"],
        settings=Settings.from_env(),
    )
    run = kernel.new_run(run_id=f"run_{tag}")
    kernel.runs.start(RunRecord(run_id=run.run_id, question="bench", started_at=time.time()))
    kernel.runs.append(run.run_id, "warm", 0, time.time(), {})
    capture_sql_execution(
        run.artifacts,
        columns=["a"],
        rows=[(tag,)],
        sql="warm",
        database="db",
        dialect="sqlite",
        elapsed_ms=0,
    )  # imports and the store's folders before the clock starts
    barrier.wait()
    for i in range(n):
        if what == "capture":
            capture_sql_execution(
                run.artifacts,
                columns=["a", "b"],
                rows=[(i, "x"), (i + 1, "y"), (i + 2, "z")],
                sql=f"select {i}",
                database="db",
                dialect="sqlite",
                elapsed_ms=0,
            )
        else:
            kernel.runs.append(
                run.run_id, "note", i, time.time(), {"i": i, "text": "an event of a run"}
            )
    kernel.close()


def rate(env: dict[str, str], what: str, n: int, procs: int) -> float:
    ctx = multiprocessing.get_context("fork")
    best = 0.0
    for _ in range(3):
        barrier = ctx.Barrier(procs + 1)
        ps = [
            ctx.Process(target=_work, args=(env, what, n, uuid.uuid4().hex[:8], barrier))
            for _ in range(procs)
        ]
        for p in ps:
            p.start()
        barrier.wait()
        t = time.perf_counter()
        for p in ps:
            p.join()
        elapsed = time.perf_counter() - t
        assert all(p.exitcode == 0 for p in ps)
        best = max(best, n * procs / elapsed)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--procs", type=int, default=4)
    args = ap.parse_args()
    import psycopg

    schema = "assay_bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(args.pg, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        backends = {
            "sqlite": {},
            "postgresql": {"ASSAY_CATALOG_URL": f"{args.pg}?options=-csearch_path%3D{schema}"},
        }
        print(f"{args.n} per process, best of 3; cores: {os.cpu_count()}")
        print(f"{'':28}{'sqlite':>12}{'postgresql':>12}")
        for what in ("capture", "event"):
            for procs in (1, args.procs):
                row = []
                for extra in backends.values():
                    home = tempfile.mkdtemp(prefix="assay-bench-")
                    env = {"ASSAY_HOME": home, **extra}
                    row.append(rate(env, what, args.n, procs))
                label = f"{what}s/s, {procs} process{'es' if procs > 1 else ''}"
                print(f"{label:28}{row[0]:12.0f}{row[1]:12.0f}")
    finally:
        with psycopg.connect(args.pg, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    main()
