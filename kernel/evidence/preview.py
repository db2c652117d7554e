"""Bounded previews: at most 100 rows and 256 KiB, built from the first rows only.

The cost of a preview does not depend on how many rows a result has: the
builder stops looking once it is full, and rendering reads only the record.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .canonical import dumps, dumps_bytes, iter_lines

_CLIP_MARK = "…"


def clip_value(value: Any, limit: int) -> tuple[Any, bool]:
    """``value`` with strings longer than ``limit`` characters cut (and whether anything was)."""
    if isinstance(value, str):
        if len(value) > limit:
            return value[:limit] + _CLIP_MARK, True
        return value, False
    if isinstance(value, list):
        out, clipped = [], False
        for v in value:
            c, was = clip_value(v, limit)
            out.append(c)
            clipped |= was
        return out, clipped
    if isinstance(value, dict):
        out_d, clipped = {}, False
        for k, v in value.items():
            c, was = clip_value(v, limit)
            out_d[k] = c
            clipped |= was
        return out_d, clipped
    return value, False


class PreviewBuilder:
    """Collects the first rows of a capture within a row and byte budget."""

    def __init__(self, max_rows: int, max_bytes: int) -> None:
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.rows: list[list[Any]] = []
        self.used = 0
        self.clipped = False
        self.full = max_rows == 0

    def offer_lines(self, data: bytes) -> None:
        """Offer canonical JSON lines (UTF-8, each ending in a newline)."""
        for line in iter_lines(data):
            if self.full:
                return
            self.offer_line(line)

    def offer_line(self, line: bytes) -> None:
        size = len(line) + 1
        if self.used + size <= self.max_bytes:
            self.rows.append(json.loads(line))
            self.used += size
        else:
            if not self.rows:  # one row alone is over budget: keep it with its text cut
                row = json.loads(line)
                width = max(1, len(row) if isinstance(row, list) else 1)
                limit = max(16, self.max_bytes // (4 * width))
                while True:
                    clipped, _ = clip_value(row, limit)
                    size = len(dumps_bytes(clipped)) + 1
                    if size <= self.max_bytes or limit <= 16:
                        break
                    limit //= 2
                if size <= self.max_bytes:
                    self.rows.append(clipped if isinstance(clipped, list) else [clipped])
                    self.used += size
            self.clipped = True
            self.full = True
            return
        if len(self.rows) >= self.max_rows:
            self.full = True

    def result(self, row_count: int) -> tuple[list[list[Any]], bool]:
        rows = self.rows[:row_count]
        return rows, self.clipped or len(rows) < row_count


def markdown_table(
    columns: Sequence[Any],
    rows: Iterable[Sequence[Any]],
    cell: Callable[[Any], str],
    *,
    max_rows: int | None = None,
    max_chars: int | None = None,
) -> tuple[str, int]:
    """The one Markdown table writer: (text, rows shown) of ``rows`` under ``columns``, each cell written
    by ``cell`` (which escapes ``|`` and newlines its own way).

    At most ``max_rows`` rows and ``max_chars`` characters (newlines counted); the header always fits: a
    header too wide for the budget is itself cut, and no row is shown then.
    """
    header = (
        "| " + " | ".join(cell(c) for c in columns) + " |\n" + "|" + "---|" * len(columns) + "\n"
    )
    if max_chars is not None and len(header) > max_chars:
        return header[: max_chars - 2] + _CLIP_MARK + "\n", 0
    parts, used, shown = [header], len(header), 0
    for row in rows:
        if max_rows is not None and shown >= max_rows:
            break
        line = "| " + " | ".join(cell(v) for v in row) + " |\n"
        if max_chars is not None and used + len(line) > max_chars:
            break
        parts.append(line)
        used += len(line)
        shown += 1
    return "".join(parts).rstrip("\n"), shown


def render_preview(
    record: Any, max_rows: int = 50, max_chars: int = 8_000, cell_chars: int = 200
) -> str:
    """A markdown table of the record's first rows, for a tool's model-facing content.

    States the total row count and the artifact id, and says when the table
    shows only part of the result.
    """
    columns = list(record.columns)
    lines: list[str] = []
    shown = 0
    if columns:
        table, shown = markdown_table(
            columns,
            record.preview,
            lambda v: _cell(v, cell_chars),
            max_rows=max_rows,
            max_chars=max_chars,
        )
        lines.append(table)
    total = record.row_count
    cut = _cut_by(shown, len(record.preview), total, max_rows, max_chars)
    if total is None:
        tail = f"artifact {record.artifact_id}"
    elif not record.complete:
        tail = f"showing rows 1-{shown} of the {total} kept{cut}; artifact {record.artifact_id}"
    elif shown < total:
        tail = f"showing rows 1-{shown} of {total}{cut}; the full result is artifact {record.artifact_id}"
    else:
        tail = f"{total} rows; artifact {record.artifact_id}"
    if not record.complete:
        tail += f". {record.incomplete_note()}"
    lines.append(tail)
    return "\n".join(lines)


def _cut_by(shown: int, previewed: int, total: int | None, max_rows: int, max_chars: int) -> str:
    """Which limit cut the table: the caller's rows, its characters, or the stored preview."""
    if total is None or shown >= total:
        return ""
    if shown < min(max_rows, previewed):
        return f" (cut at {max_chars:,} characters)"
    if shown >= max_rows:
        return f" (the first {max_rows} rows)"
    return " (the stored preview's limit)"


def _cell(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else ("NULL" if value is None else dumps(value))
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + _CLIP_MARK
