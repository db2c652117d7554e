"""Excel 97-2003 (.xls) and OpenDocument (.ods) workbooks: each sheet a table queried with sql_query, its
formulas read as their values, and a corrupt one refused with its code and nothing registered."""

from __future__ import annotations

import pytest

from assay.plugins.files import attach_files
from tests.files.conftest import write_ods, write_xls
from tests.files.test_files_bad_input import refused

WRITERS = {".xls": write_xls, ".ods": write_ods}
# What calamine gives each format: .xls keeps whole numbers and date-times, .ods has floats and dates.
EXPECTED = {
    ".xls": (
        ["VARCHAR", "BIGINT", "TIMESTAMP_MS", "DOUBLE"],
        "| north | 2 | 2024-01-05 00:00:00 | 20.0 |",
    ),
    ".ods": (["VARCHAR", "DOUBLE", "DATE", "DOUBLE"], "| north | 2.0 | 2024-01-05 | 20.0 |"),
}


def sql(kernel, text):
    result = kernel.call_tool("sql_query", {"sql": text}, run=kernel.new_run())
    assert result.success, result.message
    return result


@pytest.mark.parametrize("ext", [".xls", ".ods"])
def test_each_sheet_of_the_workbook_is_a_table_queried_with_sql_query(kernel, files_dir, ext):
    WRITERS[ext](files_dir / f"book{ext}")
    attach_files(kernel, [str(files_dir / f"book{ext}")])
    listed = kernel.call_tool("list_tables", {})
    assert sorted(t["name"] for t in listed.data) == ["book_q1", "book_q2_west"]
    sheets = {t.name: t.sheet for t in kernel.resources["files"].manifest.tables}
    assert sheets == {"book_q1": "Q1", "book_q2_west": "Q2 West"}
    assert "| 7.0 |" in sql(kernel, "SELECT sum(n)::DOUBLE AS s FROM book_q2_west").content
    joined = sql(kernel, "SELECT count(*) AS c FROM book_q1, book_q2_west WHERE n > amount")
    assert "| 2 |" in joined.content  # one query over both sheets


@pytest.mark.parametrize("ext", [".xls", ".ods"])
def test_a_formula_cell_is_its_value_and_each_column_has_its_type(kernel, files_dir, ext):
    WRITERS[ext](files_dir / f"book{ext}")
    attach_files(kernel, [str(files_dir / f"book{ext}")])
    result = sql(kernel, 'SELECT region, amount, "when", total FROM book_q1')
    types, row = EXPECTED[ext]
    assert result.data["column_types"] == types
    assert row in result.content  # total is the formula's cached value (20.0), never "B2*10"


@pytest.mark.parametrize("ext", [".xls", ".ods"])
def test_a_corrupt_workbook_is_refused_and_nothing_is_registered(
    kernel, files_dir, assay_home, ext
):
    good = WRITERS[ext](files_dir / f"good{ext}").read_bytes()
    (files_dir / f"broken{ext}").write_bytes(good[: len(good) // 2])
    assert refused(kernel, assay_home, str(files_dir / f"broken{ext}")) == "FILE_CORRUPT"
