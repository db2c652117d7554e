"""Issue 14: places where a reader was told something untrue about evidence.

Each test is named for the honesty case it proves (item numbers of issue 14).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay import AssayError, Kernel, RunContext
from assay.kernel.evidence import (
    ProducedFile,
    capture_python_execution,
    capture_sql_execution,
    read_artifact_result,
    render_preview,
)

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = [
    "assay.plugins.artifact_stores.local",
    "assay.plugins.evidence_tools",
    "assay.plugins.reports.markdown",
]
pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog


@pytest.fixture
def kernel(make_assay_kernel) -> Kernel:
    return make_assay_kernel(*PLUGINS)


def _stores(sink, n: int = 300, count_rest: bool = True):
    """300 rows of (store, total), the last one's total 300.0; a capture that counts every row."""
    return capture_sql_execution(
        sink,
        columns=["store", "total"],
        rows=iter([(f"store-{i:04d}-" + "x" * 40, float(i + 1)) for i in range(n)]),
        sql="SELECT store, total FROM sales ORDER BY store",
        database="sales",
        dialect="sqlite",
        elapsed_ms=2.0,
        count_rest=count_rest,
    )


@pytest.fixture
def incomplete(monkeypatch, make_assay_kernel):
    """A kernel whose size guard keeps only part of a 300-row result, and that partial artifact."""
    monkeypatch.setenv("ASSAY_ARTIFACT_MAX_BYTES", "8000")
    kernel = make_assay_kernel(*PLUGINS)
    run = kernel.new_run()
    record = _stores(run.artifacts)
    assert not record.complete and 0 < record.row_count < 300
    return kernel, run, record


# --- item 1: an incomplete artifact never reads as complete ---------------------------------------------


def test_incomplete_artifact_record_says_how_many_rows_were_returned_and_kept(incomplete):
    _, _, record = incomplete
    assert record.provenance["rows_returned"] == 300
    note = record.incomplete_note()
    assert "INCOMPLETE" in note and f"returned 300 rows; {record.row_count} were kept" in note


def test_incomplete_artifact_path_read_carries_the_note_and_kept_vs_returned(incomplete):
    kernel, run, record = incomplete
    selected = read_artifact_result(run.artifacts, record.artifact_id, {"path": [5]})
    text = selected.text()
    assert not selected.complete and selected.rows_returned == 300
    assert "INCOMPLETE" in text and f"{record.row_count} rows kept of 300 returned" in text
    assert "rows in total" not in text  # the kept rows are not the total
    value = read_artifact_result(run.artifacts, record.artifact_id, {"path": [5, "total"]})
    assert value.value == 6.0 and "INCOMPLETE" in value.text()


@pytest.mark.parametrize(
    "selectors",
    [
        {"path": [-1, "total"]},
        {"path": [-1]},
        {"rows": [-5, None]},
        {"rows": [0, None]},
        {"rows": "-3:"},
        {"path": ["-2:", "total"]},
        {"rows": [0, 299]},
    ],
)
def test_incomplete_artifact_refuses_end_dependent_selectors(incomplete, selectors):
    _, run, record = incomplete
    with pytest.raises(AssayError) as caught:
        read_artifact_result(run.artifacts, record.artifact_id, selectors)
    assert caught.value.code == "ARTIFACT_INCOMPLETE"
    assert "300" in caught.value.message and str(record.row_count) in caught.value.message


def test_incomplete_artifact_refuses_a_row_past_the_kept_ones(incomplete):
    _, run, record = incomplete
    with pytest.raises(AssayError, match="past the kept ones") as caught:
        read_artifact_result(
            run.artifacts, record.artifact_id, {"path": [record.row_count + 10, "total"]}
        )
    assert caught.value.code == "ARTIFACT_INCOMPLETE"


def test_render_report_refuses_the_last_row_of_an_incomplete_artifact(incomplete):
    kernel, run, record = incomplete
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "number",
                "label": "last store",
                "artifact_id": record.artifact_id,
                "path": [-1, "total"],
            }
        ],
    }
    result = kernel.call_tool("render_report", {"document": doc}, run=run)
    assert not result.success and result.error_code == "REPORT_CITATION_INVALID"
    assert "ARTIFACT_INCOMPLETE" in result.message


def test_render_report_marks_a_table_and_footnote_of_an_incomplete_artifact(incomplete):
    kernel, run, record = incomplete
    doc = {
        "title": "t",
        "blocks": [{"type": "table", "artifact_id": record.artifact_id, "max_rows": 500}],
    }
    result = kernel.call_tool("render_report", {"document": doc}, run=run)
    assert result.success, result.message
    assert f"of the {record.row_count} rows kept; the query returned 300" in result.content
    footnote = [line for line in result.content.splitlines() if line.startswith("[^1]:")][0]
    assert "INCOMPLETE" in footnote


def test_manifest_text_flags_an_incomplete_artifact(incomplete):
    kernel, run, record = incomplete
    result = kernel.call_tool("report_evidence_manifest", {}, run=run)
    line = [x for x in result.content.splitlines() if record.artifact_id in x][0]
    assert "INCOMPLETE" in line and f"returned 300 rows; {record.row_count} were kept" in line
    details = kernel.call_tool("artifact_details", {"artifact_ids": [record.artifact_id]}, run=run)
    assert "INCOMPLETE" in details.content and "returned 300 rows" in details.content


def test_render_preview_of_an_incomplete_artifact_says_kept_not_full(incomplete):
    _, _, record = incomplete
    text = render_preview(record)
    assert "the full result" not in text and "INCOMPLETE" in text and "returned 300 rows" in text


# --- item 2: a Python capture is all or nothing --------------------------------------------------------


def _fail_on_commit(monkeypatch, store, number: int) -> None:
    real, calls = store.commit, []

    def commit(*args, **kwargs):
        calls.append(1)
        if len(calls) == number:
            raise OSError("No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "commit", commit)


def test_failed_python_capture_leaves_no_succeeded_file_artifact(kernel, monkeypatch):
    run = kernel.new_run()
    _fail_on_commit(
        monkeypatch, run.artifacts.store, 3
    )  # two files publish, then the execution's document fails
    files = [
        ProducedFile("chart.png", b"\x89PNG" + b"1" * 64, "image/png"),
        ProducedFile("out.csv", b"a,b\n1,2\n", "text/csv"),
    ]
    with pytest.raises(AssayError) as caught:
        capture_python_execution(
            run.artifacts,
            code="REPORT_RESULT = 1",
            result=1,
            result_set=True,
            stdout="",
            stderr="",
            files=files,
            status="succeeded",
        )
    assert caught.value.code == "ARTIFACT_CAPTURE_FAILED"
    assert (
        "chart.png" in caught.value.message and "out.csv" in caught.value.message
    )  # says what was lost
    assert "already ran" in caught.value.hint
    assert run.artifacts.catalog.list(run.run_id) == []  # nothing of that execution can be cited


def test_python_capture_whose_record_mirror_fails_keeps_no_record(kernel, monkeypatch):
    run = kernel.new_run()
    store, calls = run.artifacts.store, []

    def put_record(artifact_id, data):
        calls.append(artifact_id)
        if len(calls) == 2:
            raise ConnectionError("shared store unreachable")

    monkeypatch.setattr(store, "put_record", put_record)
    with pytest.raises(AssayError):
        capture_python_execution(
            run.artifacts,
            code="x",
            result=1,
            result_set=True,
            stdout="",
            stderr="",
            files=[ProducedFile("a.txt", b"a", "text/plain")],
            status="succeeded",
        )
    assert run.artifacts.catalog.list(run.run_id) == []


# --- item 3: a failed attempt has no row count --------------------------------------------------------


def test_failed_attempt_has_row_count_null_not_zero(kernel):
    run = kernel.new_run()
    failed = capture_sql_execution(
        run.artifacts,
        columns=[],
        rows=[],
        sql="SELECT nope",
        database="d",
        dialect="sqlite",
        elapsed_ms=1.0,
        status="failed",
        error="SQL_QUERY_FAILED: no",
    )
    empty = capture_sql_execution(
        run.artifacts,
        columns=["a"],
        rows=[],
        sql="SELECT a WHERE 0",
        database="d",
        dialect="sqlite",
        elapsed_ms=1.0,
    )
    assert failed.row_count is None and failed.ref().row_count is None
    assert empty.row_count == 0  # an empty result is a count, zero
    assert run.artifacts.catalog.get(failed.artifact_id).row_count is None
    manifest = kernel.call_tool("report_evidence_manifest", {}, run=run)
    entry = {e["artifact_id"]: e for e in manifest.data["artifacts"]}
    assert (
        entry[failed.artifact_id]["row_count"] is None
        and entry[empty.artifact_id]["row_count"] == 0
    )
    assert f"{failed.artifact_id} sql failed rows=-" in manifest.content
    details = kernel.call_tool("artifact_details", {"artifact_ids": [failed.artifact_id]}, run=run)
    assert details.data[0]["row_count"] is None and "rows=-" in details.content
    selected = read_artifact_result(run.artifacts, failed.artifact_id)
    assert selected.total_rows is None and "failed attempt" in selected.text()
    assert "0 rows" not in selected.text()
    python = capture_python_execution(
        run.artifacts,
        code="1/0",
        result=None,
        result_set=False,
        stdout="",
        stderr="ZeroDivisionError",
        status="failed",
        error="PYTHON_EXECUTION_FAILED",
    )
    assert python.row_count is None


# --- item 4: the preview says which limit cut it ------------------------------------------------------


def test_render_preview_says_which_limit_cut_the_table(kernel):
    run = kernel.new_run()
    wide = capture_sql_execution(
        run.artifacts,
        columns=["a"],
        rows=[("x" * 150,)] * 3,
        sql="s",
        database="d",
        dialect="sqlite",
        elapsed_ms=1.0,
    )
    by_chars = render_preview(wide, max_rows=50, max_chars=400)
    assert "cut at 400 characters" in by_chars and "of 3" in by_chars
    many = capture_sql_execution(
        run.artifacts,
        columns=["a"],
        rows=[(i,) for i in range(300)],
        sql="s",
        database="d",
        dialect="sqlite",
        elapsed_ms=1.0,
    )
    by_rows = render_preview(many, max_rows=50)
    assert "showing rows 1-50 of 300 (the first 50 rows)" in by_rows and "characters" not in by_rows


# --- items 5, 6, 7, 9: reports --------------------------------------------------------------------------


def _three_artifacts(run: RunContext):
    out = []
    for i, region in enumerate(["north", "south", "east", "west"]):
        out.append(
            capture_sql_execution(
                run.artifacts,
                columns=["region", "revenue", "refunds"],
                rows=[(region, 100.0 * (i + 1), None)],
                sql=f"SELECT region, revenue, refunds FROM r WHERE region = '{region}'",
                database="d",
                dialect="sqlite",
                elapsed_ms=1.0,
            )
        )
    return out


def _document(records) -> dict:
    names = ["alpha", "bravo", "charlie", "delta"]
    return {
        "title": "Regions",
        "blocks": [
            {
                "type": "text",
                "text": " ".join(f"{{{n}}}" for n in names),
                "cite": {
                    n: {"artifact_id": r.artifact_id, "path": [0, "revenue"]}
                    for n, r in zip(names, records)
                },
            }
        ],
    }


_RENDER = """
import json, sys
from assay import Kernel
from assay.plugins.reports.markdown import MarkdownRenderer

kernel = Kernel(load_entrypoints=False, plugins=["assay.plugins.artifact_stores.local"])
sink = kernel.evidence.open_sink(sys.argv[1])
sys.stdout.buffer.write(MarkdownRenderer().render(json.loads(sys.argv[2]), sink))
"""


def test_report_rendering_is_the_same_bytes_under_every_hash_seed(kernel):
    run = kernel.new_run()
    doc = json.dumps(_document(_three_artifacts(run)))
    outputs = set()
    for seed in ("0", "1", "2", "3", "7", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", _RENDER, run.run_id, doc],
            env=env,
            capture_output=True,
            cwd=ROOT,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr.decode()
        outputs.add(done.stdout)
    assert len(outputs) == 1, "the same document over the same artifacts rendered differently"
    text = outputs.pop().decode()
    assert (
        text.index("100.00[^1]") < text.index("200.00[^2]") < text.index("300.00[^3]")
    )  # in order of appearance


def test_kept_report_keeps_artifact_selector_and_sha256_of_every_value(kernel):
    run = kernel.new_run()
    records = _three_artifacts(run)
    doc = _document(records)
    doc["blocks"] += [
        {
            "type": "number",
            "label": "refunds",
            "artifact_id": records[0].artifact_id,
            "path": [0, "refunds"],
        },
        {"type": "table", "artifact_id": records[1].artifact_id, "columns": ["region", "revenue"]},
    ]
    result = kernel.call_tool("render_report", {"document": doc}, run=run)
    assert result.success, result.message
    report = run.artifacts.catalog.get(result.data["artifact_id"])
    citations = report.provenance["citations"]
    assert len(citations) == 6  # four placeholders, a number, a table
    by_field = {c["field"]: c for c in citations if c["field"]}
    assert by_field["alpha"]["artifact_id"] == records[0].artifact_id
    assert by_field["alpha"]["selector"] == {"path": [0, "revenue"]}
    assert (
        by_field["alpha"]["sha256"] == records[0].sha256
        and by_field["alpha"]["run_id"] == run.run_id
    )
    table = citations[-1]
    assert table["selector"] == {"rows": [0, 20], "columns": ["region", "revenue"], "limit": 20}
    assert table["sha256"] == records[1].sha256
    assert (
        report.provenance["document"]["blocks"][0]["cite"]["alpha"]["artifact_id"]
        == records[0].artifact_id
    )
    for c in citations:  # re-verifiable: each value reads back from the same, unchanged, artifact
        assert run.artifacts.catalog.get(c["artifact_id"]).sha256 == c["sha256"]


def test_cited_null_renders_as_the_missing_mark_and_provenance_says_null(kernel):
    run = kernel.new_run()
    record = _three_artifacts(run)[0]
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "number",
                "label": "Refunds",
                "artifact_id": record.artifact_id,
                "path": [0, "refunds"],
                "format": ",.2f",
            },
            {"type": "table", "artifact_id": record.artifact_id},
        ],
    }
    result = kernel.call_tool("render_report", {"document": doc}, run=run)
    assert result.success, result.message
    assert "**Refunds:** --[^1]" in result.content
    assert "| north | 100.00 | -- |" in result.content
    assert "null" not in result.content.replace("NULL there", "")
    assert "marks a missing value" in result.content and "NULL" in result.content
    report = run.artifacts.catalog.get(result.data["artifact_id"])
    number = report.provenance["citations"][0]
    assert number["null"] is True and number["rendered"] == "--"
    assert report.provenance["citations"][1]["null_cells"] == 1


def test_a_cited_row_shows_its_nulls_as_the_missing_mark(kernel):
    run = kernel.new_run()
    record = _three_artifacts(run)[0]
    doc = {
        "title": "t",
        "blocks": [
            {"type": "number", "label": "Row", "artifact_id": record.artifact_id, "path": [0]}
        ],
    }
    result = kernel.call_tool("render_report", {"document": doc}, run=run)
    assert result.success, result.message
    assert "**Row:** [north, 100.0, --][^1]" in result.content
    assert "None" not in result.content and "marks a missing value" in result.content
    citation = run.artifacts.catalog.get(result.data["artifact_id"]).provenance["citations"][0]
    assert citation["null"] is False and citation["null_items"] == 1


def test_report_refuses_to_cite_another_runs_artifact(kernel):
    other = kernel.new_run()
    foreign = _three_artifacts(other)[0]
    run = kernel.new_run()
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "number",
                "label": "n",
                "artifact_id": foreign.artifact_id,
                "path": [0, "revenue"],
            }
        ],
    }
    result = kernel.call_tool("render_report", {"document": doc}, run=run)
    assert not result.success and result.error_code == "REPORT_CITATION_INVALID"
    assert "REPORT_CITATION_OTHER_RUN" in result.message and other.run_id in result.message
    assert run.artifacts.catalog.list(run.run_id) == []  # no report was kept
    # Outside a run (a kernel or catalog as the reader) there is no report run to hold to, and the
    # citations name each artifact's run.
    from assay.plugins.reports.markdown import MarkdownRenderer

    _, citations = MarkdownRenderer().render_cited(doc, kernel)
    assert citations[0]["run_id"] == other.run_id


def test_incomplete_artifact_that_did_not_count_the_rest_never_claims_a_total(
    monkeypatch, make_assay_kernel
):
    monkeypatch.setenv("ASSAY_ARTIFACT_MAX_BYTES", "8000")
    kernel = make_assay_kernel(*PLUGINS)
    run = kernel.new_run()
    record = _stores(run.artifacts, count_rest=False)
    assert not record.complete and record.rows_returned is None
    selected = read_artifact_result(run.artifacts, record.artifact_id, {"rows": [0, 2]})
    assert selected.rows_returned is None and "not counted" in selected.text()
    assert f"INCOMPLETE: {record.row_count} rows kept\n" in selected.text() + "\n"
    doc = {
        "title": "t",
        "blocks": [{"type": "table", "artifact_id": record.artifact_id, "max_rows": 5}],
    }
    result = kernel.call_tool("render_report", {"document": doc}, run=run)
    assert result.success and "not counted" in result.content and "None" not in result.content
