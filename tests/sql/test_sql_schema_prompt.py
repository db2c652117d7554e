"""The schema part of the prompt: under budget, the largest tables summarised, order kept."""

from __future__ import annotations

from assay.plugins.sql.schema import ColumnInfo, TableInfo, render_schema


def table(name: str, columns: int) -> TableInfo:
    return TableInfo(
        name=name, columns=[ColumnInfo(name=f"col_{i}", type="INTEGER") for i in range(columns)]
    )


def test_the_largest_tables_are_summarised_and_the_small_ones_shown_in_full_in_their_order():
    tables = [
        table("wide_facts", 80),
        table("stores", 3),
        table("huge_events", 120),
        table("regions", 2),
    ]
    text = render_schema("header", tables, 700)
    assert len(text) <= 700
    assert text.index("stores (") < text.index("regions (") and "  col_2 INTEGER" in text
    summary = text.split("Also (columns not shown; call describe_table): ", 1)[1]
    assert "wide_facts" in summary and "huge_events" in summary
    assert "2 of 4 tables shown in full" in text
