"""The model-facing Markdown preview of a result: two independent limits, rows and characters."""

from __future__ import annotations

import datetime as _dt
import decimal
from collections.abc import Sequence
from typing import Any

from assay.kernel.evidence.preview import markdown_table as evidence_markdown_table

MAX_CELL_CHARS = 300


def cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        text = f"<{len(value)} bytes>"
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, (decimal.Decimal, _dt.date, _dt.time, _dt.datetime)):
        text = str(value)
    else:
        text = str(value)
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    if len(text) > MAX_CELL_CHARS:
        text = text[: MAX_CELL_CHARS - 1] + "…"
    return text


def markdown_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, max_rows: int, max_chars: int
) -> tuple[str, int]:
    """A Markdown table of at most ``max_rows`` rows and ``max_chars`` characters: (text, rows shown),
    written by the evidence layer's one table writer with this module's cells."""
    return evidence_markdown_table(columns, rows, cell, max_rows=max_rows, max_chars=max_chars)
