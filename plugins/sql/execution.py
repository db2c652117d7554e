"""Running one statement with a time limit that really stops it.

The path of every statement, top to bottom:

1. :meth:`Executor.run` checks the text (:func:`.guard.check_read_only`: one
   read-only statement; no flag skips it) inside the time limit (:mod:`.bounded`)
   and runs the SQL written from the checked tree (:mod:`.regenerate`): it starts
   a worker thread and waits for it.
2. The worker (:meth:`Executor._work`) takes a pooled connection whose
   session passes the engine's check (``verify``: still read-only, nothing
   changed; a connection that fails is discarded), lets the engine set the
   statement up (``begin``: read-only transaction, server-side backstop),
   runs it and fetches the rows, then always lets it ``end`` (roll back) and
   ``reset`` the session (a connection that cannot be reset is discarded)
   before returning it.
3. When the deadline passes (or the caller is cancelled) the waiter asks the
   engine to cancel the statement, then waits a short grace period for the
   worker to come back. Only a worker that came back counts as "confirmed
   stopped"; otherwise the message says cancellation was requested and
   nothing more.

A caller that only stores the rows (``sql_query``) gives the attempt a
consumer: the worker then hands it the rows while the engine streams them
(``SqlEngine.stream``), so the capture overlaps the server's work; the time
limit covers the statement until its last row arrived.

The engine's own catalog queries (``introspect``) take a separate path,
:meth:`Executor.introspect`, that never takes a caller's text.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assay.kernel.database_engine import DatabaseEngine, DatabasePool
from assay.kernel.log import get_logger
from assay.kernel.settings import mask_url

from .bounded import guard_within
from .engines.base import Streamed
from .engines.file_pool import PoolBusy
from .errors import (
    SQL_DATASOURCE_BUSY,
    SQL_DATASOURCE_UNAVAILABLE,
    SQL_QUERY_CANCELLED,
    SQL_QUERY_FAILED,
    SQL_QUERY_TIMEOUT,
    SQL_READ_ONLY_REQUIRED,
    TIMEOUT_HINT,
    SqlError,
    refused_by_database,
)
from .results import QueryResult, RowStream, too_large
from .schema import TableInfo

log = get_logger("assay.sql")

STREAM_CHUNK_ROWS = 4096  # rows per batch a streaming engine hands over
CATALOG_TIMEOUT_S = 15.0  # for the engine's own catalog queries (introspect)


@dataclass
class Attempt:
    """One statement's shared state between the waiting caller and the worker."""

    timeout_s: float
    # The caller takes numeric columns as decimal text (QueryResult.decimal_text): sql_query
    # stores them canonically and previews them as Decimal; other callers get Decimal.
    decimal_text: bool = False
    # Called on the worker thread with a RowStream while the statement runs (sql_query captures the
    # rows there, as they arrive); its return value becomes QueryResult.consumed.
    consume: Callable[[RowStream], Any] | None = None
    keep_rows: int = 50  # rows kept for the preview when the rows are consumed as they stream
    # The consumer keeps at most this many bytes (the artifact cap): a single text/binary value longer
    # than it is refused (SQL_VALUE_TOO_LARGE) as it arrives, before the capture copies it again.
    max_value_bytes: int | None = None
    # The SQL as submitted, and as run (written from the checked tree); the evidence keeps both.
    submitted_sql: str | None = None
    sql: str | None = None
    guard_s: float = 0.0  # the time limit the guard's check already used
    rows_done: bool = False  # every row was fetched: the deadline no longer applies
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

    def _rows_done(self) -> None:
        with self._cond:
            self.rows_done = True
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
    """Runs statements of one datasource: the read-only check, the pool, worker threads and the cancel path."""

    def __init__(
        self,
        name: str,
        engine: DatabaseEngine,
        open_pool: Callable[[], DatabasePool],
        *,
        dialect: str,
        cancel_grace_s: float,
        backstop_margin_s: float,
        max_result_rows: int,
        allow_functions: tuple[str, ...] = (),
        max_sql_bytes: int = 1 << 20,
    ) -> None:
        self.name = name
        self.engine = engine
        self.dialect = dialect
        self.cancel_grace_s = cancel_grace_s
        self.backstop_margin_s = backstop_margin_s
        self.max_result_rows = max_result_rows
        self.allow_functions = allow_functions
        self.max_sql_bytes = max_sql_bytes
        self._open_pool = open_pool
        self._pool: DatabasePool | None = None
        self._pool_lock = threading.Lock()
        self._seq = 0

    @property
    def pool(self) -> DatabasePool:
        """The engine's read-only pool, opened on first use (raises SQL_DATASOURCE_UNAVAILABLE)."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = self._open_pool()
            return self._pool

    def run(self, sql: str, attempt: Attempt) -> QueryResult:
        """Check ``sql`` and run the SQL written from the checked statement within ``attempt.timeout_s``; raise
        :class:`SqlError` on refusal, timeout, cancel or failure."""
        # The guard's codes (SQL_QUERY_TIMEOUT if the check runs out of time): nothing reaches the database
        verdict, attempt.guard_s = guard_within(
            lambda: check_read_only(
                sql,
                self.dialect,
                allow_functions=self.allow_functions,
                max_bytes=self.max_sql_bytes,
            ),
            attempt.timeout_s,
        )
        attempt.submitted_sql = sql
        attempt.sql = (
            verdict.sql if verdict is not None else sql
        )  # None: the guard was taken out (tests only)
        return self._run(attempt.sql, attempt, None)

    def introspect(self, schemas: list[str] | None) -> list[TableInfo]:
        """The engine reads the catalog with its own queries (never a caller's text), on the same path."""

        def catalog_rows(sql: str, params: Any) -> list[tuple]:
            return self._run(sql, Attempt(timeout_s=CATALOG_TIMEOUT_S), params).rows

        return self.engine.introspect(catalog_rows, schemas)

    def fingerprint(self, schemas: list[str] | None) -> str | None:
        """The engine's schema fingerprint, read with its own catalog queries on the same path."""
        read = getattr(self.engine, "schema_fingerprint", None)
        if read is None:
            return None

        def catalog_rows(sql: str, params: Any) -> list[tuple]:
            return self._run(sql, Attempt(timeout_s=CATALOG_TIMEOUT_S), params).rows

        return read(catalog_rows, schemas)

    def _run(self, sql: str, attempt: Attempt, params: Any) -> QueryResult:
        pool = (
            self.pool
        )  # opened here, on the caller's thread: an unreachable datasource fails before a worker
        # A daemon thread per statement: a statement that never stops must not keep the process alive.
        self._seq += 1
        threading.Thread(
            target=self._work,
            args=(pool, sql, params, attempt),
            daemon=True,
            name=f"assay-sql-{self.name}-{self._seq}",
        ).start()
        reason = self._wait(attempt)
        if reason is None:
            if attempt.error is not None:
                if (
                    attempt._external_cancel
                ):  # SQLite's handler saw the cancel before the waiter did
                    return self._stop(attempt, "cancelled", pool)
                raise self._failure(attempt, attempt.error)
            assert attempt.result is not None
            return attempt.result
        return self._stop(attempt, reason, pool)

    # --- the worker -------------------------------------------------------

    def _checkout(self, pool: DatabasePool) -> Any:
        """A pooled connection whose session passed the engine's check; one that fails it is discarded.

        Raises the pool's own error (busy, cannot connect), or SQL_DATASOURCE_UNAVAILABLE when
        even new connections fail the check.
        """
        verify = getattr(self.engine, "verify", None)
        tries = _pool_size(pool) + 1  # every pooled connection may be spoiled; then a new one
        problems: list[str] = []
        for _ in range(tries):
            fairy = pool.connect()
            if verify is None:
                return fairy
            try:
                problems = list(verify(fairy.dbapi_connection))
            except Exception as exc:  # noqa: BLE001 - a session we cannot check is not used
                problems = [f"the check failed: {type(exc).__name__}: {mask_url(str(exc))[:300]}"]
            if not problems:
                return fairy
            log.warning("sql_connection_discarded", datasource=self.name, problems=problems)
            fairy.invalidate()  # closed, never handed out again
        raise SqlError(
            SQL_DATASOURCE_UNAVAILABLE,
            f"datasource {self.name!r}: no connection passed the read-only session check ({'; '.join(problems)})",
            "Check the login's and the server's settings (assay db doctor URL); each failing connection was discarded.",
        )

    def _work(self, pool: DatabasePool, sql: str, params: Any, attempt: Attempt) -> None:
        """On the worker thread: a pooled connection, the statement on it, the connection reset and handed back."""
        try:
            fairy = self._checkout(pool)
        except SqlError as exc:
            attempt._finish(None, exc)
            return
        except Exception as exc:  # noqa: BLE001
            attempt._finish(None, _connect_error(self.name, exc))
            return
        raw = fairy.dbapi_connection
        result: QueryResult | None = None
        error: BaseException | None = None
        healthy = True
        try:
            result = self._statement(raw, sql, params, attempt)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            error = exc
        finally:
            # Under the lock: a cancel being sent right now finishes before this
            # connection can be reset and reused, so it never hits another statement.
            with attempt._cond:
                attempt.statement_done = True
            try:
                self.engine.end(raw)
                reset = getattr(self.engine, "reset", None)
                # Nothing the statement left in the session reaches the next one; False: the engine
                # cannot reset a session, so this one is closed and the next statement gets a new one.
                if reset is not None and reset(raw) is False:
                    healthy = False
            except Exception as exc:  # noqa: BLE001 - a connection we cannot reset is not reused
                log.warning(
                    "sql_connection_not_reset", datasource=self.name, error=type(exc).__name__
                )
                healthy = False
            if healthy:
                fairy.close()
            else:
                fairy.invalidate()
        attempt._finish(result, error)

    def _statement(self, raw: Any, sql: str, params: Any, attempt: Attempt) -> QueryResult:
        """Start the clock, let the engine set the statement up, run it and take its rows."""
        if attempt.cancel_requested():  # cancelled while waiting for a connection: never start
            raise SqlError(SQL_QUERY_CANCELLED, "cancelled before the statement was sent")
        attempt.started = time.monotonic()
        left = max(attempt.timeout_s - attempt.guard_s, 0.0)  # the guard's check used the rest
        attempt.deadline = attempt.started + left
        attempt._mark_started(raw, self.engine.session_id(raw))
        self.engine.begin(raw, attempt, left + self.backstop_margin_s)
        cur = self.engine.cursor(raw)
        try:
            if attempt.consume is not None and params is None:
                return self._consume(raw, cur, sql, attempt)
            description, rows, text_columns = self._fetch_all(raw, cur, sql, params, attempt)
            return QueryResult(
                columns=[str(d[0]) for d in description or ()],
                column_types=self.engine.column_types(raw, description, rows),
                rows=rows,
                elapsed_ms=(time.monotonic() - attempt.started) * 1000,
                decimal_text=text_columns,
            )
        finally:
            _close_quietly(self.engine, cur)

    def _fetch_all(
        self, raw: Any, cur: Any, sql: str, params: Any, attempt: Attempt
    ) -> tuple[Any, list[tuple], tuple[int, ...]]:
        """Execute and fetch every row: (description, rows, decimal-text columns)."""
        if params is None:
            cur.execute(sql)
        else:
            cur.execute(sql, params)
        description = cur.description
        fast = None
        if description and attempt.decimal_text:
            fast = self.engine.fetch_decimal_text(raw, cur, self.max_result_rows + 1)
        text_columns: tuple[int, ...] = ()
        if not description:
            rows = []
        elif fast is not None:
            rows, text_columns = fast[0], tuple(fast[1])
        elif self.engine.streams_rows:
            rows = cur.fetchmany(self.max_result_rows + 1)
        else:
            rows = cur.fetchall()
        if len(rows) > self.max_result_rows:
            raise too_large(self.max_result_rows)
        return description, rows if isinstance(rows, list) else list(rows), text_columns

    def _consume(self, raw: Any, cur: Any, sql: str, attempt: Attempt) -> QueryResult:
        """Run ``sql`` and hand its rows to ``attempt.consume`` as they arrive."""
        assert attempt.consume is not None  # only an attempt with a consumer comes here
        streamed = self.engine.stream(
            raw, cur, sql, chunk_rows=STREAM_CHUNK_ROWS, decimal_text=attempt.decimal_text
        )
        if streamed is None:  # this engine does not stream: fetch, then hand the rows over at once
            description, rows, text_columns = self._fetch_all(raw, cur, sql, None, attempt)
            streamed = Streamed(description, iter([rows] if rows else []), text_columns)
        try:
            first: list[tuple] = next(streamed.batches, [])
            columns = [str(d[0]) for d in streamed.description or ()]
            limits = getattr(self.pool, "limits", None)
            caps = [
                c
                for c in (attempt.max_value_bytes, getattr(limits, "max_value_bytes", None))
                if c is not None
            ]
            cap, bound_of = (
                (min(caps) if caps else None),
                getattr(self.engine, "value_length_bound", None),
            )
            bound = bound_of(raw) if bound_of is not None else None
            value_cap = None if cap is None or (bound is not None and bound <= cap) else cap
            row_cap = (
                getattr(limits, "max_row_bytes", None)
                if attempt.max_value_bytes is not None
                else None
            )
            longest = min(c for c in (cap, bound, 2**62) if c is not None)
            if row_cap is not None and len(columns) * longest <= row_cap:
                row_cap = None  # no row can be longer than its columns' longest values together
            stream = RowStream(
                streamed,
                columns,
                self.engine.column_types(raw, streamed.description, first),
                first,
                attempt,
                self.max_result_rows,
                typed_columns=getattr(self.engine, "typed_columns", True),
                value_cap=value_cap,
                row_cap=row_cap,
                longest=longest,
            )
            try:
                consumed = attempt.consume(stream)
                stream.drain()
            except BaseException:
                if stream.error is not None:
                    raise stream.error from None  # the statement's own failure, not the consumer's
                raise
        finally:
            streamed.close()  # stops and drains a statement the consumer left early
        return QueryResult(
            columns=columns,
            column_types=stream.column_types,
            rows=stream.head,
            elapsed_ms=stream.elapsed_ms(),
            decimal_text=streamed.decimal_text,
            total_rows=stream.count,
            consumed=consumed,
        )

    # --- the waiter -------------------------------------------------------

    def _wait(self, attempt: Attempt) -> str | None:
        """Block until the worker is done (None) or the deadline/caller asks to stop ("timeout"/"cancelled")."""
        with attempt._cond:
            while True:
                if attempt.done:
                    return None
                if (
                    attempt.rows_done
                ):  # the statement is over: a cancel has nothing left to stop, and
                    attempt._cond.wait(
                        0.05
                    )  # the consumer (the capture) finishes and records the result
                    continue
                if attempt._external_cancel:
                    return "cancelled"
                now = time.monotonic()
                if attempt.deadline is not None and now >= attempt.deadline:
                    return "timeout"
                wait = attempt.deadline - now if attempt.deadline is not None else 0.05
                attempt._cond.wait(max(wait, 0.0005))

    def _stop(self, attempt: Attempt, reason: str, pool: DatabasePool) -> QueryResult:
        cancel_error = None
        with attempt._cond:
            attempt.stop_reason = reason
            attempt.cancel_sent_at = time.monotonic()
            if attempt.raw is not None and not attempt.statement_done:
                try:
                    self.engine.cancel(attempt.raw, attempt.session_id, pool)
                except Exception as exc:  # noqa: BLE001 - reported below, never hidden
                    cancel_error = f"{type(exc).__name__}: {mask_url(str(exc))}"
        # An in-process engine (DuckDB, SQLite) only stops when its own statement sees the interrupt; one sent
        # between two steps of the worker (binding, then executing) is lost, so it is sent again until the
        # worker is back or the grace period ends.
        repeat_s = getattr(self.engine, "cancel_repeat_s", None)
        grace_end = time.monotonic() + self.cancel_grace_s
        with attempt._cond:
            while not attempt.done and (left := grace_end - time.monotonic()) > 0:
                attempt._cond.wait(min(left, repeat_s or left))
                if (
                    repeat_s
                    and not attempt.done
                    and attempt.raw is not None
                    and not attempt.statement_done
                ):
                    try:
                        self.engine.cancel(attempt.raw, attempt.session_id, pool)
                    except Exception:  # noqa: BLE001 - the first cancel's error is reported
                        pass
            confirmed = attempt.done
        what = (
            f"the query hit the {attempt.timeout_s:g} s time limit"
            if reason == "timeout"
            else "the calling task was cancelled"
        )
        if confirmed:
            after_ms = (
                (attempt.finished_at - attempt.cancel_sent_at) * 1000
                if attempt.finished_at
                else 0.0
            )
            message = (
                (
                    f"{what}; the wait timed out and cancellation was requested; the query was confirmed stopped "
                    f"{max(after_ms, 0):.0f} ms later"
                )
                if reason == "timeout"
                else f"{what}; cancellation was requested and the query was confirmed stopped"
            )
        else:
            message = (
                (
                    f"{what}; the wait timed out and cancellation was requested, but the query was not confirmed "
                    f"stopped within {self.cancel_grace_s:g} s (it may still be running on the server)"
                )
                if reason == "timeout"
                else (
                    f"{what}; cancellation was requested, but the query was not confirmed stopped "
                    f"within {self.cancel_grace_s:g} s (it may still be running on the server)"
                )
            )
        if cancel_error:
            message += f"; the cancel request itself failed ({cancel_error})"
        elapsed = (time.monotonic() - attempt.started) * 1000 if attempt.started else 0.0
        log.info("sql_query_stopped", datasource=self.name, reason=reason, confirmed=confirmed)
        raise SqlError(
            SQL_QUERY_TIMEOUT if reason == "timeout" else SQL_QUERY_CANCELLED,
            message,
            TIMEOUT_HINT
            if reason == "timeout"
            else "The caller stopped this query; run it again only if it is still needed.",
            details={
                "stopped": confirmed,
                "elapsed_ms": round(elapsed, 3),
                "timeout_s": attempt.timeout_s,
            },
        )

    def _failure(self, attempt: Attempt, exc: BaseException) -> SqlError:
        if isinstance(exc, SqlError):
            return exc
        elapsed = round(
            ((attempt.finished_at or time.monotonic()) - (attempt.started or time.monotonic()))
            * 1000,
            3,
        )
        if (
            self.engine.is_timeout_error(exc)
            and attempt.deadline
            and attempt.finished_at
            and attempt.finished_at >= attempt.deadline
        ):
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
        if refused_by_database(
            exc
        ):  # the server itself refused it as a write or for lack of privilege
            return SqlError(
                SQL_READ_ONLY_REQUIRED,
                f"the database refused the statement as a write or for lack of privilege: {_engine_message(exc)}",
                "Send exactly one read-only SELECT; this datasource is read only.",
                details={
                    "elapsed_ms": elapsed,
                    "engine_error": type(exc).__name__,
                    "reason": "database",
                },
            )
        return SqlError(
            SQL_QUERY_FAILED,
            f"the database reported an error: {_engine_message(exc)}",
            "Fix the SQL (check table and column names with list_tables / describe_table) and try again.",
            details={"elapsed_ms": elapsed, "engine_error": type(exc).__name__},
        )

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()


def check_read_only(sql: str, dialect: str, **options: Any) -> Any:
    """:func:`.guard.check_read_only` (its verdict holds the SQL to run), imported with the first statement: the
    guard's lexer and allow-lists are not needed to open a datasource and describe it (`assay ask`'s start-up)."""
    from .guard import check_read_only as check

    return check(sql, dialect, **options)


def _engine_message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if getattr(exc, "args", None) and len(exc.args) == 2 and isinstance(exc.args[0], int):
        text = f"({exc.args[0]}) {exc.args[1]}"  # pymysql: (errno, message)
    return mask_url(text)[:2000]


def _connect_error(name: str, exc: BaseException) -> SqlError:
    if isinstance(exc, PoolBusy) or (
        type(exc).__name__ == "TimeoutError" and "QueuePool" in str(exc)
    ):
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


def _pool_size(pool: DatabasePool) -> int:
    size = getattr(getattr(pool, "connections", None), "size", None)
    try:
        return int(size()) if callable(size) else 4
    except Exception:  # noqa: BLE001
        return 4


def _close_quietly(engine: DatabaseEngine, cur: Any) -> None:
    try:
        engine.close_cursor(cur)
    except Exception:  # noqa: BLE001
        pass


async def run_cancellable(call: Callable[[], Any], attempt: Attempt, *, grace_s: float) -> Any:
    """Run blocking ``call`` (which runs ``attempt``) in a thread; if the awaiting task is cancelled, cancel the
    statement too.

    The cancellation waits (bounded) for the statement's fate to be known, then
    re-raises :class:`asyncio.CancelledError`; ``call`` itself decides what the
    outcome leaves behind (``sql_query`` records the cancelled attempt).
    """
    task = asyncio.ensure_future(asyncio.to_thread(call))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        attempt.request_cancel()
        done, _ = await asyncio.wait({task}, timeout=grace_s + 6.0)
        if task in done and not task.cancelled():
            task.exception()  # retrieved: the SQL_QUERY_CANCELLED error is on the attempt's path
        raise
