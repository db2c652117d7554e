"""PDF reports: a cold render (Chromium started for it) against warm ones (the browser kept, issue 38).

    .venv/bin/python bench/bench_pdf.py

Renders one report (a 20-row table citation, 2 native charts, a number) as
PDF: the first render starts the process's browser, the next ones reuse it
(median of 5). For comparison, the same page printed by a Chromium started
for the one page (``--print-to-pdf``, how every render went before).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPEATS = 5


def main() -> int:
    os.environ["ASSAY_HOME"] = tempfile.mkdtemp(prefix="assay-bench-pdf-")
    os.environ["ASSAY_LOAD_PLUGINS"] = "local_store,html_report,pdf_report"
    from assay import Kernel
    from assay.kernel.evidence import capture_sql_execution
    from assay.plugins.reports import browser
    from assay.plugins.reports.pdf import CHROMIUM_FLAGS, _environment, find_chromium

    binary = find_chromium()
    if binary is None:
        print("no Chromium: nothing to measure")
        return 1
    kernel = Kernel()
    run = kernel.new_run()
    rows = capture_sql_execution(
        run.artifacts,
        columns=["region", "orders", "amount"],
        rows=(
            [r, 100 + i * 7, 1000.0 + i * 55.5]
            for i, r in enumerate(["north", "south", "east", "west"] * 5)
        ),
        sql="select ...",
        database="bench",
        dialect="sqlite",
        elapsed_ms=1.0,
    )
    doc = {
        "title": "Bench",
        "blocks": [
            {
                "type": "number",
                "label": "Orders",
                "artifact_id": rows.artifact_id,
                "path": [0, "orders"],
            },
            {"type": "table", "artifact_id": rows.artifact_id, "max_rows": 20},
            {
                "type": "chart",
                "chart": "bar",
                "artifact_id": rows.artifact_id,
                "x": "region",
                "y": "orders",
            },
            {
                "type": "chart",
                "chart": "line",
                "artifact_id": rows.artifact_id,
                "x": "region",
                "y": "amount",
            },
        ],
    }
    pdf = kernel.renderer("pdf")
    browser.close_shared()
    started = time.perf_counter()
    pdf.render(doc, run.artifacts)
    cold = time.perf_counter() - started
    warm = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        pdf.render(doc, run.artifacts)
        warm.append(time.perf_counter() - started)
    page, _ = kernel.renderer("html").render_cited(doc, run.artifacts)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "r.html"
        source.write_bytes(page)
        args = [
            binary,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp}/profile",
            "--no-pdf-header-footer",
            f"--print-to-pdf={tmp}/r.pdf",
            source.as_uri(),
        ] + (["--no-sandbox"] if os.geteuid() == 0 else [])
        started = time.perf_counter()
        subprocess.run(args, capture_output=True, env=_environment(tmp), check=False, timeout=120)
        one_shot = time.perf_counter() - started
    print(
        f"PDF report: cold (browser started) {cold:.2f} s; warm (browser kept) median of {REPEATS} "
        f"{statistics.median(warm):.2f} s (min {min(warm):.2f}); one Chromium per render {one_shot:.2f} s"
    )
    browser.close_shared()
    run.close()
    kernel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
