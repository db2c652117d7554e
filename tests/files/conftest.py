"""Fixtures of the files plugin's tests: real files written in each format (no downloads)."""

from __future__ import annotations

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


@pytest.fixture
def kernel(make_assay_kernel: Callable[..., Any]) -> Any:
    """A kernel with assay's own plugins (SQL, files, evidence)."""
    return make_assay_kernel(load_entrypoints=True).start()


@pytest.fixture
def files_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    return d
