"""Workbooks (.xlsx, .xlsm, .xls, .ods): each sheet read once by fastexcel (calamine) into Arrow.

Values only, never formulas (calamine reads the cached values). Before any sheet is read, a zip-based
workbook's declared sizes are checked against ``max_expanded_bytes``: a zip bomb of a few KB that expands
to GBs is refused by what it declares. A password-protected .xlsx is an OLE container, not a zip:
``FILE_ENCRYPTED``.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import (
    FILE_CORRUPT,
    FILE_ENCRYPTED,
    FILE_NO_ROWS,
    FILE_READER_MISSING,
    FILE_TOO_LARGE,
    FileError,
)

_OLE = b"\xd0\xcf\x11\xe0"


def check_container(path: Path, ext: str, max_expanded_bytes: int) -> None:
    """Refuse an encrypted, corrupt or over-large workbook before its reader sees it."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    if ext != ".xls" and head.startswith(_OLE):
        raise FileError(
            FILE_ENCRYPTED,
            f"{path.name}: the workbook is password-protected",
            "Save a copy without a password and register that.",
        )
    if ext == ".xls":
        return
    try:
        with zipfile.ZipFile(path) as zf:
            declared = sum(info.file_size for info in zf.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise FileError(
            FILE_CORRUPT,
            f"{path.name}: not a readable workbook ({exc})",
            "Open and save the file again in a spreadsheet program.",
        ) from None
    if declared > max_expanded_bytes:
        raise FileError(
            FILE_TOO_LARGE,
            f"{path.name}: the workbook declares {declared:,} bytes uncompressed "
            f"(the limit is {max_expanded_bytes:,})",
            "Raise [files] max_excel_expanded_bytes if the workbook is genuine.",
            details={"declared_bytes": declared},
        )


def table_name(base: str, sheet: str, sheets: int) -> str:
    """``sales`` for a one-sheet workbook, ``sales_q1`` for its sheet Q1 otherwise."""
    if sheets == 1:
        return base
    return f"{base}_{re.sub(r'[^a-z0-9_]+', '_', sheet.lower()).strip('_') or 'sheet'}"


def read_sheets(path: Path) -> Iterator[tuple[str, Any]]:
    """(sheet name, pyarrow table) per non-empty sheet."""
    try:
        import fastexcel
    except ImportError:  # pragma: no cover - the files extra installs it
        raise FileError(
            FILE_READER_MISSING, "fastexcel is not installed", "pip install 'assay[files]'"
        ) from None
    try:
        reader = fastexcel.read_excel(str(path))
        names = list(reader.sheet_names)
    except Exception as exc:  # noqa: BLE001 - fastexcel raises its own hierarchy
        raise _corrupt(path, exc) from None
    found = 0
    for name in names:
        try:
            sheet = reader.load_sheet(name)
            table = sheet.to_arrow()
        except Exception as exc:  # noqa: BLE001
            if "empty" in str(exc).lower():
                continue
            raise _corrupt(path, exc) from None
        if table.num_rows == 0:
            continue
        found += 1
        yield name, table
    if not found:
        raise FileError(
            FILE_NO_ROWS, f"{path.name}: no sheet has rows", "Register a workbook with data in it."
        )


def _corrupt(path: Path, exc: BaseException) -> FileError:
    text = str(exc)
    if "password" in text.lower() or "encrypt" in text.lower():
        return FileError(
            FILE_ENCRYPTED,
            f"{path.name}: the workbook is password-protected",
            "Save a copy without a password and register that.",
        )
    return FileError(
        FILE_CORRUPT,
        f"{path.name}: the workbook cannot be read ({text[:200]})",
        "Open and save the file again in a spreadsheet program.",
    )
