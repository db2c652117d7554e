"""Report rendering: what an HTML report with a big table citation and 5 charts costs.

    .venv/bin/python bench/bench_reports.py

Targets (issue 18): a report with a 10,000-row table citation (its first 20
rows shown) and 5 charts renders in <= 300 ms; the cost does not grow with
the cited artifact's size beyond what is shown (1,000 vs 1,000,000 rows).

Measured in one process, after one warm-up render (which hashes each
artifact whole once and starts the chart library): the median of 7 renders.
The cold first render is printed too. Content files younger than 2 s are
re-hashed on every read (docs/evidence.md), so the artifacts are given time
to settle before the timed renders, as any artifact a report cites later
would have.
"""

from __future__ import annotations

import os
import statistics
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPEATS = 7
TARGET_MS = 300.0


def png(width: int = 320, height: int = 160) -> bytes:
    """A small valid PNG (a flat colour), like a chart code_interpreter saved."""
    raw = b"".join(b"\x00" + b"\x30\x60\xc0" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def rows(n: int):
    return (
        [
            i,
            f"store {i % 400}",
            ["north", "south", "east", "west"][i % 4],
            round(i * 1.37, 2),
            i % 97,
        ]
        for i in range(n)
    )


def timed(render, doc, reader) -> tuple[float, float]:
    """(cold ms, warm median ms)."""
    started = time.perf_counter()
    render(doc, reader)
    cold = (time.perf_counter() - started) * 1000
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        render(doc, reader)
        times.append((time.perf_counter() - started) * 1000)
    return cold, statistics.median(times)


def document(table_id: str, summary_id: str, charts: list[dict]) -> dict:
    return {
        "title": "Bench",
        "blocks": [
            {
                "type": "text",
                "text": "Rows: {n}.",
                "cite": {"n": {"artifact_id": table_id, "path": [5, "amount"]}},
            },
            {"type": "table", "artifact_id": table_id, "max_rows": 20, "caption": "First rows"},
            *charts,
            {
                "type": "number",
                "label": "Regions",
                "artifact_id": summary_id,
                "path": [0, "orders"],
            },
        ],
    }


def main() -> int:
    os.environ["ASSAY_HOME"] = tempfile.mkdtemp(prefix="assay-bench-reports-")
    os.environ["ASSAY_LOAD_PLUGINS"] = "local_store,html_report"
    from assay import Kernel
    from assay.kernel.evidence import capture_file, capture_sql_execution

    kernel = Kernel()
    run = kernel.new_run()
    sink = run.artifacts
    columns = ["id", "store", "region", "amount", "orders"]
    big = {}
    for n in (1_000, 10_000, 1_000_000):
        started = time.perf_counter()
        big[n] = capture_sql_execution(
            sink,
            columns=columns,
            rows=rows(n),
            sql=f"select ... -- {n} rows",
            database="bench",
            dialect="sqlite",
            elapsed_ms=1.0,
        )
        print(
            f"artifact of {n:>9,} rows: {big[n].byte_size / 1e6:6.1f} MB, captured in "
            f"{time.perf_counter() - started:.2f} s"
        )
    summary = capture_sql_execution(
        sink,
        columns=["region", "orders", "amount"],
        rows=(
            [r, 100 + i * 7, 1000.0 + i * 55.5]
            for i, r in enumerate(["north", "south", "east", "west"] * 12)
        ),
        sql="select region, ...",
        database="bench",
        dialect="sqlite",
        elapsed_ms=1.0,
    )
    pngs = [
        capture_file(sink, data=png(), name=f"chart{i}.png", media_type="image/png", kind="chart")
        for i in range(5)
    ]
    time.sleep(2.1)  # let the content files settle (see the docstring)

    native = [
        {"type": "chart", "chart": kind, "artifact_id": summary.artifact_id, "x": "region", "y": y}
        for kind, y in (
            ("bar", "orders"),
            ("line", "amount"),
            ("scatter", "amount"),
            ("bar", "amount"),
            ("line", "orders"),
        )
    ]
    artifacts = [
        {"type": "image", "artifact_id": p.artifact_id, "caption": f"chart {i}"}
        for i, p in enumerate(pngs)
    ]
    render = kernel.renderer("html").render

    print(
        f"\nHTML report: text + 20 rows of a table citation + 5 charts + a number; median of {REPEATS}, "
        "after one cold render"
    )
    results = {}
    for label, charts in (
        ("5 chart artifacts (PNG)", artifacts),
        ("5 native charts (SVG)", native),
    ):
        for n in (1_000, 10_000, 1_000_000):
            cold, warm = timed(
                render, document(big[n].artifact_id, summary.artifact_id, charts), sink
            )
            results[label, n] = warm
            print(
                f"  {label:<24} table of {n:>9,} rows: {warm:7.1f} ms  (cold first render {cold:7.1f} ms)"
            )
    print()
    failed = False
    for label in ("5 chart artifacts (PNG)", "5 native charts (SVG)"):
        ten = results[label, 10_000]
        ratio = results[label, 1_000_000] / results[label, 1_000]
        ok = ten <= TARGET_MS
        failed |= not ok
        print(
            f"  {label:<24} 10,000 rows: {ten:.1f} ms vs target {TARGET_MS:.0f} ms: {'PASS' if ok else 'OVER'}; "
            f"1,000,000 / 1,000 rows: {ratio:.2f}x"
        )
    run.close()
    kernel.close()
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
