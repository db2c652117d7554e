"""The four SQL engines: how each connects read-only, bounds time, cancels and describes itself.

Each engine is registered through the ``register_database_engines`` hook and
answers the same questions, so the execution code has no per-engine branches:

- ``make_pool``: a SQLAlchemy 2 pool of raw DB-API connections, opened
  read-only (SQLite ``mode=ro`` + ``PRAGMA query_only`` + an authorizer;
  PostgreSQL and MariaDB/MySQL default their sessions to READ ONLY
  transactions; DuckDB ``read_only`` with external access disabled and the
  configuration locked).
- ``begin`` / ``end``: wrap one statement (a READ ONLY transaction that is
  always rolled back; a server-side time limit as backstop; SQLite's
  progress-handler deadline).
- ``cancel``: stop a running statement from another thread (PostgreSQL cancel
  request for the backend, MariaDB ``KILL QUERY`` from a second connection,
  DuckDB ``interrupt()``, SQLite ``interrupt()`` beside the deadline).
- ``introspect``: tables, columns, keys and row estimates from the catalog.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any, Callable, Protocol
from urllib.parse import quote

from .schema import ColumnInfo, ForeignKey, TableInfo

Fetch = Callable[[str, Any], list[tuple]]  # (sql, params) -> rows, run on the datasource's read-only path


class Deadline(Protocol):
    deadline: float | None

    def cancel_requested(self) -> bool: ...


class SqlEngine:
    """Base of the engines: a name, the URL schemes it takes and its SQL dialect."""

    name: str = ""
    schemes: tuple[str, ...] = ()
    dialect: str = ""
    # True when the driver streams rows from the engine (fetchmany then bounds memory);
    # False when execute() already holds the whole result (fetchall is then the fastest).
    streams_rows: bool = False

    def normalize_url(self, url: Any) -> Any:
        return url

    def dialect_for(self, url: Any) -> str:
        return self.dialect

    def make_pool(self, url: Any, *, pool_size: int, pool_timeout_s: float) -> Any:
        raise NotImplementedError

    def begin(self, raw: Any, state: Deadline, backstop_s: float) -> None:
        """Prepare ``raw`` for one read-only statement bounded by ``state.deadline``."""

    def end(self, raw: Any) -> None:
        """Undo anything the statement did (roll back); called on success and failure."""

    def session_id(self, raw: Any) -> Any:
        return id(raw)

    def cursor(self, raw: Any) -> Any:
        return raw.cursor()

    def close_cursor(self, cur: Any) -> None:
        cur.close()

    def cancel(self, raw: Any, session_id: Any, pool: Any) -> None:
        """Ask the server to stop the statement running on ``raw`` (called from another thread)."""
        raise NotImplementedError

    def is_timeout_error(self, exc: BaseException) -> bool:
        return False

    def column_types(self, raw: Any, description: Any, rows: list[tuple]) -> list[str]:
        return [_python_type(rows, i) for i in range(len(description or ()))]

    def fetch_decimal_text(self, raw: Any, cur: Any, limit: int) -> tuple[list[tuple], list[int]] | None:
        """Up to ``limit`` rows with numeric columns left as the server's text (str or ASCII bytes), and their indexes.

        For callers that only store and preview the rows (``sql_query``): the
        driver then skips building ``Decimal`` objects the canonical form would
        only turn back into text. ``None`` when the engine cannot (the caller
        fetches as usual). Each value must be exactly the text the driver's own
        loader reads with ``Decimal(text)``.
        """
        return None

    def stream(self, raw: Any, cur: Any, sql: str, *, chunk_rows: int, decimal_text: bool) -> Any:
        """Start ``sql`` and return a :class:`.streaming.Streamed` (rows in batches as they arrive), or None.

        None (the default) means the caller executes and fetches as usual. With
        ``decimal_text``, numeric columns may come as decimal text, as in
        :meth:`fetch_decimal_text`.
        """
        return None

    def introspect(self, fetch: Fetch, schemas: list[str] | None) -> list[TableInfo]:
        raise NotImplementedError


def _python_type(rows: list[tuple], index: int) -> str:
    for row in rows[:100]:
        value = row[index]
        if value is not None:
            return {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB", bool: "BOOLEAN"}.get(
                type(value), type(value).__name__.upper()
            )
    return ""


def _queue_pool(creator: Callable[[], Any], pool_size: int, pool_timeout_s: float, reset: Any = "rollback") -> Any:
    from sqlalchemy.pool import QueuePool

    return QueuePool(creator, pool_size=pool_size, max_overflow=0, timeout=pool_timeout_s, reset_on_return=reset)


def _group_tables(rows: list[tuple]) -> dict[str, TableInfo]:
    """rows of (table, kind, row_estimate, column, type, nullable, is_pk) -> tables in order."""
    tables: dict[str, TableInfo] = {}
    for name, kind, estimate, col, typ, nullable, is_pk in rows:
        table = tables.get(name)
        if table is None:
            est = int(estimate) if estimate is not None and int(estimate) >= 0 else None
            table = tables[name] = TableInfo(name=name, kind=kind, row_estimate=est)
        table.columns.append(ColumnInfo(name=col, type=str(typ or ""), nullable=bool(nullable), primary_key=bool(is_pk)))
    return tables


# --- SQLite ----------------------------------------------------------------

_SQLITE_DENY = 1
_SQLITE_OK = 0
_SQLITE_READ_PRAGMAS = {
    "table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
    "collation_list", "database_list", "query_only", "user_version", "schema_version", "page_count", "page_size",
}
_SQLITE_DENIED_FUNCS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}


def _sqlite_authorizer(action: int, arg1: Any, arg2: Any, dbname: Any, source: Any) -> int:
    # Below the parser: no ATTACH/DETACH, no file functions, no writing PRAGMAs.
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return _SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and str(arg2 or "").lower() in _SQLITE_DENIED_FUNCS:
        return _SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:
        name = str(arg1 or "").lower()
        if name not in _SQLITE_READ_PRAGMAS or (arg2 is not None and name in {"query_only", "user_version"}):
            return _SQLITE_DENY
    return _SQLITE_OK


class SqliteEngine(SqlEngine):
    name = "sqlite"
    schemes = ("sqlite", "sqlite+pysqlite")
    dialect = "sqlite"
    streams_rows = True

    def make_pool(self, url: Any, *, pool_size: int, pool_timeout_s: float) -> Any:
        path = url.database or ""
        if not path or path == ":memory:":
            raise ValueError("SQLite datasources must name a database file (read-only in-memory databases are empty)")

        def creator() -> sqlite3.Connection:
            conn = sqlite3.connect(
                f"file:{quote(path)}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
            )
            conn.execute("PRAGMA query_only = 1")
            conn.set_authorizer(_sqlite_authorizer)
            return conn

        return _queue_pool(creator, pool_size, pool_timeout_s)

    def begin(self, raw: sqlite3.Connection, state: Deadline, backstop_s: float) -> None:
        deadline = state.deadline or float("inf")
        monotonic = time.monotonic

        def check() -> int:
            return 1 if monotonic() >= deadline or state.cancel_requested() else 0

        raw.set_progress_handler(check, 10_000)  # well under a millisecond of work between checks

    def end(self, raw: sqlite3.Connection) -> None:
        raw.set_progress_handler(None, 0)

    def cancel(self, raw: sqlite3.Connection, session_id: Any, pool: Any) -> None:
        raw.interrupt()  # the progress handler also stops it at the deadline

    def is_timeout_error(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and "interrupted" in str(exc)

    def stream(self, raw: Any, cur: Any, sql: str, *, chunk_rows: int, decimal_text: bool) -> Any:
        from .streaming import cursor_stream

        return cursor_stream(cur, sql, chunk_rows)

    def introspect(self, fetch: Fetch, schemas: list[str] | None) -> list[TableInfo]:
        objects = fetch(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name",
            (),
        )
        tables = []
        for name, kind in objects:
            cols = fetch("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)", (name,))
            fks: dict[int, ForeignKey] = {}
            for fk_id, _seq, ref, col_from, col_to in fetch(
                "SELECT id, seq, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?) ORDER BY id, seq", (name,)
            ):
                fk = fks.setdefault(fk_id, ForeignKey(columns=[], ref_table=ref, ref_columns=[]))
                fk.columns.append(col_from)
                if col_to:
                    fk.ref_columns.append(col_to)
            estimate = None
            if kind == "table" and len(objects) <= 200:
                quoted = '"' + name.replace('"', '""') + '"'
                estimate = fetch(f"SELECT count(*) FROM {quoted}", ())[0][0]
            tables.append(
                TableInfo(
                    name=name,
                    kind=kind,
                    row_estimate=estimate,
                    columns=[ColumnInfo(name=c, type=t or "", nullable=not nn, primary_key=bool(pk)) for c, t, nn, pk in cols],
                    foreign_keys=list(fks.values()),
                )
            )
        return tables


# --- PostgreSQL ------------------------------------------------------------

_PG_SYSTEM = "('pg_catalog', 'information_schema', 'pg_toast')"
_PG_NUMERIC = 1700
# Scalar types whose loaders never consult the numeric loader (arrays, ranges, records and
# composites of numeric do: a result holding any other type is fetched as usual).
_PG_PLAIN_TYPES = frozenset({
    16, 17, 18, 19, 20, 21, 23, 25, 26, 114, 700, 701, 1042, 1043, 1082, 1083, 1114, 1184, 1186, 1266,
    _PG_NUMERIC, 2950, 3802,
})


class _NumericAsText:
    """An adaptation context: the connection's loaders, with numeric read as its ASCII text, as bytes.

    The C bytea loader is used for that: in text format it unescapes only
    backslash sequences, which numeric output never holds, so each value is
    the server's text byte for byte. Bytes (unlike str) are handed to the
    canonical encoder's ``default`` like Decimals, so rows are not rebuilt.
    """

    def __init__(self, raw: Any) -> None:
        from psycopg.adapt import AdaptersMap
        from psycopg.types.string import ByteaLoader

        self.connection = raw
        self.adapters = AdaptersMap(raw.adapters)
        self.adapters.register_loader(_PG_NUMERIC, ByteaLoader)


class PostgresEngine(SqlEngine):
    name = "postgresql"
    schemes = ("postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2", "postgresql+psycopg3")
    dialect = "postgresql"

    def normalize_url(self, url: Any) -> Any:
        return url.set(drivername="postgresql+psycopg")

    def make_pool(self, url: Any, *, pool_size: int, pool_timeout_s: float) -> Any:
        from sqlalchemy import create_engine, event

        engine = create_engine(url, pool_size=pool_size, max_overflow=0, pool_timeout=pool_timeout_s,
                               pool_pre_ping=True)

        @event.listens_for(engine, "connect")
        def _read_only_session(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.read_only = True  # every transaction psycopg opens is BEGIN READ ONLY
            with dbapi_conn.cursor() as cur:
                cur.execute("SET default_transaction_read_only = on")
            dbapi_conn.commit()

        engine.pool._assay_engine = engine  # keep the Engine alive with its pool
        return engine.pool

    def begin(self, raw: Any, state: Deadline, backstop_s: float) -> None:
        if raw.info.transaction_status != 0:  # pragma: no cover - pool reset normally leaves it idle
            raw.rollback()
        raw.read_only = True
        with raw.cursor() as cur:
            cur.execute("SELECT set_config('statement_timeout', %s, true)", (f"{int(backstop_s * 1000)}ms",))

    def end(self, raw: Any) -> None:
        raw.rollback()

    def session_id(self, raw: Any) -> Any:
        return raw.info.backend_pid

    def cancel(self, raw: Any, session_id: Any, pool: Any) -> None:
        raw.cancel_safe(timeout=5.0)

    def is_timeout_error(self, exc: BaseException) -> bool:
        import psycopg

        return isinstance(exc, psycopg.errors.QueryCanceled)

    def column_types(self, raw: Any, description: Any, rows: list[tuple]) -> list[str]:
        out = []
        for col in description or ():
            info = raw.adapters.types.get(col.type_code)
            out.append(info.name if info is not None else str(col.type_code))
        return out

    def stream(self, raw: Any, cur: Any, sql: str, *, chunk_rows: int, decimal_text: bool) -> Any:
        from .streaming import postgres_stream

        return postgres_stream(raw, sql, chunk_rows, decimal_text)

    def fetch_decimal_text(self, raw: Any, cur: Any, limit: int) -> tuple[list[tuple], list[int]] | None:
        # psycopg's numeric loader is Decimal(text) of the server's text output: loading that
        # text as bytes with a C loader instead skips 100,000s of Decimal objects.
        res = cur.pgresult
        if res is None or cur.rownumber not in (0, None):
            return None
        oids = [res.ftype(i) for i in range(res.nfields)]
        if _PG_NUMERIC not in oids or not set(oids) <= _PG_PLAIN_TYPES:
            return None
        if any(res.fformat(i) != 0 for i in range(res.nfields)):  # binary results: the usual path
            return None
        from psycopg.adapt import Transformer

        tx = Transformer(_NumericAsText(raw))
        tx.set_pgresult(res)
        rows = tx.load_rows(0, min(res.ntuples, limit), tuple)
        return rows, [i for i, oid in enumerate(oids) if oid == _PG_NUMERIC]

    def introspect(self, fetch: Fetch, schemas: list[str] | None) -> list[TableInfo]:
        where = "n.nspname = ANY(%s)" if schemas else f"n.nspname NOT IN {_PG_SYSTEM} AND n.nspname NOT LIKE 'pg_%%'"
        params = (schemas,) if schemas else ()
        rows = fetch(
            "SELECT CASE WHEN n.nspname = ANY(current_schemas(false)) THEN c.relname ELSE n.nspname || '.' || c.relname END, "
            "CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'table' END, c.reltuples::bigint, "
            "a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, "
            "EXISTS (SELECT 1 FROM pg_constraint p WHERE p.conrelid = c.oid AND p.contype = 'p' AND a.attnum = ANY(p.conkey)) "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
            f"WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND {where} AND has_schema_privilege(n.oid, 'USAGE') "
            "ORDER BY NOT (n.nspname = ANY(current_schemas(false))), n.nspname, c.relname, a.attnum",
            params,
        )
        tables = _group_tables(rows)
        fks = fetch(
            "SELECT CASE WHEN n.nspname = ANY(current_schemas(false)) THEN c.relname ELSE n.nspname || '.' || c.relname END, "
            "CASE WHEN fn.nspname = ANY(current_schemas(false)) THEN fc.relname ELSE fn.nspname || '.' || fc.relname END, "
            "ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(num, ord) "
            "      JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num ORDER BY k.ord), "
            "ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(num, ord) "
            "      JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.num ORDER BY k.ord) "
            "FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_class fc ON fc.oid = con.confrelid JOIN pg_namespace fn ON fn.oid = fc.relnamespace "
            f"WHERE con.contype = 'f' AND {where} ORDER BY con.conname",
            params,
        )
        for table, ref, cols, ref_cols in fks:
            if table in tables:
                tables[table].foreign_keys.append(ForeignKey(columns=list(cols), ref_table=ref, ref_columns=list(ref_cols)))
        return list(tables.values())


# --- MySQL / MariaDB -------------------------------------------------------


class MysqlEngine(SqlEngine):
    name = "mysql"
    schemes = ("mysql", "mariadb", "mysql+pymysql", "mariadb+pymysql")
    dialect = "mysql"

    def normalize_url(self, url: Any) -> Any:
        return url.set(drivername="mysql+pymysql")

    def dialect_for(self, url: Any) -> str:
        return "mariadb" if url.get_backend_name() == "mariadb" else "mysql"

    def make_pool(self, url: Any, *, pool_size: int, pool_timeout_s: float) -> Any:
        from sqlalchemy import create_engine, event

        engine = create_engine(url, pool_size=pool_size, max_overflow=0, pool_timeout=pool_timeout_s,
                               pool_pre_ping=True)
        args, kwargs = engine.dialect.create_connect_args(engine.url)

        @event.listens_for(engine, "connect")
        def _read_only_session(dbapi_conn: Any, _record: Any) -> None:
            with dbapi_conn.cursor() as cur:
                # Session default too: DDL commits implicitly and would escape a
                # READ ONLY transaction; a read-only session refuses it.
                cur.execute("SET SESSION TRANSACTION READ ONLY")
            dbapi_conn.__dict__["_assay_mariadb"] = "mariadb" in dbapi_conn.get_server_info().lower()

        engine.pool._assay_engine = engine
        engine.pool._assay_control = _KillConnection(args, kwargs)
        engine.pool._assay_control.warm()
        return engine.pool

    def begin(self, raw: Any, state: Deadline, backstop_s: float) -> None:
        with raw.cursor() as cur:
            if raw.__dict__.get("_assay_mariadb", True):
                cur.execute("SET SESSION max_statement_time = %s", (round(backstop_s, 3),))
            else:
                cur.execute("SET SESSION max_execution_time = %s", (int(backstop_s * 1000),))
            cur.execute("START TRANSACTION READ ONLY")

    def end(self, raw: Any) -> None:
        raw.rollback()

    def session_id(self, raw: Any) -> Any:
        return raw.thread_id()

    def cancel(self, raw: Any, session_id: Any, pool: Any) -> None:
        pool._assay_control.kill_query(int(session_id))

    def is_timeout_error(self, exc: BaseException) -> bool:
        code = exc.args[0] if getattr(exc, "args", None) else None
        return code in (1969, 3024, 1317)

    def column_types(self, raw: Any, description: Any, rows: list[tuple]) -> list[str]:
        from pymysql.constants import FIELD_TYPE

        names = {v: k for k, v in vars(FIELD_TYPE).items() if isinstance(v, int)}
        return [names.get(col[1], str(col[1])) for col in description or ()]

    def introspect(self, fetch: Fetch, schemas: list[str] | None) -> list[TableInfo]:
        rows = fetch(
            "SELECT c.table_name, IF(t.table_type = 'VIEW', 'view', 'table'), t.table_rows, c.column_name, "
            "c.column_type, c.is_nullable = 'YES', c.column_key = 'PRI' "
            "FROM information_schema.columns c JOIN information_schema.tables t "
            "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.table_schema = DATABASE() ORDER BY c.table_name, c.ordinal_position",
            None,
        )
        tables = _group_tables(rows)
        fks: dict[tuple[str, str], ForeignKey] = {}
        for table, name, col, ref, ref_col in fetch(
            "SELECT table_name, constraint_name, column_name, referenced_table_name, referenced_column_name "
            "FROM information_schema.key_column_usage WHERE table_schema = DATABASE() "
            "AND referenced_table_name IS NOT NULL ORDER BY table_name, constraint_name, ordinal_position",
            None,
        ):
            fk = fks.get((table, name))
            if fk is None:
                fk = fks[(table, name)] = ForeignKey(columns=[], ref_table=ref, ref_columns=[])
                if table in tables:
                    tables[table].foreign_keys.append(fk)
            fk.columns.append(col)
            fk.ref_columns.append(ref_col)
        return list(tables.values())


class _KillConnection:
    """A second connection kept open for ``KILL QUERY`` (a new MariaDB login can take 200+ ms)."""

    def __init__(self, args: Any, kwargs: Any) -> None:
        import threading

        self._args, self._kwargs = args, {**kwargs, "connect_timeout": 5}
        self._conn: Any = None
        self._lock = threading.Lock()

    def warm(self) -> None:
        import threading

        if self._conn is None:
            threading.Thread(target=self._ensure_quietly, daemon=True).start()

    def _ensure_quietly(self) -> None:
        try:
            with self._lock:
                self._ensure()
        except Exception:  # noqa: BLE001 - kill_query connects again and reports
            pass

    def _ensure(self) -> Any:
        import pymysql

        if self._conn is None:
            self._conn = pymysql.connect(*self._args, **self._kwargs)
        return self._conn

    def kill_query(self, thread_id: int) -> None:
        with self._lock:
            for attempt in (1, 2):
                try:
                    with self._ensure().cursor() as cur:
                        cur.execute(f"KILL QUERY {thread_id}")
                    return
                except Exception:
                    self.close_unlocked()
                    if attempt == 2:
                        raise

    def close_unlocked(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass


# --- DuckDB ----------------------------------------------------------------

DUCKDB_LOCKED_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}


class DuckdbEngine(SqlEngine):
    name = "duckdb"
    schemes = ("duckdb",)
    dialect = "duckdb"

    def make_pool(self, url: Any, *, pool_size: int, pool_timeout_s: float) -> Any:
        import duckdb

        path = url.database or ":memory:"
        read_only = path != ":memory:"
        database = duckdb.connect(path, read_only=read_only, config=dict(DUCKDB_LOCKED_CONFIG))
        pool = _queue_pool(database.cursor, pool_size, pool_timeout_s, reset=None)
        pool._assay_database = database  # the shared instance; pooled cursors are its connections
        return pool

    def end(self, raw: Any) -> None:
        return None  # the database is opened read-only; nothing to undo

    def cursor(self, raw: Any) -> Any:
        return raw  # a DuckDB cursor() is a new connection that interrupt() on raw would not reach

    def close_cursor(self, cur: Any) -> None:
        return None

    def cancel(self, raw: Any, session_id: Any, pool: Any) -> None:
        raw.interrupt()

    def is_timeout_error(self, exc: BaseException) -> bool:
        return type(exc).__name__ == "InterruptException"

    def column_types(self, raw: Any, description: Any, rows: list[tuple]) -> list[str]:
        return [str(col[1]) for col in description or ()]

    def stream(self, raw: Any, cur: Any, sql: str, *, chunk_rows: int, decimal_text: bool) -> Any:
        from .streaming import duckdb_stream

        return duckdb_stream(cur, sql, chunk_rows, decimal_text)

    def introspect(self, fetch: Fetch, schemas: list[str] | None) -> list[TableInfo]:
        schema_filter = "AND c.schema_name IN (SELECT unnest(?))" if schemas else ""
        params = [schemas] if schemas else []
        rows = fetch(
            "SELECT CASE WHEN c.schema_name = 'main' THEN c.table_name ELSE c.schema_name || '.' || c.table_name END, "
            "CASE WHEN t.table_name IS NULL THEN 'view' ELSE 'table' END, t.estimated_size, c.column_name, "
            "c.data_type, c.is_nullable, "
            "EXISTS (SELECT 1 FROM duckdb_constraints() k WHERE k.constraint_type = 'PRIMARY KEY' "
            "  AND k.database_name = c.database_name AND k.schema_name = c.schema_name "
            "  AND k.table_name = c.table_name AND list_contains(k.constraint_column_names, c.column_name)) "
            "FROM duckdb_columns() c LEFT JOIN duckdb_tables() t ON t.database_name = c.database_name "
            "AND t.schema_name = c.schema_name AND t.table_name = c.table_name "
            f"WHERE c.database_name = current_database() AND NOT c.internal {schema_filter} "
            "ORDER BY c.schema_name <> 'main', c.schema_name, c.table_name, c.column_index",
            params,
        )
        tables = _group_tables(rows)
        for schema, table, cols, ref, ref_cols in fetch(
            "SELECT schema_name, table_name, constraint_column_names, referenced_table, referenced_column_names "
            "FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' AND database_name = current_database()",
            [],
        ):
            key = table if schema == "main" else f"{schema}.{table}"
            if key in tables:
                tables[key].foreign_keys.append(ForeignKey(columns=list(cols), ref_table=ref, ref_columns=list(ref_cols or [])))
        return list(tables.values())


BUILTIN_ENGINES: tuple[SqlEngine, ...] = (SqliteEngine(), PostgresEngine(), MysqlEngine(), DuckdbEngine())
# By name, for the plugin's lazy registrations (``assay.plugins.sql.engines:SQLITE`` ...).
SQLITE, POSTGRESQL, MYSQL, DUCKDB = BUILTIN_ENGINES
