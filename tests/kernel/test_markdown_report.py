"""The markdown report renderer reads every cited value from verified evidence."""

from __future__ import annotations

import pytest

from assay import AssayError, Kernel
from assay.kernel.evidence import capture_file, capture_sql_execution


@pytest.fixture
def run(only):
    only("local_store", "markdown_report")
    kernel = Kernel()
    with kernel.new_run() as run:
        assert run.artifacts is not None
        yield run


def sales(run):
    return capture_sql_execution(
        run.artifacts,
        columns=["region", "revenue", "orders"],
        rows=iter([["north", 1234.5, 10], ["south", 99.25, 3], ["east", 0.0, 0]]),
        sql="select region, sum(amount) as revenue, count(*) as orders from sales group by region",
        database="warehouse",
        dialect="postgresql",
        elapsed_ms=1.5,
    )


def test_register_report_renderers_markdown_cites_numbers_and_tables(run):
    record = sales(run)
    document = {
        "title": "Sales by region",
        "blocks": [
            {
                "type": "text",
                "text": "North earned {north} from {orders} orders.",
                "cite": {
                    "north": {
                        "artifact_id": record.artifact_id,
                        "path": [0, "revenue"],
                        "format": ",.2f",
                    },
                    "orders": {"artifact_id": record.artifact_id, "path": "0.orders"},
                },
            },
            {
                "type": "number",
                "label": "South revenue",
                "artifact_id": record.artifact_id,
                "path": [1, 1],
            },
            {
                "type": "table",
                "artifact_id": record.artifact_id,
                "columns": ["revenue", "region"],
                "max_rows": 2,
            },
        ],
    }
    text = run.kernel.renderer("markdown").render(document, run.artifacts).decode()
    assert text.startswith("# Sales by region\n")
    assert "North earned 1,234.50[^1] from 10[^1] orders." in text
    assert "**South revenue:** 99.25[^1]" in text
    assert "| revenue | region |\n|---|---|\n| 1,234.50 | north |\n| 99.25 | south |" in text
    assert "*(2 of 3 rows)*[^1]" in text
    assert f"[^1]: artifact `{record.artifact_id}` (sql, sha256 `{record.sha256[:12]}`)" in text
    assert "select region" in text


def test_markdown_report_reads_through_the_kernel_too(run):
    record = sales(run)
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "number",
                "label": "n",
                "artifact_id": record.artifact_id,
                "path": [2, "orders"],
            }
        ],
    }
    assert "**n:** 0[^1]" in run.kernel.renderer("markdown").render(doc, run.kernel).decode()


def test_markdown_report_rejects_an_unknown_artifact(run):
    doc = {
        "title": "t",
        "blocks": [{"type": "number", "label": "n", "artifact_id": "art_missing", "path": [0, 0]}],
    }
    with pytest.raises(AssayError) as caught:
        run.kernel.renderer("markdown").render(doc, run.artifacts)
    assert (
        caught.value.code == "REPORT_CITATION_INVALID"
        and "ARTIFACT_NOT_FOUND" in caught.value.message
    )


def test_markdown_report_rejects_unknown_columns_and_uncited_placeholders(run):
    record = sales(run)
    renderer = run.kernel.renderer("markdown")
    with pytest.raises(AssayError, match="no column"):
        renderer.render(
            {
                "title": "t",
                "blocks": [
                    {"type": "table", "artifact_id": record.artifact_id, "columns": ["profit"]}
                ],
            },
            run.artifacts,
        )
    with pytest.raises(AssayError, match="placeholders without a citation"):
        renderer.render(
            {"title": "t", "blocks": [{"type": "text", "text": "made up {x}"}]}, run.artifacts
        )


def test_markdown_report_detects_tampered_evidence(run):
    record = sales(run)
    path = run.artifacts.store.root if hasattr(run.artifacts.store, "root") else None
    if path is None:
        pytest.skip("the local store exposes no root to tamper with")
    blobs = [p for p in path.rglob("*") if p.is_file() and record.sha256 in p.name]
    assert blobs, "could not find the stored content"
    blobs[0].chmod(0o644)
    blobs[0].write_bytes(blobs[0].read_bytes().replace(b"1234.5", b"9999.5"))
    doc = {
        "title": "t",
        "blocks": [
            {"type": "number", "label": "n", "artifact_id": record.artifact_id, "path": [0, 1]}
        ],
    }
    with pytest.raises(AssayError) as caught:
        run.kernel.renderer("markdown").render(doc, run.artifacts)
    assert "ARTIFACT_INTEGRITY_FAILED" in caught.value.message


def test_render_report_tool_keeps_the_report_as_evidence(run):
    record = sales(run)
    png = capture_file(
        run.artifacts, data=b"\x89PNG fake", name="chart.png", media_type="image/png", kind="chart"
    )
    doc = {
        "title": "Q",
        "blocks": [
            {
                "type": "number",
                "label": "Orders",
                "artifact_id": record.artifact_id,
                "path": [0, "orders"],
            },
            {"type": "image", "artifact_id": png.artifact_id, "caption": "Revenue"},
        ],
    }
    result = run.kernel.call_tool("render_report", {"document": doc}, run=run)
    assert result.success, result
    assert (
        "**Orders:** 10[^1]" in result.content
        and f"![Revenue]({png.content_uri})[^2]" in result.content
    )
    assert result.artifacts[0].kind == "report"
    stored = run.kernel.call_tool(
        "render_report",
        {
            "document": {
                "title": "x",
                "blocks": [
                    {"type": "number", "label": "n", "artifact_id": "art_nope", "path": [0]}
                ],
            }
        },
        run=run,
    )
    assert stored.error_code == "REPORT_CITATION_INVALID"


def test_markdown_report_refuses_to_cite_a_failed_execution(run):
    failed = capture_sql_execution(
        run.artifacts,
        columns=[],
        rows=iter([]),
        sql="select broken",
        database="warehouse",
        dialect="postgresql",
        elapsed_ms=1.0,
        status="failed",
        error="syntax error at or near broken",
    )
    doc = {"title": "t", "blocks": [{"type": "table", "artifact_id": failed.artifact_id}]}
    with pytest.raises(AssayError) as caught:
        run.kernel.renderer("markdown").render(doc, run.artifacts)
    assert caught.value.code == "REPORT_CITATION_INVALID"
    assert "failed sql execution" in caught.value.message


def test_markdown_report_refuses_a_python_run_without_report_result(run):
    from assay.kernel.evidence import capture_python_execution

    printed_only = capture_python_execution(
        run.artifacts,
        code="print({'rate': 0.1})",
        result=None,
        result_set=False,
        stdout="{'rate': 0.1}\n",
        stderr="",
        status="succeeded",
    )
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "number",
                "label": "rate",
                "artifact_id": printed_only.artifact_id,
                "path": "rate",
            }
        ],
    }
    with pytest.raises(AssayError) as caught:
        run.kernel.renderer("markdown").render(doc, run.artifacts)
    assert caught.value.code == "REPORT_CITATION_INVALID"
    assert "no REPORT_RESULT" in caught.value.message
