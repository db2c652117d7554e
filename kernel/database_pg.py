"""The catalog database on PostgreSQL (``ASSAY_CATALOG_URL=postgresql://...``), through psycopg 3.

Imported only when that URL is set (:func:`assay.kernel.database.open_database`).
psycopg is the driver the SQL plugin already uses (``assay[postgres]``).

One connection per thread and per process, in autocommit mode: a statement
on its own commits when it returns; :meth:`PostgresDatabase.transaction`
groups several. A connection found broken is replaced once before the
statement fails with ``CATALOG_UNAVAILABLE``. Schema creation runs under a
transaction-scoped advisory lock, so processes starting together never race
on ``CREATE TABLE``; each component's version is a row of ``assay_schema``.
The tables live in the first schema of the connection's ``search_path`` (by
default ``public``; ``?options=-csearch_path%3Dmy_schema`` in the URL picks
another).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, TypeVar

from .database import CATALOG_SCHEMA_NEWER, CATALOG_UNAVAILABLE, POSTGRESQL, CatalogError, Database
from .settings import mask_url

try:
    import psycopg
    from psycopg import errors as pg_errors
except ImportError:  # pragma: no cover - assay[postgres] not installed
    psycopg = None  # type: ignore[assignment]

T = TypeVar("T")
_SCHEMA_LOCK = 0x61737361  # pg_advisory_xact_lock key while creating tables ("assa")
_CONNECT_TIMEOUT_S = 10


@lru_cache(maxsize=512)
def _pg_sql(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class _Tx:
    """What :meth:`PostgresDatabase.transaction` yields: statements with ``?`` placeholders."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(_pg_sql(sql), params) if params else self.conn.execute(sql)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(_pg_sql(sql), rows)


class PostgresDatabase(Database):
    dialect = POSTGRESQL
    for_update = " FOR UPDATE"

    def __init__(self, url: str) -> None:
        if psycopg is None:
            raise CatalogError(
                CATALOG_UNAVAILABLE,
                "ASSAY_CATALOG_URL names PostgreSQL but psycopg is not installed",
                "pip install 'assay[postgres]' (psycopg 3), or unset ASSAY_CATALOG_URL.",
            )
        self.url = url
        self._local = threading.local()
        # every open connection, with its process and thread (close_all; a dead thread's is closed)
        self._all: list[tuple[int, threading.Thread, Any]] = []
        self._all_lock = threading.Lock()

    # --- connections ------------------------------------------------------------
    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if (
            conn is not None
            and self._local.pid == os.getpid()
            and not conn.closed
            and not conn.broken
        ):
            return conn
        if self._in_transaction():  # a fresh connection would run the rest outside the transaction
            raise self._unavailable(ConnectionError("the connection was lost inside a transaction"))
        kwargs: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in self.url:
            kwargs["connect_timeout"] = _CONNECT_TIMEOUT_S
        try:
            conn = psycopg.connect(self.url, **kwargs)
        except psycopg.Error as exc:
            raise self._unavailable(exc) from None
        self._local.conn, self._local.pid = conn, os.getpid()
        with self._all_lock:
            kept: list[tuple[int, threading.Thread, Any]] = []
            ended: list[tuple[int, threading.Thread, Any]] = []
            for entry in self._all:
                pid, thread, c = entry
                if c.closed:
                    continue
                (ended if pid == os.getpid() and not thread.is_alive() else kept).append(entry)
            kept.append((os.getpid(), threading.current_thread(), conn))
            self._all = kept
        for (
            _,
            _,
            c,
        ) in ended:  # a thread that has ended (a statement's, a run's) leaves no connection open
            try:
                c.close()
            except Exception:  # noqa: BLE001 - closing anyway
                pass
        return conn

    def _unavailable(self, exc: BaseException) -> CatalogError:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return CatalogError(
            CATALOG_UNAVAILABLE,
            f"the catalog database {self.describe()} cannot be used: {mask_url(first)}",
            "Check that PostgreSQL runs and that ASSAY_CATALOG_URL (host, port, database, user, "
            "password) is right; `assay config` shows the URL with its password masked.",
        )

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - it is being replaced
                pass

    def _once_more(self, fn: Callable[[Any], T]) -> T:
        """``fn(connection)``; once again on a fresh connection when that one turns out broken."""
        for attempt in (1, 2):
            conn = self._conn()
            try:
                return fn(conn)
            except psycopg.OperationalError as exc:
                if not conn.broken and not conn.closed:
                    raise
                self._drop()
                if (
                    attempt == 2 or self._in_transaction()
                ):  # never half a transaction on a new connection
                    raise self._unavailable(exc) from None
        raise AssertionError("unreachable")

    # --- statements ---------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._once_more(lambda c: _Tx(c).execute(sql, params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.transaction() as tx:
            tx.executemany(sql, rows)

    def _in_transaction(self) -> bool:
        return getattr(self._local, "depth", 0) > 0

    @contextmanager
    def transaction(self) -> Iterator[_Tx]:
        """Statements through what it yields, or through :meth:`execute` on this thread meanwhile, commit
        together (a nested call is a savepoint). A connection lost inside it fails it: nothing is retried
        on a new connection, where it would run outside the transaction; wrap the whole transaction in
        :meth:`retry` to run it again."""
        conn = self._conn()
        if conn.broken:
            self._drop()
            conn = self._conn()
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:  # a broken connection stays until the next use replaces it (:meth:`retry` looks at it)
            with conn.transaction():
                yield _Tx(conn)
        finally:
            self._local.depth -= 1

    def ensure_schema(self, component: str, version: int | None, ddl: dict[str, str]) -> None:
        def create() -> None:
            with self.transaction() as tx:
                tx.execute("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
                tx.execute(
                    "CREATE TABLE IF NOT EXISTS assay_schema ("
                    "component TEXT PRIMARY KEY, version INTEGER NOT NULL, updated_at DOUBLE PRECISION)"
                )
                row = tx.execute(
                    "SELECT version FROM assay_schema WHERE component = ?", (component,)
                ).fetchone()
                if row is not None and version is not None and row[0] > version:
                    raise CatalogError(
                        CATALOG_SCHEMA_NEWER,
                        f"the {component} in {self.describe()} was written by a newer assay "
                        f"(schema {row[0]}, this one knows {version})",
                        "Upgrade assay on this host.",
                    )
                tx.execute(ddl[POSTGRESQL])
                if version is not None and (row is None or row[0] < version):
                    tx.execute(
                        "INSERT INTO assay_schema (component, version, updated_at) VALUES (?, ?, ?) "
                        "ON CONFLICT (component) DO UPDATE SET version = excluded.version, "
                        "updated_at = excluded.updated_at",
                        (component, version, time.time()),
                    )

        self.retry(create)

    def is_conflict(self, exc: BaseException) -> bool:
        return isinstance(exc, pg_errors.UniqueViolation)

    def retry(self, fn: Callable[[], T], attempts: int = 20) -> T:
        for i in range(attempts):
            try:
                return fn()
            except (pg_errors.SerializationFailure, pg_errors.DeadlockDetected):
                if (
                    i == attempts - 1 or self._in_transaction()
                ):  # the whole transaction must go again
                    raise
                time.sleep(min(0.01 * (i + 1), 0.2))
            except psycopg.OperationalError as exc:
                conn = getattr(self._local, "conn", None)
                if conn is None or not (conn.broken or conn.closed):
                    raise
                if self._in_transaction():
                    raise
                self._drop()
                if i >= 1:
                    raise self._unavailable(exc) from None
        raise AssertionError("unreachable")

    def describe(self) -> str:
        return mask_url(self.url)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
        self._local.conn = None

    def close_all(self) -> None:
        """Close the connections of every thread of this process."""
        with self._all_lock:
            conns, self._all = self._all, []
        for pid, _, conn in conns:
            if pid == os.getpid() and not conn.closed:  # never one a forked child inherited
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - closing anyway
                    pass
        self._local = threading.local()
