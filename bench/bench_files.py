"""Files as data: what registering a big CSV reads, a GROUP BY through sql_query vs DuckDB alone, peak RSS,
and loading a workbook vs its reader alone (issue 35).

Run: .venv/bin/python bench/bench_files.py [--rows 10000000] [--excel-rows 200000] [--dir DIR]

Each measurement runs in a fresh process (cold for Python, the file in the page cache for both sides
alike: the file is read once before the first measurement), and reports its own peak RSS.

1. A CSV of 10M rows (~1 GB) written by DuckDB. ``register``: ``attach_files`` (sniff a 1 MiB sample,
   build the datasource's DuckDB file of views); bytes read by the process meanwhile (``rchar`` of
   /proc/self/io, DuckDB's own sniffer sample included). Target: no more than the sniffer's sample.
2. ``SELECT region, sum(amount) ... GROUP BY region`` in DuckDB directly on the file (``read_csv``, same
   threads and memory limit as the datasource), then the first ``sql_query`` of it through the kernel in a
   run that keeps evidence. The source artifact (SHA-256 of the file's bytes) is captured when the files
   are registered into the run (as ``assay ask --file`` does), before the query: it is timed on its own.
   Target: query ratio <= 1.3x; peak RSS of the assay process <= 512 MiB.
3. A workbook of 200k rows x 20 columns: fastexcel alone (read every sheet to Arrow) vs ``attach_files``
   (the same read, plus the load into the datasource's DuckDB file). Target: <= 1.3x.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUP_BY = "SELECT region, sum(amount) AS total FROM {src} GROUP BY region ORDER BY region"
MIB = 1 << 20


def rchar() -> int:
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- the measured processes ------------------------------------------------------------


def _import_readers() -> None:
    """What a long-lived process has imported already (the reader-alone side imports before its clock too)."""
    import duckdb  # noqa: F401
    import fastexcel  # noqa: F401
    import pyarrow  # noqa: F401
    import sqlalchemy.engine  # noqa: F401
    import sqlglot  # noqa: F401

    from assay.plugins.files import catalog, engine, excel, resource  # noqa: F401
    from assay.plugins.sql import execution, guard, tools  # noqa: F401


def child_direct(csv: str, threads: int, memory_mb: int) -> dict:
    import duckdb

    con = duckdb.connect(config={"threads": threads, "memory_limit": f"{memory_mb}MB"})
    started = time.perf_counter()
    rows = con.execute(GROUP_BY.format(src=f"read_csv('{csv}')")).fetchall()
    return {"seconds": time.perf_counter() - started, "rows": len(rows), "rss_mib": peak_rss_mib()}


def child_assay(csv: str) -> dict:
    from assay import Kernel
    from assay.plugins.files import attach_files

    kernel = Kernel().start()
    _import_readers()
    warmup = Path(csv).with_name(
        "warmup.csv"
    )  # every code path run once on a tiny file: rchar then counts the data
    warmup.write_text("region,amount\nnorth,1\n")
    attach_files(kernel, [f"warmup={warmup}"], name="warmup").tables()
    try:
        before = rchar()
        started = time.perf_counter()
        resource_ = attach_files(kernel, [f"events={csv}"])
        resource_.tables()  # as `assay ask` does: the pool opened, the schema read
        register_s = time.perf_counter() - started
        register_read = rchar() - before
        run = kernel.new_run()
        started = time.perf_counter()
        resource_.source_artifacts(run.artifacts)
        source_s = time.perf_counter() - started
        started = time.perf_counter()
        result = kernel.call_tool(
            "sql_query", {"sql": GROUP_BY.format(src="events"), "datasource": "files"}, run=run
        )
        query_s = time.perf_counter() - started
        assert result.success, result.message
        record = kernel.evidence.catalog.get(result.data["artifact_id"])
        assert record.provenance.get("sources"), "the query artifact names no source"
        run.close()
        sql = kernel.settings.section("sql", type(resource_.settings))
        return {
            "register_s": register_s,
            "register_read_bytes": register_read,
            "source_s": source_s,
            "seconds": query_s,
            "rows": result.data["row_count"],
            "rss_mib": peak_rss_mib(),
            "threads": sql.duckdb_threads,
            "memory_mb": sql.duckdb_memory_limit_mb,
        }
    finally:
        kernel.close()


def child_excel_reader(path: str) -> dict:
    import fastexcel

    started = time.perf_counter()
    reader = fastexcel.read_excel(path)
    rows = sum(reader.load_sheet(name).to_arrow().num_rows for name in reader.sheet_names)
    return {"seconds": time.perf_counter() - started, "rows": rows, "rss_mib": peak_rss_mib()}


def child_excel_assay(path: str) -> dict:
    from assay import Kernel
    from assay.plugins.files import attach_files

    kernel = Kernel().start()
    _import_readers()
    try:
        started = time.perf_counter()
        resource_ = attach_files(kernel, [f"book={path}"])
        seconds = time.perf_counter() - started
        rows = resource_.query("SELECT count(*) FROM book").rows[0][0]
        return {"seconds": seconds, "rows": rows, "rss_mib": peak_rss_mib()}
    finally:
        kernel.close()


CHILDREN = {
    "direct": child_direct,
    "assay": child_assay,
    "excel_reader": child_excel_reader,
    "excel_assay": child_excel_assay,
}


def run_child(kind: str, *args: object, home: Path) -> dict:
    env = {**os.environ, "ASSAY_HOME": str(home), "ASSAY_LOG_LEVEL": "WARNING"}
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, *map(str, args)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- the data ------------------------------------------------------------------------


def make_csv(path: Path, rows: int) -> None:
    import duckdb

    if path.exists():
        return
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT i AS id, ['north', 'south', 'east', 'west', 'central'][i % 5 + 1] AS region,
        round(random() * 1000, 2) AS amount, TIMESTAMP '2024-01-01' + to_seconds(i) AS ts,
        'cust_' || (i % 100000) AS customer, md5(i::VARCHAR) AS note,
        substr(md5((i * 7)::VARCHAR), 1, 20) AS ref
        FROM range({rows}) t(i)) TO '{path}.tmp' (HEADER, DELIMITER ',', FORMAT csv)""")
    os.rename(f"{path}.tmp", path)


def make_xlsx(path: Path, rows: int, cols: int = 20) -> None:
    if path.exists():
        return
    import xlsxwriter

    book = xlsxwriter.Workbook(f"{path}.tmp.xlsx", {"constant_memory": True})
    sheet = book.add_worksheet("data")
    sheet.write_row(0, 0, [f"c{j}" for j in range(cols)])
    for i in range(1, rows + 1):
        sheet.write_row(i, 0, [i * j * 0.5 if j % 2 else f"v{i % 997}_{j}" for j in range(cols)])
    book.close()
    os.rename(f"{path}.tmp.xlsx", path)


def warm(path: Path) -> None:
    with open(path, "rb") as fh:
        while fh.read(8 * MIB):
            pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--excel-rows", type=int, default=200_000)
    parser.add_argument(
        "--dir", default=None, help="Where the generated files are kept (reused if present)."
    )
    parser.add_argument("--child", nargs="+", default=None)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        fn = CHILDREN[kind]
        print(json.dumps(fn(*[int(a) if a.isdigit() else a for a in rest])))
        return 0

    data = Path(args.dir or Path(tempfile.gettempdir()) / "assay-bench-files")
    data.mkdir(parents=True, exist_ok=True)
    csv, xlsx = data / f"events_{args.rows}.csv", data / f"book_{args.excel_rows}.xlsx"
    started = time.perf_counter()
    make_csv(csv, args.rows)
    make_xlsx(xlsx, args.excel_rows)
    print(
        f"data: {csv.name} {csv.stat().st_size / MIB:,.0f} MiB, {xlsx.name} {xlsx.stat().st_size / MIB:,.1f} MiB "
        f"(ready in {time.perf_counter() - started:.0f} s)"
    )
    warm(csv)
    ok = True
    with tempfile.TemporaryDirectory() as home:
        assay = run_child("assay", csv, home=Path(home) / "a")
        direct = run_child(
            "direct", csv, assay["threads"], assay["memory_mb"], home=Path(home) / "d"
        )
        ratio = assay["seconds"] / direct["seconds"]
        print(
            f"register: {assay['register_s'] * 1000:.0f} ms, read {assay['register_read_bytes'] / MIB:.1f} MiB "
            f"of {csv.stat().st_size / MIB:,.0f} MiB (assay's 1 MiB sample, DuckDB's sniff, the schema)"
        )
        print(f"source artifact (SHA-256 of the file, once per file): {assay['source_s']:.2f} s")
        print(
            f"GROUP BY: sql_query {assay['seconds']:.2f} s vs DuckDB directly {direct['seconds']:.2f} s: "
            f"{ratio:.2f}x (target <= 1.3x)"
        )
        print(
            f"peak RSS: assay process {assay['rss_mib']:.0f} MiB (target <= 512), DuckDB alone "
            f"{direct['rss_mib']:.0f} MiB"
        )
        ok &= ratio <= 1.3 and assay["rss_mib"] <= 512
        reader = run_child("excel_reader", xlsx, home=Path(home) / "r")
        loaded = run_child("excel_assay", xlsx, home=Path(home) / "x")
        excel_ratio = loaded["seconds"] / reader["seconds"]
        print(
            f"Excel {args.excel_rows:,} x 20: attach_files {loaded['seconds']:.2f} s vs fastexcel alone "
            f"{reader['seconds']:.2f} s: {excel_ratio:.2f}x (target <= 1.3x); rows {loaded['rows']:,}"
        )
        ok &= excel_ratio <= 1.3 and loaded["rows"] == reader["rows"] == args.excel_rows
    print("all targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
