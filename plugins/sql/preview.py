"""The model-facing Markdown preview of a result: two independent limits, rows and characters."""

from __future__ import annotations

import datetime as _dt
import decimal
from typing import Any, Sequence

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


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, max_rows: int, max_chars: int) -> tuple[str, int]:
    """A Markdown table of at most ``max_rows`` rows and ``max_chars`` characters.

    Returns (text, rows shown). The header always fits: a header too wide for
    the budget is itself cut, and no row is shown then.
    """
    header = "| " + " | ".join(cell(c) for c in columns) + " |\n"
    rule = "|" + "|".join("---" for _ in columns) + "|\n"
    text = header + rule
    if len(text) > max_chars:
        return text[: max_chars - 2] + "…\n", 0
    shown = 0
    parts = [text]
    used = len(text)
    for row in rows[:max_rows]:
        line = "| " + " | ".join(cell(v) for v in row) + " |\n"
        if used + len(line) > max_chars:
            break
        parts.append(line)
        used += len(line)
        shown += 1
    return "".join(parts).rstrip("\n"), shown
