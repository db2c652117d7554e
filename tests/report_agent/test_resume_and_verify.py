"""Checkpoints survive SIGKILL; stored reports verify, and a tampered artifact fails verification."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.plugins.report_agent.state import ReportStateStore
from assay.plugins.report_agent.verify import verify_report
from examples.report_scenarios import (
    ask,
    bound_artifact,
    generate,
    highest_table,
    number,
    py,
    refunds,
    submit,
    writer,
)
from tests.report_agent.conftest import tamper

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import pathlib, sys, time
sys.path.insert(0, {root!r})
from examples.report_scenarios import generate, manifest, new_kernel, writer

def hang(messages):
    pathlib.Path({marker!r}).write_text("ready")
    time.sleep(120)

run = new_kernel().new_run(run_id={run_id!r})
generate(run, writer(manifest(), hang))
"""


def test_sigkill_mid_report_then_generate_report_resumes_with_the_same_counters(run, tmp_path):
    data = refunds(run)
    first = generate(
        run, writer(ask("overall rate", ["sum refunded / sum orders"], [data.artifact_id]))
    )
    assert first.status == "needs_analysis"
    answer = py(run, {"overall_refund_rate": 0.0731})
    marker = tmp_path / "ready"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(root=str(ROOT), marker=str(marker), run_id=run.run_id)],
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the child never reached the hanging model call"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    killed = ReportStateStore.for_run(run).load(run.run_id)
    assert killed.status == "running" and killed.generate_calls == 2
    assert (
        killed.requests[0].status == "completed"
        and killed.requests[0].result_artifact_id == answer.artifact_id
    )
    assert (
        killed.tool_calls == 2 and killed.steps == 2
    )  # the ask, then the manifest before the kill

    model = writer(
        submit(
            lambda m: {
                "title": "Refunds",
                "blocks": [
                    number("Overall", bound_artifact(m), "overall_refund_rate", ".2%"),
                    *highest_table(data.artifact_id),
                ],
            }
        )
    )
    outcome = generate(run, model)
    assert outcome.status == "completed", (
        outcome.message,
        [
            (f.phase, f.code, f.message[:300])
            for f in ReportStateStore.for_run(run).load(run.run_id).failures
        ],
    )
    resumed = model.seen[0]
    assert [m.name for m in resumed if m.role == "tool"] == [
        "request_report_calculation",
        "report_evidence_manifest",
    ]
    counters = outcome.counters
    assert counters["handbacks_used"] == 1 and counters["attempts"] == {"calc_1": 1}
    assert (
        counters["generate_calls"] == 3
        and counters["tool_calls"] == 3
        and counters["recovered_by_handback"] == 1
    )


def _completed(run):
    data = refunds(run)
    rate = py(run, {"overall_refund_rate": 0.0731})
    outcome = generate(
        run,
        writer(
            submit(
                {
                    "title": "Refunds",
                    "blocks": [
                        number("Overall", rate.artifact_id, "overall_refund_rate", ".2%"),
                        *highest_table(data.artifact_id),
                    ],
                }
            )
        ),
    )
    assert outcome.status == "completed"
    return outcome, data, rate


def test_every_number_is_in_the_provenance_table_and_the_report_verifies(store_run):
    run = store_run
    outcome, data, rate = _completed(run)
    table = outcome.report.split("## Provenance")[1]
    assert (
        f'| 7.31% (exact: 0.0731) | `{rate.artifact_id}` | `{{"path":"overall_refund_rate"}}` | `{rate.sha256}` |'
        in table
    )
    assert (
        f"`{data.artifact_id}`" in table
        and '"sort":[{"column":"refund_rate","descending":true}]' in table
    )
    result = verify_report(run.artifacts.catalog, outcome.report_artifact_id)
    assert result.ok and result.checked == 2
    pages = [
        r
        for r in run.artifacts.catalog.iter(run.run_id)
        if r.kind == "report" and r.name == "report.html"
    ]
    assert (
        len(pages) == 1 and verify_report(run.artifacts.catalog, pages[0].artifact_id).ok
    )  # the HTML copy too


def test_a_tampered_artifact_fails_verification(store_run):
    run = store_run
    _, _, rate = _completed(run)
    tamper(run, rate)
    for report in [
        r for r in run.artifacts.catalog.iter(run.run_id) if r.kind == "report"
    ]:  # Markdown and HTML
        result = verify_report(run.artifacts.catalog, report.artifact_id)
        assert not result.ok and "ARTIFACT_INTEGRITY_FAILED" in result.problems[0]
        assert rate.artifact_id in result.problems[0]


def test_assay_reports_verify_exits_non_zero_on_a_mismatch(run):
    from assay.kernel.cli import build_cli

    outcome, data, _ = _completed(run)
    cli = build_cli(run.kernel)
    ok = CliRunner().invoke(cli, ["reports", "verify", outcome.report_artifact_id])
    assert ok.exit_code == 0 and "OK (2 citation(s) re-read" in ok.output
    tamper(run, data)
    bad = CliRunner().invoke(cli, ["reports", "verify", outcome.report_artifact_id])
    assert bad.exit_code == 1 and "MISMATCH" in bad.output and data.artifact_id in bad.output
    status = CliRunner().invoke(cli, ["reports", "status", run.run_id])
    assert (
        status.exit_code == 0
        and "completed" in status.output
        and '"completed_clean": 1' in status.output
    )


def test_a_cited_text_with_line_breaks_and_pipes_stays_one_row_of_the_provenance_table():
    from assay.plugins.report_agent.assemble import provenance_table

    citation = {
        "block": 0,
        "rendered": "numerator: a | b\n\ndenominator: c",
        "artifact_id": "art_x",
        "selector": {"path": [0, "text"]},
        "sha256": "ab" * 32,
    }
    rows = [line for line in provenance_table([citation]).splitlines() if line.startswith("| 1 |")]
    assert rows == [
        f'| 1 | 0 | numerator: a \\| b  denominator: c | `art_x` | `{{"path":[0,"text"]}}` '
        f"| `{'ab' * 32}` |"
    ]
    assert (
        len(provenance_table([citation]).strip().splitlines()) == 5
    )  # heading, blank, header, rule, the one row
