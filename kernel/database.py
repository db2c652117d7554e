"""The catalog database: the one seam between assay's stores and SQLite or PostgreSQL.

The artifact catalog (:mod:`assay.kernel.evidence.catalog`), the runs store
(:mod:`assay.plugins.runs.store`) and report checkpoints
(:mod:`assay.plugins.report_agent.state`) write their rows through a
:class:`Database`. By default each is an embedded SQLite file under
``ASSAY_HOME`` (WAL, one connection per thread and process, exactly as
before); ``ASSAY_CATALOG_URL=postgresql://...`` puts all of them in one
PostgreSQL database that several processes and hosts share
(:mod:`assay.kernel.database_pg`, imported only then: kernel start-up and the
SQLite path never import a PostgreSQL driver).

What differs between the two is kept here, small:

* statements are written with ``?`` placeholders (the PostgreSQL backend turns
  them into ``%s``);
* :meth:`Database.transaction` is ``BEGIN IMMEDIATE`` on SQLite (the whole file
  is locked) and an ordinary transaction on PostgreSQL, where
  :attr:`Database.for_update` adds ``FOR UPDATE`` to lock the rows read;
* :meth:`Database.ensure_schema` runs each store's own DDL (one text per
  dialect) idempotently and checks its schema version (``PRAGMA user_version``
  of the store's SQLite file; a row of ``assay_schema`` on PostgreSQL);
* :meth:`Database.is_conflict` tells a unique-key violation from other errors,
  so a store that computes a key (the next event number of a run) can retry.

``INSERT ... ON CONFLICT`` is spelt the same in both and is used as is.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import AssayError
from .settings import mask_url

if TYPE_CHECKING:
    from .database_pg import PostgresDatabase

SQLITE = "sqlite"
POSTGRESQL = "postgresql"

CATALOG_UNAVAILABLE = "CATALOG_UNAVAILABLE"
CATALOG_URL_INVALID = "CATALOG_URL_INVALID"
CATALOG_SCHEMA_NEWER = "CATALOG_SCHEMA_NEWER"

T = TypeVar("T")


class CatalogError(AssayError):
    """The catalog database cannot be used (not reachable, a URL it cannot take, a newer schema)."""

    code = CATALOG_UNAVAILABLE


class Database(ABC):
    """Where one or more stores keep their tables; see the module docstring."""

    dialect: str = ""
    for_update: str = ""  # appended to a SELECT inside a transaction to lock the rows it reads

    def ensure(self, component: str, version: int | None, ddl: dict[str, str]) -> None:
        """:meth:`ensure_schema` once per database object and component."""
        done = self.__dict__.setdefault("_ensured", set())
        if component not in done:
            self.ensure_schema(component, version, ddl)
            done.add(component)

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement on its own (committed when it returns); a cursor to fetch from."""

    @abstractmethod
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement once per row, all in one transaction."""

    @abstractmethod
    def transaction(self) -> Any:
        """A context manager: statements run through what it yields (``.execute``) commit together."""

    @abstractmethod
    def ensure_schema(self, component: str, version: int | None, ddl: dict[str, str]) -> None:
        """Create ``component``'s tables if missing (``ddl[dialect]``) and check its schema version."""

    @abstractmethod
    def is_conflict(self, exc: BaseException) -> bool:
        """Whether ``exc`` is a unique-key (primary key) violation."""

    def retry(self, fn: Callable[[], T]) -> T:
        """Run ``fn``, again after a transient lock error (SQLite) or serialization failure (PostgreSQL)."""
        return fn()

    @abstractmethod
    def describe(self) -> str:
        """Where the data is, for messages (a password is masked)."""

    @abstractmethod
    def close(self) -> None:
        """Release this thread's connection; the next use opens another."""


class SQLiteDatabase(Database):
    """One SQLite file: WAL, one connection per thread and per process (never used after ``fork``)."""

    dialect = SQLITE

    def __init__(self, path: Path | str, *, busy_ms: int = 60_000, owner: str = "") -> None:
        self.path = Path(path)
        self.busy_ms = busy_ms
        self.owner = owner  # the component whose schema version is the file's PRAGMA user_version
        self._local = threading.local()
        self._init_lock = threading.Lock()
        self._schemas: list[tuple[str, int | None, str]] = []
        self._wal = False

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=self.busy_ms / 1000, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout={self.busy_ms}")
        if not self._wal:
            with self._init_lock:
                if not self._wal:
                    _retry_locked(lambda: _switch_to_wal(conn))
                    self._wal = True
        conn.execute("PRAGMA synchronous=NORMAL")
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._conn().execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.transaction() as tx:
            tx.executemany(sql, rows)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def ensure_schema(self, component: str, version: int | None, ddl: dict[str, str]) -> None:
        conn = self._conn()
        _retry_locked(
            lambda: _create(
                conn,
                component,
                version,
                ddl[SQLITE],
                owned=component == self.owner,
                where=self.path,
            )
        )

    def is_conflict(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError)

    def retry(self, fn: Callable[[], T]) -> T:
        return _retry_locked(fn)

    def describe(self) -> str:
        return str(self.path)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
        self._local.conn = None


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise sqlite3.OperationalError(f"could not switch {mode!r} to WAL")


def _create(
    conn: sqlite3.Connection,
    component: str,
    version: int | None,
    ddl: str,
    *,
    owned: bool,
    where: Path,
) -> None:
    conn.executescript(ddl)
    if not owned or version is None:
        return
    found = conn.execute("PRAGMA user_version").fetchone()[0]
    if found > version:
        raise CatalogError(
            CATALOG_SCHEMA_NEWER,
            f"the {component} in {where} was written by a newer assay "
            f"(schema {found}, this one knows {version})",
            "Upgrade assay on this host.",
        )
    if found < version:
        conn.execute(f"PRAGMA user_version={version}")


def _retry_locked(fn: Callable[[], T], attempts: int = 50) -> T:
    # busy_timeout covers most contention; a few SQLite paths (the WAL switch,
    # schema creation racing another process) return "locked" at once.
    for i in range(attempts):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or i == attempts - 1:
                raise
            time.sleep(min(0.01 * (i + 1), 0.2))
    raise AssertionError("unreachable")


# --- choosing the backend ----------------------------------------------------------

_shared: dict[str, PostgresDatabase] = {}
_shared_lock = threading.Lock()


def catalog_url(settings: Any) -> str:
    """``ASSAY_CATALOG_URL`` of these settings ('' when unset: SQLite files under ``ASSAY_HOME``)."""
    return (getattr(settings, "catalog_url", None) or "").strip()


def open_database(
    settings: Any, sqlite_path: Path, *, busy_ms: int = 60_000, owner: str = ""
) -> Database:
    """The database a store of these settings uses.

    No ``ASSAY_CATALOG_URL``: the SQLite file ``sqlite_path``. A
    ``postgresql://`` URL: that database, one connection pool per process and
    URL shared by every store. Any other URL is refused (never a silent
    fallback to SQLite).
    """
    url = catalog_url(settings)
    if not url:
        return SQLiteDatabase(sqlite_path, busy_ms=busy_ms, owner=owner)
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in ("postgresql", "postgres"):
        raise CatalogError(
            CATALOG_URL_INVALID,
            f"ASSAY_CATALOG_URL {mask_url(url)!r} is not a postgresql:// URL",
            "Unset ASSAY_CATALOG_URL for the SQLite catalog under ASSAY_HOME, or give "
            "postgresql://user:password@host:5432/dbname.",
        )
    with _shared_lock:
        db = _shared.get(url)
        if db is None:
            from .database_pg import PostgresDatabase

            db = _shared[url] = PostgresDatabase(url)
        return db


def forget(url: str) -> None:
    """Close every connection this process holds to ``url`` and drop it from the shared ones (tests)."""
    with _shared_lock:
        db = _shared.pop(url, None)
    if db is not None:
        db.close_all()
