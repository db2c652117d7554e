"""The artifact cap, applied to single values as they arrive (``SQL_VALUE_TOO_LARGE``).

A capture stops at ``ASSAY_ARTIFACT_MAX_BYTES``; a text or binary value
longer than that could never be kept. ``sql_query`` refuses it as its batch
arrives from the engine, before the capture encodes (copies) it again, so
the peak stays at the driver's own copy. Only columns that may hold long
values are looked at: not those the driver promises (``value_kinds``), or
the first rows show, to hold numbers, dates or booleans - unless the engine's
columns are not typed (SQLite), where every column is.
"""

from __future__ import annotations

from operator import itemgetter
from collections.abc import Sequence

from .errors import SQL_VALUE_TOO_LARGE, SqlError

FIXED_KINDS = frozenset({"bool", "int", "date", "naive_datetime", "decimal_text"})
LONG_TYPES = (str, bytes, bytearray, memoryview)


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


def check_value_sizes(batch: list[tuple], columns: list[int], cap: int, names: list[str], before: int) -> None:
    """Raise SQL_VALUE_TOO_LARGE for the first value in ``columns`` longer than ``cap``.

    ``before``: rows of the result before this batch (for the row number in the message).
    """
    for j in columns:
        try:
            longest = max(map(len, filter(None, map(itemgetter(j), batch))), default=0)  # one C-level pass
        except TypeError:  # values of several types in the column (SQLite): look at each
            longest = max((len(v) for v in map(itemgetter(j), batch) if isinstance(v, LONG_TYPES)), default=0)
        if longest <= cap:
            continue
        for i, row in enumerate(batch):
            value = row[j]
            if isinstance(value, LONG_TYPES) and len(value) > cap:
                raise value_too_large(before + i + 1, names[j] if j < len(names) else str(j), len(value), cap)


def value_too_large(row: int, column: str, size: int, cap: int) -> SqlError:
    return SqlError(
        SQL_VALUE_TOO_LARGE,
        f"row {row:,}, column {column!r} holds a value of {size:,} characters/bytes, more than the artifact cap "
        f"ASSAY_ARTIFACT_MAX_BYTES={cap:,}: it cannot be kept as evidence, so the query was stopped",
        "Select part of the value (left(col, 1000) / substring), its length(col) or a hash (md5(col)) instead.",
        details={"row": row, "column": column, "value_size": size, "max_bytes": cap},
    )
