"""Table citations apply their filter, sort and limit to the whole artifact; gaps and empty results are honest."""

from __future__ import annotations

import pytest

from assay import AssayError, Kernel
from assay.kernel.evidence import capture_python_execution, capture_sql_execution


@pytest.fixture
def run(only):
    only("local_store", "markdown_report")
    kernel = Kernel()
    with kernel.new_run() as run:
        yield run


def stores(run, n=120):
    # refund rate peaks at row 87: past the 50-row preview and the first rows a plain table shows
    rows = [
        [i, f"store {i}", round(0.01 + (0.5 if i == 87 else (i % 7) / 100), 4)] for i in range(n)
    ]
    return capture_sql_execution(
        run.artifacts,
        columns=["store_id", "store", "refund_rate"],
        rows=iter(rows),
        sql="select store_id, store, refund_rate from s order by store_id",
        database="db",
        dialect="sqlite",
        elapsed_ms=1.0,
    )


def render(run, *blocks):
    return (
        run.kernel.renderer("markdown")
        .render({"title": "t", "blocks": list(blocks)}, run.artifacts)
        .decode()
    )


def test_sorted_table_shows_the_highest_rows_of_the_whole_artifact(run):
    record = stores(run)
    text = render(
        run,
        {
            "type": "table",
            "artifact_id": record.artifact_id,
            "columns": ["store", "refund_rate"],
            "sort": [{"column": "refund_rate", "descending": True}],
            "max_rows": 3,
        },
    )
    lines = [
        line
        for line in text.splitlines()
        if line.startswith("| store ") and "refund_rate" not in line
    ]
    assert lines[0] == "| store 87 | 0.51 |"
    assert "(3 of 120 rows, sorted by refund_rate descending)" in text


def test_filter_then_sort_then_limit(run):
    record = stores(run)
    text = render(
        run,
        {
            "type": "table",
            "artifact_id": record.artifact_id,
            "columns": ["store_id"],
            "filter": [{"column": "store_id", "op": "ge", "value": 100}],
            "sort": [{"column": "store_id", "descending": True}],
            "max_rows": 2,
        },
    )
    assert "| 119 |\n| 118 |" in text
    assert (
        "2 of the 20 rows where store_id >= 100 (120 in all), sorted by store_id descending" in text
    )


def test_an_empty_result_is_no_rows_never_zero(run):
    empty = capture_sql_execution(
        run.artifacts,
        columns=["store", "refunds"],
        rows=iter([]),
        sql="select 1 where 0",
        database="db",
        dialect="sqlite",
        elapsed_ms=1.0,
    )
    text = render(run, {"type": "table", "artifact_id": empty.artifact_id, "caption": "Refunds"})
    assert "*Refunds (no rows: the result is empty)*" in text
    assert "| 0 |" not in text and "0 of 0" not in text


def test_a_filter_that_matches_nothing_says_so(run):
    record = stores(run)
    text = render(
        run,
        {
            "type": "table",
            "artifact_id": record.artifact_id,
            "filter": [{"column": "refund_rate", "op": "gt", "value": 5}],
        },
    )
    assert "(no rows match the filter)" in text


def test_a_table_of_a_python_result_cites_its_path(run):
    py = capture_python_execution(
        run.artifacts,
        code="REPORT_RESULT = {...}",
        result_set=True,
        stdout="",
        stderr="",
        status="succeeded",
        result={
            "by_store": [
                {"store": "a", "rate": 0.2},
                {"store": "b", "rate": 0.7},
                {"store": "c", "rate": None},
            ]
        },
    )
    text = render(
        run,
        {
            "type": "table",
            "artifact_id": py.artifact_id,
            "path": "by_store",
            "columns": ["store", "rate"],
            "sort": [{"column": "rate", "descending": True}],
        },
    )
    assert "| store | rate |\n|---|---|\n| b | 0.7 |\n| a | 0.2 |\n| c | -- |" in text


def test_sorting_an_unknown_column_or_mixed_types_is_refused(run):
    record = stores(run)
    with pytest.raises(AssayError, match="no column"):
        render(
            run,
            {"type": "table", "artifact_id": record.artifact_id, "sort": [{"column": "profit"}]},
        )
    with pytest.raises(AssayError, match="different types"):
        render(
            run,
            {
                "type": "table",
                "artifact_id": record.artifact_id,
                "filter": [{"column": "store", "op": "gt", "value": 3}],
            },
        )


def test_gaps_and_unavailable_values_render_as_missing_and_are_listed(run):
    record = stores(run)
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "number",
                "label": "Rate",
                "artifact_id": record.artifact_id,
                "path": [0, 2],
                "unavailable": "ARTIFACT_INTEGRITY_FAILED",
            }
        ],
        "gaps": [
            {
                "block": 0,
                "kind": "value",
                "artifact_id": record.artifact_id,
                "reason": "hash mismatch",
            }
        ],
    }
    text = run.kernel.renderer("markdown").render(doc, run.artifacts).decode()
    assert "**Rate:** --" in text and "## Gaps" in text and "hash mismatch" in text
