"""Fixtures of the files plugin's tests: real files written in each format (no downloads)."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

SALES = [
    ("north", "2024-01", 120.5),
    ("south", "2024-01", 80.0),
    ("north", "2024-02", 130.0),
    ("south", "2024-02", 95.25),
    ("east", "2024-02", 40.0),
]


def write_csv(
    path: Path, rows=SALES, header=("region", "month", "amount"), sep=",", encoding="utf-8"
) -> Path:
    lines = [sep.join(header)] + [sep.join(str(v) for v in row) for row in rows]
    path.write_bytes(("\n".join(lines) + "\n").encode(encoding))
    return path


def write_parquet(path: Path, rows=SALES) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = list(zip(*rows))
    pq.write_table(
        pa.table({"region": list(cols[0]), "month": list(cols[1]), "amount": list(cols[2])}), path
    )
    return path


def write_xlsx(path: Path, sheets: dict[str, list[tuple]] | None = None) -> Path:
    import xlsxwriter

    sheets = sheets or {"Sales": [("region", "month", "amount"), *SALES]}
    book = xlsxwriter.Workbook(str(path))
    for name, rows in sheets.items():
        sheet = book.add_worksheet(name)
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                sheet.write(r, c, value)
    book.close()
    return path


# A workbook of two sheets: Q1 holds a formula (total = amount * 10) whose cached value is 20.
BOOK = {
    "Q1": [
        ("region", "amount", "when", "total"),
        ("north", 2, datetime.date(2024, 1, 5), "=B2*10"),
    ],
    "Q2 West": [("n",), (3,), (4,)],
}
FORMULA_VALUE = 20.0


def write_xls(path: Path, sheets: dict[str, list[tuple]] = BOOK) -> Path:
    """An Excel 97-2003 (BIFF) workbook; a ``"=..."`` string is a formula cached as FORMULA_VALUE."""
    import struct

    import xlwt
    from xlwt import BIFFRecords
    from xlwt.Cell import FormulaCell

    class CachedFormula(FormulaCell):  # xlwt writes no result for a formula: this one has its value
        __slots__ = ("value",)

        def __init__(self, rowx: int, colx: int, xf_idx: int, frmla: Any, value: float) -> None:
            super().__init__(rowx, colx, xf_idx, frmla)
            self.value = value

        def get_biff_data(self) -> bytes:
            record = BIFFRecords.FormulaRecord(self.rowx, self.colx, self.xf_idx, b"")
            rpn = self.frmla.rpn()
            head = (self.rowx, self.colx, self.xf_idx, self.value, 0, 0)
            record._rec_data = struct.pack("<3HdHL", *head) + rpn
            return record.get()

    book = xlwt.Workbook()
    date = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    for name, rows in sheets.items():
        sheet = book.add_sheet(name, cell_overwrite_ok=True)
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                if isinstance(value, str) and value.startswith("="):
                    formula = xlwt.Formula(value[1:])
                    sheet.write(r, c, formula)  # registers the formula's references
                    sheet.row(r).insert_cell(c, CachedFormula(r, c, 15, formula, FORMULA_VALUE))
                elif isinstance(value, datetime.date):
                    sheet.write(r, c, value, date)
                else:
                    sheet.write(r, c, value)
    book.save(str(path))
    return path


def write_ods(path: Path, sheets: dict[str, list[tuple]] = BOOK) -> Path:
    """An OpenDocument spreadsheet; a ``"=..."`` string is a formula (of:=) cached as FORMULA_VALUE."""
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    def cell(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("="):
            ref = value[1:].replace("B2", "[.B2]")
            made = TableCell(valuetype="float", value=FORMULA_VALUE, formula=f"of:={ref}")
            text = str(FORMULA_VALUE)
        elif isinstance(value, str):
            made, text = TableCell(valuetype="string"), value
        elif isinstance(value, datetime.date):
            made, text = TableCell(valuetype="date", datevalue=value.isoformat()), value.isoformat()
        else:
            made, text = TableCell(valuetype="float", value=value), str(value)
        made.addElement(P(text=text))
        return made

    doc = OpenDocumentSpreadsheet()
    for name, rows in sheets.items():
        table = Table(name=name)
        for row in rows:
            line = TableRow()
            for value in row:
                line.addElement(cell(value))
            table.addElement(line)
        doc.spreadsheet.addElement(table)
    doc.save(str(path))
    return path


@pytest.fixture
def kernel(make_assay_kernel: Callable[..., Any]) -> Any:
    """A kernel with assay's own plugins (SQL, files, evidence)."""
    return make_assay_kernel(load_entrypoints=True).start()


@pytest.fixture
def files_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    return d
