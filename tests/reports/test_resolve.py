"""The shared citation resolution every renderer formats (assay.plugins.reports.resolve)."""

from __future__ import annotations

import pytest

from assay import AssayError
from assay.plugins.reports.resolve import MISSING_MARK, resolve_report
from tests.reports.conftest import analysis, chart, sales


def test_resolved_values_carry_artifact_selector_and_sha256(run):
    record = sales(run)
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "number",
                "label": "North",
                "artifact_id": record.artifact_id,
                "path": [0, "revenue"],
                "format": ",.2f",
            }
        ],
    }
    report = resolve_report(doc, run.artifacts)
    value = report.blocks[0].value
    assert (value.text, value.value, value.numeric) == ("1,234.50", 1234.5, True)
    assert value.source.artifact_id == record.artifact_id and value.source.sha256 == record.sha256
    assert value.selector == {"path": [0, "revenue"]}
    assert (
        report.citations[0]["sha256"] == record.sha256
        and report.citations[0]["rendered"] == "1,234.50"
    )


def test_sources_are_numbered_in_order_of_first_citation(run):
    rows, result, png = sales(run), analysis(run, {"rate": 0.25}), chart(run)
    doc = {
        "title": "t",
        "blocks": [
            {"type": "image", "artifact_id": png.artifact_id},
            {
                "type": "text",
                "text": "{a} {b}",
                "cite": {
                    "a": {"artifact_id": result.artifact_id, "path": "rate"},
                    "b": {"artifact_id": rows.artifact_id, "path": [1, 2]},
                },
            },
            {"type": "table", "artifact_id": rows.artifact_id},
        ],
    }
    report = resolve_report(doc, run.artifacts)
    assert [(s.artifact_id, s.number) for s in report.sources.values()] == [
        (png.artifact_id, 1),
        (result.artifact_id, 2),
        (rows.artifact_id, 3),
    ]


def test_a_cited_null_is_the_missing_mark_and_a_table_keeps_it_as_none(run):
    record = sales(run)
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "number",
                "label": "East",
                "artifact_id": record.artifact_id,
                "path": [2, "revenue"],
            },
            {"type": "table", "artifact_id": record.artifact_id, "max_rows": 2},
        ],
    }
    report = resolve_report(doc, run.artifacts)
    assert report.blocks[0].value.text == MISSING_MARK and report.blocks[0].value.null
    table = report.blocks[1]
    assert table.rows == [["north", 1234.5, 10], ["south", 99.25, 3]]
    assert (table.shown, table.total, table.caption) == (2, 3, "(2 of 3 rows)")
    assert report.missing_used


def test_an_unreadable_citation_fails_the_resolution_naming_the_block(run):
    doc = {
        "title": "t",
        "blocks": [
            {"type": "heading", "text": "h"},
            {"type": "number", "label": "n", "artifact_id": "art_missing", "path": [0]},
        ],
    }
    with pytest.raises(AssayError) as caught:
        resolve_report(doc, run.artifacts)
    assert caught.value.code == "REPORT_CITATION_INVALID"
    assert caught.value.details == {"block": 1, "cause": "ARTIFACT_NOT_FOUND"}


def test_a_chart_block_resolves_its_points_with_filter_sort_and_limit(run):
    record = sales(run)
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "chart",
                "chart": "bar",
                "artifact_id": record.artifact_id,
                "x": "region",
                "y": "orders",
                "sort": [{"column": "orders"}],
                "max_points": 2,
                "caption": "Orders",
            }
        ],
    }
    chart = resolve_report(doc, run.artifacts).blocks[0]
    assert chart.rows == [["east", 0], ["south", 3]]
    assert chart.caption == "(2 of 3 rows, sorted by orders ascending)"
    assert chart.selector["chart"] == "bar" and chart.source.sha256 == record.sha256


def test_markdown_shows_a_chart_block_as_a_table_of_its_points(run):
    record = sales(run)
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "chart",
                "chart": "line",
                "artifact_id": record.artifact_id,
                "x": "region",
                "y": "revenue",
            }
        ],
    }
    text = run.kernel.renderer("markdown").render(doc, run.artifacts).decode()
    assert (
        "| region | revenue |\n|---|---|\n| north | 1,234.50 |\n| south | 99.25 |\n| east | -- |"
        in text
    )
    assert "*(line chart of revenue by region, shown as a table; 3 of 3 rows)*[^1]" in text
