"""The model-facing evidence tools and the 'assay artifacts' commands."""

from __future__ import annotations

import csv
import io
import json
import os

import click
import pytest
from click.testing import CliRunner

from assay.kernel.evidence import capture_python_execution, capture_sql_execution, evidence_manifest
from assay.plugins import evidence_tools
from tests.conftest import imported_by, run_assay

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog


def _sql(sink, n=5, sql="select id, name from people"):
    return capture_sql_execution(
        sink,
        columns=["id", "name"],
        rows=[(i, f"p{i}") for i in range(n)],
        sql=sql,
        database="db",
        dialect="sqlite",
        elapsed_ms=1,
    )


def test_read_artifact_result_tool_returns_the_selection(kernel):
    run = kernel.new_run()
    record = _sql(run.artifacts, 300)
    result = kernel.call_tool(
        "read_artifact_result",
        {"artifact_id": record.artifact_id, "selectors": {"path": [216]}},
        run=run,
    )
    assert result.success and result.data["rows"] == [[216, "p216"]]
    assert (
        '216: [216,"p216"]' in result.content
        and result.artifacts[0].artifact_id == record.artifact_id
    )


def test_read_artifact_result_tool_reports_errors_by_code(kernel):
    run = kernel.new_run()
    record = _sql(run.artifacts)
    missing = kernel.call_tool("read_artifact_result", {"artifact_id": "art_nope"}, run=run)
    assert missing.error_code == "ARTIFACT_NOT_FOUND"
    bad = kernel.call_tool(
        "read_artifact_result",
        {"artifact_id": record.artifact_id, "selectors": {"field": "nope"}},
        run=run,
    )
    assert bad.error_code == "ARTIFACT_SELECTOR_INVALID"


def test_manifest_lists_the_runs_artifacts_with_summaries(kernel):
    run, other = kernel.new_run(), kernel.new_run()
    a = _sql(run.artifacts, sql="select id,\n   name from people where x > 1")
    b = capture_python_execution(
        run.artifacts,
        code="REPORT_RESULT = 1",
        result=1,
        result_set=True,
        stdout="",
        stderr="",
        status="failed",
        error="boom",
    )
    _sql(other.artifacts)
    result = kernel.call_tool("report_evidence_manifest", {}, run=run)
    ids = [e["artifact_id"] for e in result.data["artifacts"]]
    assert ids == [a.artifact_id, b.artifact_id] and result.data["count"] == 2
    assert result.data["artifacts"][0]["summary"] == "select id, name from people where x > 1"
    assert (
        result.data["artifacts"][1]["status"] == "failed"
        and result.data["artifacts"][1]["error"] == "boom"
    )


def test_manifest_stays_within_its_budget_and_says_so(sink):
    for i in range(40):
        _sql(sink, sql=f"select {i} " + "x" * 100)
    manifest = evidence_manifest(sink.catalog, sink.run_id, max_chars=2_000)
    assert manifest["count"] == 40 and manifest["truncated"]
    assert manifest["omitted"] == 40 - len(manifest["artifacts"]) > 0
    assert len(json.dumps(manifest["artifacts"])) <= 2_000 + 50


def test_artifact_details_accepts_twelve_ids_and_refuses_thirteen(kernel):
    run = kernel.new_run()
    ids = [_sql(run.artifacts, sql=f"select {i}").artifact_id for i in range(13)]
    ok = kernel.call_tool("artifact_details", {"artifact_ids": ids[:12]}, run=run)
    assert ok.success and [d["artifact_id"] for d in ok.data] == ids[:12]
    assert ok.data[0]["provenance"]["sql"] == "select 0" and ok.data[0]["sha256"]
    assert f"{ids[0]}: sql succeeded, rows=5" in ok.content and "sql: select 0" in ok.content
    over = kernel.call_tool("artifact_details", {"artifact_ids": ids}, run=run)
    assert over.error_code == "ARTIFACT_DETAILS_LIMIT" and "12" in over.hint


def test_artifact_details_marks_unknown_ids(kernel):
    run = kernel.new_run()
    result = kernel.call_tool("artifact_details", {"artifact_ids": ["art_missing"]}, run=run)
    assert result.data == [{"artifact_id": "art_missing", "error": "ARTIFACT_NOT_FOUND"}]


# --- CLI ---------------------------------------------------------------------------------


@pytest.fixture
def cli(kernel):
    group = click.Group()
    evidence_tools.register_commands(group, kernel)
    runner = CliRunner()
    return lambda *args: runner.invoke(group, ["artifacts", *args], catch_exceptions=False)


def test_cli_ls_filters_by_run(cli, kernel):
    r1, r2 = kernel.new_run(), kernel.new_run()
    a, b = _sql(r1.artifacts), _sql(r2.artifacts)
    out = cli("ls", "--run", r1.run_id).output
    assert a.artifact_id in out and b.artifact_id not in out
    assert b.artifact_id in cli("ls").output


def test_cli_show_with_select(cli, kernel):
    record = _sql(kernel.new_run().artifacts, 300)
    out = cli("show", record.artifact_id, "--select", "path=216").output
    assert '216: [216,"p216"]' in out and record.sha256 in out
    out = cli("show", record.artifact_id, "--select", "field=name", "--select", "rows=-1:").output
    assert '299: ["p299"]' in out


def test_cli_verify_lists_missing_and_corrupt(cli, kernel):
    sink = kernel.new_run().artifacts
    good, gone, bad = _sql(sink, 3), _sql(sink, 4), _sql(sink, 5)
    sink.store.local_path(gone.sha256).unlink()
    path = sink.store.local_path(bad.sha256)
    os.chmod(path, 0o644)
    path.write_bytes(path.read_bytes().replace(b"p4", b"p5"))
    result = cli("verify")
    assert result.exit_code == 1
    assert (
        f"MISSING  {gone.artifact_id}" in result.output
        and f"CORRUPT  {bad.artifact_id}" in result.output
    )
    assert good.artifact_id not in result.output and "checked 3: 1 ok" in result.output


def test_cli_export_csv_and_jsonl(cli, kernel, tmp_path):
    sink = kernel.new_run().artifacts
    record = capture_sql_execution(
        sink,
        columns=["n", "x"],
        rows=[(1, None), (2, float("nan")), (3, "a,b")],
        sql="q",
        database="d",
        dialect="sqlite",
        elapsed_ms=0,
    )
    out = tmp_path / "o.csv"
    cli("export", record.artifact_id, "--format", "csv", "-o", str(out))
    assert list(csv.reader(io.StringIO(out.read_text()))) == [
        ["n", "x"],
        ["1", ""],
        ["2", "nan"],
        ["3", "a,b"],
    ]
    out = tmp_path / "o.jsonl"
    cli("export", record.artifact_id, "--format", "jsonl", "-o", str(out))
    assert out.read_bytes() == sink.store.local_path(record.sha256).read_bytes()


def test_cli_export_csv_neutralises_formulas(cli, kernel, tmp_path):
    sink = kernel.new_run().artifacts
    cells = ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "plain", "\t=x"]
    record = capture_sql_execution(
        sink,
        columns=["v", "n"],
        rows=[(c, -1) for c in cells],
        sql="q",
        database="d",
        dialect="sqlite",
        elapsed_ms=0,
    )
    out = tmp_path / "o.csv"
    cli("export", record.artifact_id, "--format", "csv", "-o", str(out))
    rows = list(csv.reader(io.StringIO(out.read_text())))[1:]
    assert [r[0] for r in rows] == ["'=1+1", "'+SUM(A1)", "'-2+3", "'@cmd", "plain", "'\t=x"]
    assert {r[1] for r in rows} == {"-1"}  # numbers stay numbers


def test_cli_gc_removes_only_unreferenced_content(cli, kernel):
    sink = kernel.new_run().artifacts
    kept = _sql(sink)
    stray_dir = sink.store.content_dir / "ab"
    stray_dir.mkdir(parents=True, exist_ok=True)
    stray = stray_dir / ("ab" * 32)
    stray.write_bytes(b"orphan")
    assert "would remove" in cli("gc", "--grace", "0", "--dry-run").output and stray.exists()
    out = cli("gc", "--grace", "0").output
    assert "removed 1 content" in out and not stray.exists()
    assert sink.store.exists(kept.sha256)


def test_assay_artifacts_command_is_registered_through_entry_points(tmp_path):
    out = run_assay("artifacts", "--help", env={"ASSAY_HOME": str(tmp_path)})
    assert out.exit_code == 0, out.stderr
    for sub in ("ls", "show", "verify", "export", "gc"):
        assert sub in out.stdout


def test_importing_the_evidence_package_stays_light():
    code = "import assay.kernel.evidence, assay.plugins.artifact_stores.s3, assay.plugins.evidence_tools"
    assert (
        imported_by(code, ["boto3", "botocore", "pandas", "pyarrow", "numpy", "sqlalchemy"]) == []
    )
