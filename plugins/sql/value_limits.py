"""Bounds on single values and rows (``SQL_VALUE_TOO_LARGE``, ``SQL_ROW_TOO_LARGE``).

Two places refuse a value longer than ``max_value_bytes`` (or than the
artifact cap ``ASSAY_ARTIFACT_MAX_BYTES``, whichever is lower) and a row
whose text/binary values are longer together than ``max_row_bytes``:

- **The engine, before the value is sent**, where it can: SQLite's own
  length limit (``SQLITE_LIMIT_LENGTH``: the value is never made); on
  PostgreSQL and DuckDB a projection over the statement whose filter checks
  each long column's length on the server and raises an error naming the
  column and size (:func:`bounds_filter`), so the value never reaches the
  client. The engine's error carries :data:`MARKER`; :func:`from_engine`
  turns it into the refusal.
- **Here, as each batch arrives** (MariaDB/MySQL, whose values are bounded by
  the server's ``max_allowed_packet``, and any statement the projection
  cannot wrap): before the capture encodes (copies) it again. Only columns
  that may hold long values are looked at: not those the driver promises
  (``value_kinds``), or the first rows show, to hold numbers, dates or
  booleans - unless the engine's columns are not typed (SQLite), where every
  column is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from operator import itemgetter

from .errors import SQL_ROW_TOO_LARGE, SQL_VALUE_TOO_LARGE, SqlError

FIXED_KINDS = frozenset({"bool", "int", "date", "naive_datetime", "decimal_text"})
LONG_TYPES = (str, bytes, bytearray, memoryview)
# In the engine's error: 'assay:SQL_VALUE_TOO_LARGE:<column index>:<size>' / 'assay:SQL_ROW_TOO_LARGE:-1:<size>'
MARKER = "assay:"
_MARKED = re.compile(r"assay:(SQL_VALUE_TOO_LARGE|SQL_ROW_TOO_LARGE):(-?\d+):(\d+)")
VALUE_HINT = "Select part of the value (left(col, 1000) / substring), its length(col) or a hash (md5(col)) instead."
ROW_HINT = "Select fewer or shorter columns (left(col, 1000), length(col), md5(col)) instead."


def long_value_columns(batch: list[tuple], kinds: Sequence[str] | None, typed: bool) -> list[int]:
    """Columns of the result (seen in its first batch) that may hold long values."""
    if not typed:
        return list(range(len(batch[0])))
    wide = []
    for j in range(len(batch[0])):
        if kinds is not None and kinds[j] in FIXED_KINDS:
            continue
        first = next((row[j] for row in batch if row[j] is not None), None)
        if first is None or isinstance(first, LONG_TYPES):
            wide.append(j)
    return wide


def _length(value: object) -> int:
    return len(value) if isinstance(value, LONG_TYPES) else 0


def check_value_sizes(
    batch: list[tuple], columns: list[int], cap: int, names: list[str], before: int
) -> None:
    """Raise SQL_VALUE_TOO_LARGE for the first value in ``columns`` longer than ``cap``.

    ``before``: rows of the result before this batch (for the row number in the message).
    """
    for j in columns:
        if _longest(batch, j) <= cap:
            continue
        for i, row in enumerate(batch):
            value = row[j]
            if isinstance(value, LONG_TYPES) and len(value) > cap:
                raise value_too_large(
                    before + i + 1, names[j] if j < len(names) else str(j), len(value), cap
                )


def check_row_sizes(batch: list[tuple], columns: list[int], cap: int, before: int) -> None:
    """Raise SQL_ROW_TOO_LARGE for the first row whose values in ``columns`` are longer than ``cap`` together."""
    if (
        sum(_longest(batch, j) for j in columns) <= cap
    ):  # no row is longer than its columns' longest together
        return
    for i, row in enumerate(batch):
        size = sum(_length(row[j]) for j in columns)
        if size > cap:
            raise row_too_large(before + i + 1, size, cap)


def _longest(batch: list[tuple], j: int) -> int:
    try:
        return max(map(len, filter(None, map(itemgetter(j), batch))), default=0)  # one C-level pass
    except TypeError:  # values of several types in the column (SQLite): look at each
        return max(
            (len(v) for v in map(itemgetter(j), batch) if isinstance(v, LONG_TYPES)), default=0
        )


def value_too_large(row: int | None, column: str, size: int, cap: int) -> SqlError:
    where = f"row {row:,}" if row is not None else "a row"
    return SqlError(
        SQL_VALUE_TOO_LARGE,
        f"{where}, column {column!r} holds a value of {size:,} characters/bytes, more than the limit of "
        f"{cap:,} (the lower of max_value_bytes and ASSAY_ARTIFACT_MAX_BYTES): it cannot be kept as evidence, "
        "so the query was stopped",
        VALUE_HINT,
        details={"row": row, "column": column, "value_size": size, "max_bytes": cap},
    )


def row_too_large(row: int | None, size: int, cap: int) -> SqlError:
    where = f"row {row:,}" if row is not None else "a row"
    return SqlError(
        SQL_ROW_TOO_LARGE,
        f"{where} holds {size:,} characters/bytes of text and binary values, more than max_row_bytes "
        f"= {cap:,}: it cannot be kept as evidence, so the query was stopped",
        ROW_HINT,
        details={"row": row, "row_size": size, "max_row_bytes": cap},
    )


def from_engine(
    exc: BaseException, names: Sequence[str], value_cap: int, row_cap: int
) -> SqlError | None:
    """The refusal an engine raised for :func:`bounds_filter` (the value was never sent), or None."""
    m = _MARKED.search(str(exc))
    if m is None:
        return None
    code, index, size = m.group(1), int(m.group(2)), int(m.group(3))
    if code == SQL_ROW_TOO_LARGE:
        return row_too_large(None, size, row_cap)
    return value_too_large(
        None, names[index] if 0 <= index < len(names) else str(index), size, value_cap
    )


def bounds_filter(lengths: dict[int, str], value_cap: int, row_cap: int, fail: str) -> str:
    """A boolean SQL expression that is true, or raises the engine's error with :data:`MARKER`.

    ``lengths``: column index -> the SQL of its length in bytes; ``fail``: the SQL that raises an error
    whose message is its argument, with ``{}`` where the message's SQL goes (DuckDB ``error({})``).
    """
    cases = [
        f"WHEN {sql} > {value_cap} THEN {fail.format(_msg(SQL_VALUE_TOO_LARGE, j, sql))}"
        for j, sql in lengths.items()
    ]
    if len(lengths) > 1 and len(lengths) * value_cap > row_cap:  # a row may be longer than row_cap
        total = " + ".join(f"coalesce({sql}, 0)" for sql in lengths.values())
        cases.append(
            f"WHEN {total} > {row_cap} THEN {fail.format(_msg(SQL_ROW_TOO_LARGE, -1, total))}"
        )
    return f"CASE {' '.join(cases)} ELSE true END"


def _msg(code: str, index: int, size_sql: str) -> str:
    return f"'{MARKER}{code}:{index}:' || CAST({size_sql} AS VARCHAR)"
