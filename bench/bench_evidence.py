"""Evidence-store figures, each beside a baseline measured in the same run.

1. Capturing 1,000,000 rows x 8 columns from SQLite vs a raw cursor.fetchall()
   of the same query (target: at most 1.6x).
2. Peak memory growth of that capture (target: at most 64 MiB), beside a
   materialise-everything baseline (fetchall + encode every row in memory).
   Each is measured in a fresh subprocess from its VmHWM (peak RSS).
3. Building the model-facing preview for 1,000 vs 1,000,000 rows (target:
   the same cost; ratio at most 2x given machine noise).

Run: .venv/bin/python bench/bench_evidence.py
"""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_ROWS = 1_000_000
QUERY = "SELECT id, category, amount, qty, day, score, name, flag FROM sales"
REPEATS = 5


def make_db(path: Path, n: int) -> None:
    rng = random.Random(1)
    cats = ["north", "south", "east", "west", "online"]
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE sales (id INTEGER, category TEXT, amount REAL, qty INTEGER, day TEXT,"
        " score REAL, name TEXT, flag INTEGER)"
    )
    conn.executemany(
        "INSERT INTO sales VALUES (?,?,?,?,?,?,?,?)",
        (
            (
                i,
                cats[i % 5],
                round(rng.uniform(1, 5000), 2),
                rng.randint(1, 50),
                f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}",
                i / 7,
                f"customer {i:07d}",
                None if i % 3 else i % 2,
            )
            for i in range(n)
        ),
    )
    conn.commit()
    conn.close()


# --- child processes for memory (fresh interpreter each) ---------------------------

_CHILD = r"""
import json, sqlite3, sys, time
sys.path.insert(0, sys.argv[4])
from assay import Settings
from assay.kernel.evidence import ArtifactCatalog, ArtifactSink, capture_sql_execution
from assay.kernel.evidence.canonical import rows_bytes
from assay.kernel.evidence.local_store import LocalContentStore

def hwm_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

mode, db, home = sys.argv[1], sys.argv[2], sys.argv[3]
conn = sqlite3.connect(db)
query = "SELECT id, category, amount, qty, day, score, name, flag FROM sales"
sink = ArtifactSink(ArtifactCatalog(LocalContentStore(Settings.from_env(home=home))), "run_bench")
sink.catalog.count()  # open the catalog before the baseline reading
before = hwm_kib()
t = time.perf_counter()
if mode == "capture":
    cur = conn.execute(query)
    rec = capture_sql_execution(sink, columns=[d[0] for d in cur.description], rows=cur, sql=query,
                                database="bench", dialect="sqlite", elapsed_ms=0)
    rows = rec.row_count
else:  # materialise everything: all rows, then all encoded lines, in memory
    all_rows = conn.execute(query).fetchall()
    blob = rows_bytes(all_rows)
    rows = len(all_rows)
print(json.dumps({"growth_kib": hwm_kib() - before, "rows": rows, "s": time.perf_counter() - t}))
"""


def child(mode: str, db: Path, home: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(db), str(home), str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    from assay import Settings
    from assay.kernel.evidence import (
        ArtifactCatalog,
        ArtifactSink,
        capture_sql_execution,
        preview as preview_mod,
        render_preview,
    )
    from assay.kernel.evidence.local_store import LocalContentStore

    tmp = Path(tempfile.mkdtemp(prefix="assay-bench-"))
    db = tmp / "bench.sqlite"
    t0 = time.perf_counter()
    make_db(db, N_ROWS)
    print(
        f"data: {N_ROWS:,} rows x 8 columns (3 int, 2 real, 3 text; 2/3 NULLs in one column) "
        f"in SQLite, built in {time.perf_counter() - t0:.1f}s"
    )

    sink = ArtifactSink(
        ArtifactCatalog(LocalContentStore(Settings.from_env(home=tmp / "home"))), "run_bench"
    )
    conn = sqlite3.connect(db)
    fetch_cpu: list[float] = []
    capture_cpu: list[float] = []

    def fetchall() -> float:
        t, c = time.perf_counter(), time.process_time()
        rows = conn.execute(QUERY).fetchall()
        dt = time.perf_counter() - t
        fetch_cpu.append(time.process_time() - c)
        assert len(rows) == N_ROWS
        del rows
        return dt

    def capture(query: str = QUERY):
        t, c = time.perf_counter(), time.process_time()
        cur = conn.execute(query)
        rec = capture_sql_execution(
            sink,
            columns=[d[0] for d in cur.description],
            rows=cur,
            sql=query,
            database="bench",
            dialect="sqlite",
            elapsed_ms=0,
        )
        capture_cpu.append(time.process_time() - c)
        return time.perf_counter() - t, rec

    # the preview's share of each capture is timed as it happens (figure 3)
    spent = {"s": 0.0}
    original = preview_mod.PreviewBuilder.offer_lines

    def timed(self, data):
        t = time.perf_counter()
        try:
            return original(self, data)
        finally:
            spent["s"] += time.perf_counter() - t

    preview_mod.PreviewBuilder.offer_lines = timed
    fetch_times, capture_times, preview_1m = [], [], []
    fetch_cpu.clear()
    capture_cpu.clear()
    for _ in range(REPEATS):  # interleaved, so load changes hit both alike
        fetch_times.append(fetchall())
        spent["s"] = 0.0
        dt, record = capture()
        capture_times.append(dt)
        t = time.perf_counter()
        render_preview(record, max_rows=50)
        preview_1m.append(spent["s"] + time.perf_counter() - t)
    assert record.row_count == N_ROWS
    f_min, c_min = min(fetch_times), min(capture_times)
    pairs = [c / f for c, f in zip(capture_times, fetch_times)]
    ratio = statistics.median(pairs)
    cpu = statistics.median(c / f for c, f in zip(capture_cpu, fetch_cpu))
    print(
        "\n1. capture 1,000,000 x 8 from SQLite (%d interleaved pairs; the machine is shared)"
        % REPEATS
    )
    print(
        f"   raw cursor.fetchall():      {f_min:7.3f} s best   (runs: {', '.join(f'{x:.2f}' for x in fetch_times)})"
    )
    print(
        f"   capture_sql_execution():    {c_min:7.3f} s best   (runs: {', '.join(f'{x:.2f}' for x in capture_times)})"
    )
    print(
        f"   ratio capture/fetchall:     {ratio:7.2f}x  median of the per-pair ratios "
        f"({', '.join(f'{x:.2f}' for x in pairs)})"
    )
    print(
        f"                               {c_min / f_min:7.2f}x  best/best;  {cpu:.2f}x  CPU time (median of pairs)"
    )
    print(f"   target <= 1.6x (per-pair median): {'MET' if ratio <= 1.6 else 'NOT MET'}")
    print(
        f"   artifact: {record.byte_size / 2**20:.1f} MiB, sha256 {record.sha256[:16]}..., "
        f"preview {len(record.preview)} rows, truncated={record.preview_truncated}"
    )

    mem_home = tmp / "memhome"
    cap = child("capture", db, mem_home)
    mat = child("materialise", db, mem_home)
    growth = cap["growth_kib"] / 1024
    base = mat["growth_kib"] / 1024
    print("\n2. peak memory growth (VmHWM delta, fresh subprocess each)")
    print(f"   materialise everything:     {base:7.1f} MiB  (fetchall + encode all rows in memory)")
    print(
        f"   streaming capture:          {growth:7.1f} MiB  ({growth / base:.3f}x of the baseline)"
    )
    print(f"   target <= 64 MiB: {'MET' if growth <= 64 else 'NOT MET'}")

    costs = {N_ROWS: min(preview_1m)}
    try:
        samples = []
        for _ in range(5):
            spent["s"] = 0.0
            _, rec = capture(QUERY + " LIMIT 1000")
            t = time.perf_counter()
            text = render_preview(rec, max_rows=50)
            samples.append(spent["s"] + time.perf_counter() - t)
        assert rec.row_count == 1_000 and "of 1000" in text
        costs[1_000] = min(samples)
    finally:
        preview_mod.PreviewBuilder.offer_lines = original
    pr = costs[N_ROWS] / costs[1_000]
    print("\n3. model-facing preview cost (build during capture + markdown render; best of 5)")
    print(f"   1,000 rows:                 {costs[1_000] * 1000:7.3f} ms")
    print(f"   1,000,000 rows:             {costs[N_ROWS] * 1000:7.3f} ms")
    print(
        f"   ratio:                      {pr:7.2f}x  target: same cost (<= 2x): {'MET' if pr <= 2 else 'NOT MET'}"
    )

    # extra: verified read-back of the last row (hashes the whole artifact)
    from assay.kernel.evidence import read_artifact_result

    t = time.perf_counter()
    sel = read_artifact_result(sink, record.artifact_id, {"path": [-1]})
    rb = time.perf_counter() - t
    assert sel.rows[0][0] == N_ROWS - 1
    print(
        f"\n(extra) verified read of row 999,999 (re-hashes {record.byte_size / 2**20:.0f} MiB): {rb:.3f} s, "
        f"{rb / f_min:.2f}x a fetchall"
    )
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
