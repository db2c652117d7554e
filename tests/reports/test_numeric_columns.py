"""PostgreSQL NUMERIC columns sort, rank and filter as exact numbers in a report (a column stores whole
decimals as ints and the others as ``{"$decimal": ...}``: both are numbers)."""

from __future__ import annotations

import pytest

from assay import AssayError
from assay.kernel.evidence import capture_sql_execution
from tests.reports.conftest import RENDERER_PLUGINS


@pytest.fixture
def pg_run(pg_stores, monkeypatch):
    from assay import Kernel

    monkeypatch.setenv("ASSAY_LOAD_PLUGINS", RENDERER_PLUGINS)
    kernel = Kernel()
    with kernel.new_run() as run:
        yield run
    kernel.close()


def markdown(run, *blocks) -> str:
    return (
        run.kernel.renderer("markdown")
        .render({"title": "t", "blocks": list(blocks)}, run.artifacts)
        .decode()
    )


def test_top_10_stores_by_postgresql_numeric_revenue_without_a_cast(pg_run):
    result = pg_run.kernel.call_tool(
        "sql_query",
        {"sql": "SELECT store, revenue FROM stores", "datasource": "pgshop"},
        run=pg_run,
    )
    assert result.success, result.message
    artifact = result.artifacts[0].artifact_id
    text = markdown(
        pg_run,
        {
            "type": "table",
            "artifact_id": artifact,
            "columns": ["store", "revenue"],
            "sort": [{"column": "revenue", "descending": True}],
            "max_rows": 10,
            "caption": "Top 10 stores by revenue",
        },
    )
    shown = [
        line.split(" | ")[0].lstrip("| ")
        for line in text.splitlines()
        if line.startswith("| store ") and "revenue" not in line
    ]
    assert shown == [
        f"store {i}" for i in range(30, 20, -1)
    ]  # 30000 (a whole decimal) above 29000.25
    filtered = markdown(
        pg_run,
        {
            "type": "table",
            "artifact_id": artifact,
            "columns": ["store"],
            "filter": [{"column": "revenue", "op": "gt", "value": 28000.25}],
        },
    )
    assert "(2 of the 2 rows where revenue > 28000.25 (30 in all))" in filtered


def test_decimals_compare_exactly_with_ints_and_floats(run):
    record = capture_sql_execution(
        run.artifacts,
        columns=["k", "v"],
        dialect="postgresql",
        database="db",
        elapsed_ms=1.0,
        sql="select",
        rows=iter(
            [
                ["a", {"$decimal": "0.1"}],
                ["b", 2],
                ["c", {"$decimal": "1.99999999999999999999"}],
                ["d", None],
                ["e", {"$decimal": "NaN"}],
                ["f", 0.3],
            ]
        ),
    )
    text = markdown(
        run,
        {
            "type": "table",
            "artifact_id": record.artifact_id,
            "columns": ["k"],
            "sort": [{"column": "v"}],
        },
    )
    assert [line for line in text.splitlines() if line.startswith("| ") and "k |" not in line] == [
        "| a |",
        "| f |",
        "| c |",
        "| b |",
        "| e |",
        "| d |",
    ]  # NaN after the numbers, NULL last
    equal = markdown(
        run,
        {
            "type": "table",
            "artifact_id": record.artifact_id,
            "columns": ["k"],
            "filter": [{"column": "v", "op": "eq", "value": 0.1}],
        },
    )
    assert "| a |" in equal and "1 of the 1 rows" in equal


def test_a_column_of_numbers_and_text_is_refused_with_a_hint_about_its_values(run):
    record = capture_sql_execution(
        run.artifacts,
        columns=["v"],
        rows=iter([[1], ["x"]]),
        sql="select",
        database="db",
        dialect="sqlite",
        elapsed_ms=1.0,
    )
    with pytest.raises(AssayError) as caught:
        markdown(
            run, {"type": "table", "artifact_id": record.artifact_id, "sort": [{"column": "v"}]}
        )
    assert "(number, str)" in caught.value.message
    assert (
        "Cite columns the artifact has" not in caught.value.hint
        and "all numbers" in caught.value.hint
    )
