"""Running one statement with a time limit that really stops it.

A worker thread holds the pooled connection and runs the statement; the
caller waits for it. When the deadline passes (or the caller is cancelled)
the waiter asks the engine to cancel the statement, then waits a short grace
period for the worker to come back. Only a worker that came back counts as
"confirmed stopped"; otherwise the message says cancellation was requested
and nothing more.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kernel.log import get_logger
from kernel.settings import mask_url

from .engines import SqlEngine
from .errors import (
    SQL_DATASOURCE_BUSY,
    SQL_DATASOURCE_UNAVAILABLE,
    SQL_QUERY_CANCELLED,
    SQL_QUERY_FAILED,
    SQL_QUERY_TIMEOUT,
    SQL_RESULT_TOO_LARGE,
    TIMEOUT_HINT,
    SqlError,
)

log = get_logger("assay.sql")


@dataclass
class QueryResult:
    """Rows of one finished statement (already fetched) and how long it took."""

    columns: list[str]
    column_types: list[str]
    rows: list[tuple]
    elapsed_ms: float
    # Columns whose values are decimal text (``str`` or ASCII ``bytes``) instead of ``Decimal``: only when the
    # caller asked for it (``Attempt.decimal_text``) and the engine could give it cheaply.
    decimal_text: tuple[int, ...] = ()

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def head(self, n: int) -> list[tuple]:
        """The first ``n`` rows as the driver would give them (decimal text back to ``Decimal``)."""
        rows = self.rows[:n]
        if not self.decimal_text:
            return rows
        cols = set(self.decimal_text)
        return [tuple(_decimal(v) if j in cols and isinstance(v, (str, bytes)) else v for j, v in enumerate(row))
                for row in rows]


def _decimal(text: str | bytes) -> Decimal:
    return Decimal(text.decode("ascii") if isinstance(text, bytes) else text)


@dataclass
class Attempt:
    """One statement's shared state between the waiting caller and the worker."""

    timeout_s: float
    # The caller takes numeric columns as decimal text (QueryResult.decimal_text): sql_query
    # stores them canonically and previews them as Decimal; other callers get Decimal.
    decimal_text: bool = False
    deadline: float | None = None
    started: float | None = None
    session_id: Any = None
    raw: Any = None
    done: bool = False
    result: QueryResult | None = None
    error: BaseException | None = None
    stop_reason: str | None = None  # "timeout" or "cancelled", once cancellation was asked for
    cancel_sent_at: float | None = None
    finished_at: float | None = None
    statement_done: bool = False  # set before the connection is reset and handed back to the pool
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _external_cancel: bool = False

    def cancel_requested(self) -> bool:
        return self.stop_reason is not None or self._external_cancel

    def request_cancel(self) -> None:
        """Ask for the statement to stop (the calling task was cancelled); thread-safe."""
        with self._cond:
            self._external_cancel = True
            self._cond.notify_all()

    def _mark_started(self, raw: Any, session_id: Any) -> None:
        with self._cond:
            self.raw, self.session_id = raw, session_id
            self._cond.notify_all()

    def _finish(self, result: QueryResult | None, error: BaseException | None) -> None:
        with self._cond:
            self.result, self.error, self.done = result, error, True
            self.finished_at = time.monotonic()
            self._cond.notify_all()


class Executor:
    """Runs statements of one datasource: pool, worker threads and the cancel path."""

    def __init__(self, name: str, engine: SqlEngine, pool: Any, *, cancel_grace_s: float,
                 backstop_margin_s: float, max_result_rows: int) -> None:
        self.name = name
        self.engine = engine
        self.pool = pool
        self.cancel_grace_s = cancel_grace_s
        self.backstop_margin_s = backstop_margin_s
        self.max_result_rows = max_result_rows
        self._seq = 0

    def run(self, sql: str, attempt: Attempt, params: Any = None) -> QueryResult:
        """Run ``sql`` within ``attempt.timeout_s``; raise :class:`SqlError` on timeout, cancel or failure."""
        # A daemon thread per statement: a statement that never stops must not keep the process alive.
        self._seq += 1
        threading.Thread(target=self._work, args=(sql, params, attempt), daemon=True,
                         name=f"assay-sql-{self.name}-{self._seq}").start()
        reason = self._wait(attempt)
        if reason is None:
            if attempt.error is not None:
                if attempt._external_cancel:  # SQLite's handler saw the cancel before the waiter did
                    return self._stop(attempt, "cancelled")
                raise self._failure(attempt, attempt.error)
            assert attempt.result is not None
            return attempt.result
        return self._stop(attempt, reason)

    # --- the worker -------------------------------------------------------

    def _work(self, sql: str, params: Any, attempt: Attempt) -> None:
        try:
            fairy = self.pool.connect()
        except Exception as exc:  # noqa: BLE001
            attempt._finish(None, _connect_error(self.name, exc))
            return
        raw = fairy.dbapi_connection
        result: QueryResult | None = None
        error: BaseException | None = None
        healthy = True
        try:
            if attempt.cancel_requested():  # cancelled while waiting for a connection: never start
                raise SqlError(SQL_QUERY_CANCELLED, "cancelled before the statement was sent")
            attempt.started = time.monotonic()
            attempt.deadline = attempt.started + attempt.timeout_s
            attempt._mark_started(raw, self.engine.session_id(raw))
            self.engine.begin(raw, attempt, attempt.timeout_s + self.backstop_margin_s)
            cur = self.engine.cursor(raw)
            try:
                if params is None:
                    cur.execute(sql)
                else:
                    cur.execute(sql, params)
                description = cur.description
                fast = None
                if description and attempt.decimal_text:
                    fast = self.engine.fetch_decimal_text(raw, cur, self.max_result_rows + 1)
                if not description:
                    rows = []
                elif fast is not None:
                    rows, text_columns = fast
                elif self.engine.streams_rows:
                    rows = cur.fetchmany(self.max_result_rows + 1)
                else:
                    rows = cur.fetchall()
            finally:
                _close_quietly(self.engine, cur)
            if len(rows) > self.max_result_rows:
                error = SqlError(
                    SQL_RESULT_TOO_LARGE,
                    f"the result has more than {self.max_result_rows:,} rows",
                    "Aggregate in SQL or add a LIMIT; the full result is kept as evidence only up to that size.",
                )
            else:
                columns = [str(d[0]) for d in description or ()]
                result = QueryResult(
                    columns=columns,
                    column_types=self.engine.column_types(raw, description, rows),
                    rows=rows if isinstance(rows, list) else list(rows),
                    elapsed_ms=(time.monotonic() - attempt.started) * 1000,
                    decimal_text=tuple(text_columns) if fast is not None else (),
                )
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            error = exc
        finally:
            # Under the lock: a cancel being sent right now finishes before this
            # connection can be reset and reused, so it never hits another statement.
            with attempt._cond:
                attempt.statement_done = True
            try:
                self.engine.end(raw)
            except Exception:  # noqa: BLE001 - a connection we cannot reset is not reused
                healthy = False
            if healthy:
                fairy.close()
            else:
                fairy.invalidate()
        attempt._finish(result, error)

    # --- the waiter -------------------------------------------------------

    def _wait(self, attempt: Attempt) -> str | None:
        """Block until the worker is done (None) or the deadline/caller asks to stop ("timeout"/"cancelled")."""
        with attempt._cond:
            while True:
                if attempt.done:
                    return None
                if attempt._external_cancel:
                    return "cancelled"
                now = time.monotonic()
                if attempt.deadline is not None and now >= attempt.deadline:
                    return "timeout"
                wait = attempt.deadline - now if attempt.deadline is not None else 0.05
                attempt._cond.wait(max(wait, 0.0005))

    def _stop(self, attempt: Attempt, reason: str) -> QueryResult:
        cancel_error = None
        with attempt._cond:
            attempt.stop_reason = reason
            attempt.cancel_sent_at = time.monotonic()
            if attempt.raw is not None and not attempt.statement_done:
                try:
                    self.engine.cancel(attempt.raw, attempt.session_id, self.pool)
                except Exception as exc:  # noqa: BLE001 - reported below, never hidden
                    cancel_error = f"{type(exc).__name__}: {mask_url(str(exc))}"
        with attempt._cond:
            attempt._cond.wait_for(lambda: attempt.done, timeout=self.cancel_grace_s)
            confirmed = attempt.done
        what = (
            f"the query hit the {attempt.timeout_s:g} s time limit"
            if reason == "timeout"
            else "the calling task was cancelled"
        )
        if confirmed:
            after_ms = (attempt.finished_at - attempt.cancel_sent_at) * 1000 if attempt.finished_at else 0.0
            message = (
                f"{what}; the wait timed out and cancellation was requested; the query was confirmed stopped "
                f"{max(after_ms, 0):.0f} ms later"
            ) if reason == "timeout" else f"{what}; cancellation was requested and the query was confirmed stopped"
        else:
            message = (
                f"{what}; the wait timed out and cancellation was requested, but the query was not confirmed "
                f"stopped within {self.cancel_grace_s:g} s (it may still be running on the server)"
            ) if reason == "timeout" else (
                f"{what}; cancellation was requested, but the query was not confirmed stopped "
                f"within {self.cancel_grace_s:g} s (it may still be running on the server)"
            )
        if cancel_error:
            message += f"; the cancel request itself failed ({cancel_error})"
        elapsed = (time.monotonic() - attempt.started) * 1000 if attempt.started else 0.0
        log.info("sql_query_stopped", datasource=self.name, reason=reason, confirmed=confirmed)
        raise SqlError(
            SQL_QUERY_TIMEOUT if reason == "timeout" else SQL_QUERY_CANCELLED,
            message,
            TIMEOUT_HINT if reason == "timeout" else "The caller stopped this query; run it again only if it is still needed.",
            details={"stopped": confirmed, "elapsed_ms": round(elapsed, 3), "timeout_s": attempt.timeout_s},
        )

    def _failure(self, attempt: Attempt, exc: BaseException) -> SqlError:
        if isinstance(exc, SqlError):
            return exc
        elapsed = round(((attempt.finished_at or time.monotonic()) - (attempt.started or time.monotonic())) * 1000, 3)
        if self.engine.is_timeout_error(exc) and attempt.deadline and attempt.finished_at and attempt.finished_at >= attempt.deadline:
            # The engine's own deadline (SQLite's progress handler) stopped it: it came back, so it stopped.
            late = (attempt.finished_at - attempt.deadline) * 1000
            return SqlError(
                SQL_QUERY_TIMEOUT,
                f"the query hit the {attempt.timeout_s:g} s time limit; it was cancelled at the deadline and "
                f"confirmed stopped {max(late, 0):.0f} ms after it",
                TIMEOUT_HINT,
                details={"stopped": True, "elapsed_ms": elapsed, "timeout_s": attempt.timeout_s},
            )
        if self.engine.is_timeout_error(exc):
            # The server-side backstop fired before our deadline: the server stopped it itself.
            return SqlError(
                SQL_QUERY_TIMEOUT,
                f"the query hit the server-side time limit and the server stopped it ({_engine_message(exc)})",
                TIMEOUT_HINT,
                details={"stopped": True, "elapsed_ms": elapsed, "timeout_s": attempt.timeout_s},
            )
        return SqlError(
            SQL_QUERY_FAILED,
            f"the database reported an error: {_engine_message(exc)}",
            "Fix the SQL (check table and column names with list_tables / describe_table) and try again.",
            details={"elapsed_ms": elapsed, "engine_error": type(exc).__name__},
        )

    def close(self) -> None:
        try:
            self.pool.dispose()
        except Exception:  # noqa: BLE001
            pass
        database = getattr(self.pool, "_assay_database", None)
        if database is not None:
            database.close()
        control = getattr(self.pool, "_assay_control", None)
        if control is not None:
            control.close_unlocked()
        engine = getattr(self.pool, "_assay_engine", None)
        if engine is not None:
            engine.dispose()


def _engine_message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if getattr(exc, "args", None) and len(exc.args) == 2 and isinstance(exc.args[0], int):
        text = f"({exc.args[0]}) {exc.args[1]}"  # pymysql: (errno, message)
    return mask_url(text)[:2000]


def _connect_error(name: str, exc: BaseException) -> SqlError:
    if type(exc).__name__ == "TimeoutError" and "QueuePool" in str(exc):
        return SqlError(
            SQL_DATASOURCE_BUSY,
            f"every connection of datasource {name!r} is busy",
            "Wait for running queries to finish, or raise pool_size for this datasource.",
        )
    return SqlError(
        SQL_DATASOURCE_UNAVAILABLE,
        f"cannot connect to datasource {name!r}: {_engine_message(exc)}",
        "Check that the database is running and the URL is right (assay config shows it, password masked).",
    )


def _close_quietly(engine: SqlEngine, cur: Any) -> None:
    try:
        engine.close_cursor(cur)
    except Exception:  # noqa: BLE001
        pass
