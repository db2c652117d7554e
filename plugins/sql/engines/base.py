"""What every SQL engine shares: the base class, the pool it returns, streamed rows.

:class:`SqlEngine` implements the optional parts of
:class:`assay.kernel.database_engine.DatabaseEngine`; each dialect module
(``sqlite``, ``postgres``, ``mysql``, ``duckdb``) subclasses it with its own
pool, per-statement setup, cancel, streaming and type handling.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from assay.kernel.database_engine import CatalogFetch, StatementDeadline

from ..schema import ColumnInfo, TableInfo


@dataclass(frozen=True)
class EngineLimits:
    """What one datasource's statements may cost, for the engines that can bound it themselves.

    ``max_value_bytes`` / ``max_row_bytes``: a longer text/binary value or row is refused by the engine
    before it reaches the client where it can (SQLite's length limit, a checking projection on PostgreSQL
    and DuckDB); ``duckdb_*``: the DuckDB instance's ``memory_limit`` and ``threads``;
    ``pg_temp_file_limit_mb``: PostgreSQL ``temp_file_limit`` per statement where the login may set it.
    """

    max_value_bytes: int | None = None
    max_row_bytes: int | None = None
    duckdb_memory_limit_mb: int | None = None
    duckdb_threads: int | None = None
    pg_temp_file_limit_mb: int = 0


@dataclass(eq=False)
class Pool:
    """One datasource's read-only connections, and what the engine keeps open beside them.

    ``connections`` is a pool of raw DB-API connections: SQLAlchemy's, or for
    SQLite the standard-library one of :mod:`.file_pool`. ``control``
    is the engine's own side channel, if it has one (MySQL/MariaDB: the
    connection that sends ``KILL QUERY``). ``closers`` run after the
    connections are disposed, in order (a SQLAlchemy ``Engine``, DuckDB's
    database instance, the side channel).
    """

    connections: Any
    control: Any = None
    closers: list[Callable[[], None]] = field(default_factory=list)
    limits: EngineLimits = field(default_factory=EngineLimits)

    def connect(self) -> Any:
        return self.connections.connect()

    def close(self) -> None:
        for close in [self.connections.dispose, *self.closers]:
            try:
                close()
            except Exception:  # noqa: BLE001 - closing what is already broken
                pass


def queue_pool(
    creator: Callable[[], Any], pool_size: int, pool_timeout_s: float, reset: Any = "rollback"
) -> Any:
    """A fixed-size SQLAlchemy pool over ``creator`` (no overflow)."""
    from sqlalchemy.pool import QueuePool

    return QueuePool(
        creator, pool_size=pool_size, max_overflow=0, timeout=pool_timeout_s, reset_on_return=reset
    )


def server_pool(
    url: Any, *, pool_size: int, pool_timeout_s: float, on_connect: Callable[[Any], None]
) -> tuple[Any, Any]:
    """A SQLAlchemy engine for a server URL: (its pool, the engine); ``on_connect`` sets up each new connection."""
    from sqlalchemy import create_engine, event

    engine = create_engine(
        url, pool_size=pool_size, max_overflow=0, pool_timeout=pool_timeout_s, pool_pre_ping=True
    )
    event.listen(engine, "connect", lambda dbapi_conn, _record: on_connect(dbapi_conn))
    return engine.pool, engine


# --- rows as they arrive -----------------------------------------------------------


class StreamColumn(NamedTuple):
    """One result column, shaped like a DB-API description entry (name first)."""

    name: str
    type_code: Any


@dataclass
class Streamed:
    """A started statement: its columns, its rows in batches, its decimal-text columns and value kinds."""

    description: list[Any] | None
    batches: Iterator[list[tuple]]
    decimal_text: tuple[int, ...] = ()
    # What the driver's loaders promise each column holds (kernel.evidence.canonical.PROMISED_KINDS)
    value_kinds: tuple[str, ...] | None = None

    def close(self) -> None:
        """Stop early: the rest of the result is cancelled and drained (the connection is reusable)."""
        close = getattr(self.batches, "close", None)
        if close is not None:
            close()


def cursor_stream(
    cur: Any,
    statement: str,
    chunk_rows: int,
    decimal_text: tuple[int, ...] = (),
    types: list[Any] | None = None,
) -> Streamed:
    """Execute ``statement`` on a DB-API cursor that fetches lazily, ``chunk_rows`` at a time.

    ``types`` replaces the description's types (a projection changed them).
    """
    cur.execute(statement)
    description = cur.description
    if description and types is not None:
        description = [(d[0], types[i], *d[2:]) for i, d in enumerate(description)]

    def batches() -> Iterator[list[tuple]]:
        while True:
            batch = cur.fetchmany(chunk_rows)
            if not batch:
                return
            yield batch

    return Streamed(list(description) if description else None, batches(), decimal_text)


# --- the engine -------------------------------------------------------------------


class SqlEngine:
    """Base of the engines: a name, the URL schemes it takes, its SQL dialect and defaults.

    Satisfies :class:`assay.kernel.database_engine.DatabaseEngine`; a
    subclass implements ``make_pool``, ``cancel`` and ``introspect`` and
    overrides what its driver does differently.
    """

    name: str = ""
    schemes: tuple[str, ...] = ()
    dialect: str = ""
    # True when the driver streams rows from the engine (fetchmany then bounds memory);
    # False when execute() already holds the whole result (fetchall is then the fastest).
    streams_rows: bool = False
    # True when every value of a result column has the column's type (False: SQLite's dynamic typing).
    typed_columns: bool = True
    # make_pool takes ``limits=EngineLimits(...)`` (an engine of the kernel's protocol need not)
    takes_limits: bool = True

    def normalize_url(self, url: Any) -> Any:
        return url

    def dialect_for(self, url: Any) -> str:
        return self.dialect

    def make_pool(
        self, url: Any, *, pool_size: int, pool_timeout_s: float, limits: EngineLimits | None = None
    ) -> Pool:
        raise NotImplementedError

    def begin(self, raw: Any, state: StatementDeadline, backstop_s: float) -> None:
        """Prepare ``raw`` for one read-only statement bounded by ``state.deadline``."""

    def end(self, raw: Any) -> None:
        """Undo anything the statement did (roll back); called on success and failure."""

    def reset(self, raw: Any) -> bool | None:
        """Return the session to its just-opened state before the pool hands it out again.

        Called after :meth:`end` on every statement's connection: what a
        statement may leave in the session beyond its transaction (locks held
        by the session, session variables, prepared statements) is dropped
        here. ``False`` means the session cannot be reset (the connection is
        closed and the next statement gets a new one); an exception means the
        reset failed (the same, and it is logged).
        """
        return None

    def verify(self, raw: Any) -> list[str]:
        """What is wrong with a pooled session about to run a statement (empty: fit to use).

        Called when a connection is checked out, before :meth:`begin`: the
        session's read-only flag and the settings the parser relies on must be
        what :meth:`make_pool` set up. A connection with any problem (or whose
        check raises) is discarded, never used.
        """
        return []

    def login_report(self, raw: Any) -> Any:
        """What the datasource's login may do (:class:`..privileges.LoginReport`), or None (no logins)."""
        return None

    def session_id(self, raw: Any) -> Any:
        return id(raw)

    def cursor(self, raw: Any) -> Any:
        return raw.cursor()

    def close_cursor(self, cur: Any) -> None:
        cur.close()

    def cancel(self, raw: Any, session_id: Any, pool: Pool) -> None:
        """Ask the server to stop the statement running on ``raw`` (called from another thread)."""
        raise NotImplementedError

    def is_timeout_error(self, exc: BaseException) -> bool:
        return False

    def column_types(self, raw: Any, description: Any, rows: list[tuple]) -> list[str]:
        return [python_type(rows, i) for i in range(len(description or ()))]

    def value_length_bound(self, raw: Any) -> int | None:
        """The longest text/binary value ``raw`` can return (None: unknown). When it is not above the
        artifact cap, no value can be, and ``sql_query`` skips measuring each one."""
        return None

    def fetch_decimal_text(
        self, raw: Any, cur: Any, limit: int
    ) -> tuple[list[tuple], list[int]] | None:
        """Up to ``limit`` rows with numeric columns left as the server's text (str or ASCII bytes), and their indexes.

        For callers that only store and preview the rows (``sql_query``): the
        driver then skips building ``Decimal`` objects the canonical form would
        only turn back into text. ``None`` when the engine cannot (the caller
        fetches as usual). Each value must be exactly the text the driver's own
        loader reads with ``Decimal(text)``.
        """
        return None

    def stream(
        self, raw: Any, cur: Any, sql: str, *, chunk_rows: int, decimal_text: bool
    ) -> Streamed | None:
        """Start ``sql`` and return its rows in batches as they arrive, or None.

        None (the default) means the caller executes and fetches as usual. With
        ``decimal_text``, numeric columns may come as decimal text, as in
        :meth:`fetch_decimal_text`.
        """
        return None

    def introspect(self, fetch: CatalogFetch, schemas: list[str] | None) -> list[TableInfo]:
        raise NotImplementedError

    def schema_fingerprint(self, fetch: CatalogFetch, schemas: list[str] | None) -> str | None:
        """A cheap text that changes when the schema :meth:`introspect` reads changes (tables, columns,
        types, keys, comments); None: the engine has none (the schema index is then rebuilt per process)."""
        return None


def python_type(rows: list[tuple], index: int) -> str:
    """A column's type named from its first non-NULL value (drivers that describe no types)."""
    for row in rows[:100]:
        value = row[index]
        if value is not None:
            return {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB", bool: "BOOLEAN"}.get(
                type(value), type(value).__name__.upper()
            )
    return ""


def group_tables(rows: list[tuple]) -> dict[str, TableInfo]:
    """Catalog rows of (table, kind, row_estimate, column, type, nullable, is_pk) -> tables in order."""
    tables: dict[str, TableInfo] = {}
    for name, kind, estimate, col, typ, nullable, is_pk in rows:
        table = tables.get(name)
        if table is None:
            est = int(estimate) if estimate is not None and int(estimate) >= 0 else None
            table = tables[name] = TableInfo(name=name, kind=kind, row_estimate=est)
        table.columns.append(
            ColumnInfo(
                name=col, type=str(typ or ""), nullable=bool(nullable), primary_key=bool(is_pk)
            )
        )
    return tables


def apply_comments(tables: dict[str, TableInfo], rows: list[tuple]) -> None:
    """Catalog rows of (table, column or None/'' for the table, comment) -> the tables' comments."""
    for name, column, comment in rows:
        table = tables.get(name)
        if table is None or not comment:
            continue
        if not column:
            table.comment = str(comment).strip()
            continue
        for col in table.columns:
            if col.name == column:
                col.comment = str(comment).strip()


def listing_digest(*listings: list[tuple]) -> str:
    """A digest of catalog rows (an engine whose catalog keeps no change counter hashes its listing)."""
    import hashlib

    digest = hashlib.sha256()
    for rows in listings:
        for row in rows:
            digest.update(repr(tuple(row)).encode())
        digest.update(b"\x00")
    return digest.hexdigest()
