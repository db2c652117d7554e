"""What a statement gives back: a fetched :class:`QueryResult`, or the :class:`RowStream` a consumer pulls
while the engine streams (counted, the first rows kept, the row, value and row-size bounds enforced)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from itertools import chain
from typing import TYPE_CHECKING, Any

from assay.kernel.evidence import RowBatches

from .engines.base import Streamed
from .errors import SQL_RESULT_TOO_LARGE, SQL_ROW_TOO_LARGE, SQL_VALUE_TOO_LARGE, SqlError
from .value_limits import check_row_sizes, check_value_sizes, long_value_columns

if TYPE_CHECKING:
    from .execution import Attempt


@dataclass
class QueryResult:
    """Rows of one finished statement (already fetched) and how long it took."""

    columns: list[str]
    column_types: list[str]
    rows: list[tuple]  # every row; only the first ``Attempt.keep_rows`` when the rows were streamed
    elapsed_ms: float
    # Columns whose values are decimal text (``str`` or ASCII ``bytes``) instead of ``Decimal``: only when the
    # caller asked for it (``Attempt.decimal_text``) and the engine could give it cheaply.
    decimal_text: tuple[int, ...] = ()
    total_rows: int | None = (
        None  # set when the rows were streamed (``rows`` is then the head only)
    )
    consumed: Any = None  # what ``Attempt.consume`` returned (the captured artifact)

    @property
    def row_count(self) -> int:
        return len(self.rows) if self.total_rows is None else self.total_rows

    def head(self, n: int) -> list[tuple]:
        """The first ``n`` rows as the driver would give them (decimal text back to ``Decimal``)."""
        rows = self.rows[:n]
        if not self.decimal_text:
            return rows
        cols = set(self.decimal_text)
        return [
            tuple(
                _decimal(v) if j in cols and isinstance(v, (str, bytes)) else v
                for j, v in enumerate(row)
            )
            for row in rows
        ]


def _decimal(text: str | bytes) -> Decimal:
    return Decimal(text.decode("ascii") if isinstance(text, bytes) else text)


class RowStream:
    """A running statement's rows as ``Attempt.consume`` pulls them, on the worker thread.

    Counted as they pass, the first ``keep`` kept for the preview, the row limit
    enforced; a failure of the statement itself is kept in ``error`` so that it
    wins over the consumer's own error about the rows ending early.
    """

    def __init__(
        self,
        streamed: Streamed,
        columns: list[str],
        column_types: list[str],
        first: list[tuple],
        attempt: Attempt,
        limit: int,
        typed_columns: bool = True,
        value_cap: int | None = None,
        row_cap: int | None = None,
        longest: int = 2**62,
    ) -> None:
        self.columns, self.column_types, self.decimal_text = (
            columns,
            column_types,
            streamed.decimal_text,
        )
        self._typed = (
            typed_columns  # False (SQLite): a column's values may be of any type, row by row
        )
        self.value_kinds = streamed.value_kinds
        self._batches, self._first, self._attempt, self._limit = (
            streamed.batches,
            first,
            attempt,
            limit,
        )
        self.head: list[tuple] = []
        self.count = 0
        self.error: BaseException | None = None
        self.finished_at: float | None = None
        self._wide: list[int] | None = None  # columns that may hold long values (text, binary)
        self._value_cap = value_cap  # refuse a value longer than this (None: none can be)
        self._row_cap = row_cap  # refuse a row whose long values are longer than this together
        self._row_columns: list[int] | None = None  # the columns a row's size is counted over
        self._longest = longest  # no value can be longer than this

    @property
    def sql(self) -> str | None:
        """The SQL that runs (written from the checked statement)."""
        return self._attempt.sql

    @property
    def rows(self) -> Iterable[tuple]:
        """The rows, in the batches the engine produced (a capture takes them whole)."""
        return RowBatches(self._counted())

    def elapsed_ms(self) -> float:
        """From the statement's start to its last row (so far, while it is still streaming)."""
        end = self.finished_at if self.finished_at is not None else time.monotonic()
        return (end - (self._attempt.started or end)) * 1000

    def drain(self) -> None:
        """Count the rows the consumer left unread (it may stop at its own size limit)."""
        for _ in self._counted():
            pass

    def _counted(self) -> Iterator[list[tuple]]:
        try:
            batches = chain([self._first], self._batches) if self._first else self._batches
            self._first = []
            cap, row_cap = self._value_cap, self._row_cap
            for batch in batches:
                if cap is not None and batch:
                    if self._wide is None:
                        self._wide = long_value_columns(batch, self.value_kinds, self._typed)
                    check_value_sizes(batch, self._wide, cap, self.columns, self.count)
                if row_cap is not None and batch and self._row_columns is None:
                    # The columns the first batch shows to hold long values (on SQLite too: measuring every
                    # column there costs as much as the capture; a row missed here is still cut by the
                    # capture at the artifact cap). Too few of them for a row to be over: not measured.
                    self._row_columns = long_value_columns(batch, self.value_kinds, True)
                    if len(self._row_columns) * self._longest <= row_cap:
                        row_cap = None
                if row_cap is not None and batch:
                    check_row_sizes(batch, self._row_columns or [], row_cap, self.count)
                self.count += len(batch)
                if self.count > self._limit:
                    raise too_large(self._limit)
                if len(self.head) < self._attempt.keep_rows:
                    self.head.extend(batch[: self._attempt.keep_rows - len(self.head)])
                yield batch
            if self.finished_at is None:
                self.finished_at = time.monotonic()
                self._attempt._rows_done()
        except GeneratorExit:
            raise
        except BaseException as exc:
            if (
                isinstance(exc, SqlError)
                and exc.code in (SQL_VALUE_TOO_LARGE, SQL_ROW_TOO_LARGE)
                and exc.details.get("row") is None
            ):  # refused by the engine: past the rows already here
                exc.details["after_rows"] = self.count
                exc.message += f" (after the first {self.count:,} rows)"
            self.error = exc
            raise


def too_large(limit: int) -> SqlError:
    return SqlError(
        SQL_RESULT_TOO_LARGE,
        f"the result has more than {limit:,} rows",
        "Aggregate in SQL or add a LIMIT; the full result is kept as evidence only up to that size.",
    )
