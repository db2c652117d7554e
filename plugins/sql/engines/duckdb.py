"""DuckDB: one read-only database instance, its cursors pooled, ``interrupt()`` to cancel.

- Pool: the file is opened ``read_only`` with external access off,
  extension auto-install/load off and the configuration locked
  (:data:`LOCKED_CONFIG`); the pooled connections are that instance's
  cursors. ``duckdb:///:memory:`` cannot be read-only: only the parser and
  the locked configuration guard it.
- Hygiene: every statement gets a fresh cursor (a cursor keeps variables,
  temporary objects and a search_path, and DuckDB cannot reset them).
- Cancel: ``interrupt()`` on the connection running the statement.
- Streaming: ``fetchmany``; for ``sql_query`` DECIMAL columns are cast to
  VARCHAR by a projection over the statement (only a plain query with unique
  column names), which skips building ``Decimal`` objects the canonical form
  would only turn back into text. Column types are reported as the query's own.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

from assay.kernel.database_engine import CatalogFetch, DatabasePool

from ..schema import ForeignKey, TableInfo
from ..value_limits import bounds_filter, from_engine
from .base import (
    EngineLimits,
    Pool,
    SqlEngine,
    Streamed,
    apply_comments,
    cursor_stream,
    group_tables,
    listing_digest,
    queue_pool,
)

LOCKED_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}
BOUNDS: weakref.WeakKeyDictionary[Any, EngineLimits] = (
    weakref.WeakKeyDictionary()
)  # each pooled cursor's
_QUERY_START = re.compile(r"\s*(?:\(\s*)*(?:select|with|from)\b", re.IGNORECASE)


def instance_config(limits: EngineLimits) -> dict[str, Any]:
    """The configuration a datasource's instance is opened with (another connection to the same file in
    this process must use the same one: DuckDB refuses a second configuration)."""
    config: dict[str, Any] = dict(LOCKED_CONFIG)
    if limits.duckdb_memory_limit_mb:  # the instance's queries together; locked with the rest
        config["memory_limit"] = f"{limits.duckdb_memory_limit_mb}MB"
    if limits.duckdb_threads:
        config["threads"] = limits.duckdb_threads
    return config


class DuckdbEngine(SqlEngine):
    name = "duckdb"
    schemes: tuple[str, ...] = ("duckdb",)
    dialect = "duckdb"
    cancel_repeat_s = 0.05  # in-process: an interrupt sent between two steps is lost; sent again

    def make_pool(
        self, url: Any, *, pool_size: int, pool_timeout_s: float, limits: EngineLimits | None = None
    ) -> Pool:
        import duckdb

        limits = limits or EngineLimits()
        path = url.database or ":memory:"
        read_only = path != ":memory:"
        database = duckdb.connect(path, read_only=read_only, config=instance_config(limits))

        def cursor() -> Any:
            raw = database.cursor()
            BOUNDS[raw] = limits
            return raw

        # The shared instance: its cursors are the pooled connections, closed after them.
        return Pool(
            queue_pool(cursor, pool_size, pool_timeout_s, reset=None),
            closers=[database.close],
            limits=limits,
        )

    def end(self, raw: Any) -> None:
        return None  # the database is opened read-only; nothing to undo

    def reset(self, raw: Any) -> bool:
        """Never reused: a read-only, locked instance still lets a cursor keep variables, temporary
        tables, views, macros, sequences and a search_path, and DuckDB has no reset for them (nor a
        cheap way to list them all: duckdb_functions() alone takes ~20 ms). A fresh cursor costs ~0.1 ms."""
        return False

    def verify(self, raw: Any) -> list[str]:
        external, locked = raw.execute(
            "SELECT current_setting('enable_external_access'), current_setting('lock_configuration')"
        ).fetchone()
        problems = []
        if external is not False:
            problems.append("enable_external_access is on")
        if locked is not True:
            problems.append("the configuration is not locked")
        return problems

    def cursor(self, raw: Any) -> Any:
        return raw  # a DuckDB cursor() is a new connection that interrupt() on raw would not reach

    def close_cursor(self, cur: Any) -> None:
        return None

    def cancel(self, raw: Any, session_id: Any, pool: DatabasePool) -> None:
        raw.interrupt()  # the pool is not needed: any pool will do (kernel's DatabaseEngine)

    def is_timeout_error(self, exc: BaseException) -> bool:
        return type(exc).__name__ == "InterruptException"

    def column_types(self, raw: Any, description: Any, rows: list[tuple]) -> list[str]:
        return [str(col[1]) for col in description or ()]

    def stream(
        self, raw: Any, cur: Any, sql: str, *, chunk_rows: int, decimal_text: bool
    ) -> Streamed:
        limits = BOUNDS.get(raw)
        statement, text_columns, types = decimal_projection(cur, sql, limits, decimal_text)
        try:
            streamed = cursor_stream(cur, statement, chunk_rows, text_columns, types)
        except Exception as exc:
            raise _refusal(exc, cur, sql, limits) or exc from None
        names = [d[0] for d in streamed.description or ()]
        streamed.batches = _refusing(streamed.batches, names, limits)
        return streamed

    def introspect(self, fetch: CatalogFetch, schemas: list[str] | None) -> list[TableInfo]:
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
        tables = group_tables(rows)
        for schema, table, cols, ref, ref_cols in fetch(
            "SELECT schema_name, table_name, constraint_column_names, referenced_table, referenced_column_names "
            "FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' AND database_name = current_database()",
            [],
        ):
            key = table if schema == "main" else f"{schema}.{table}"
            if key in tables:
                tables[key].foreign_keys.append(
                    ForeignKey(columns=list(cols), ref_table=ref, ref_columns=list(ref_cols or []))
                )
        apply_comments(tables, fetch(self._COMMENTS, []))
        return list(tables.values())

    _NAME = (
        "CASE WHEN schema_name = 'main' THEN table_name ELSE schema_name || '.' || table_name END"
    )
    _COMMENTS = (
        f"SELECT {_NAME}, NULL, comment FROM duckdb_tables() WHERE database_name = current_database() "
        "AND comment IS NOT NULL UNION ALL "
        f"SELECT {_NAME.replace('table_name', 'view_name')}, NULL, comment FROM duckdb_views() "
        "WHERE database_name = current_database() "
        "AND NOT internal AND comment IS NOT NULL UNION ALL "
        f"SELECT {_NAME}, column_name, comment FROM duckdb_columns() WHERE database_name = current_database() "
        "AND NOT internal AND comment IS NOT NULL"
    )

    def schema_fingerprint(self, fetch: CatalogFetch, schemas: list[str] | None) -> str:
        """A digest of the catalog listing: columns, comments and constraints."""
        columns = fetch(
            "SELECT schema_name, table_name, column_name, data_type, is_nullable, comment FROM duckdb_columns() "
            "WHERE database_name = current_database() AND NOT internal ORDER BY schema_name, table_name, column_index",
            [],
        )
        comments = fetch(self._COMMENTS + " ORDER BY 1, 2", [])
        keys = fetch(
            "SELECT schema_name, table_name, constraint_type, constraint_column_names::VARCHAR, "
            "referenced_table, referenced_column_names::VARCHAR FROM duckdb_constraints() "
            "WHERE database_name = current_database() ORDER BY ALL",
            [],
        )
        return "duckdb:" + listing_digest(columns, comments, keys)


DUCKDB = DuckdbEngine()


# Types whose values are short (never near a value bound): their lengths are not checked.
SHORT_TYPES = frozenset(
    {
        "boolean",
        "tinyint",
        "smallint",
        "integer",
        "bigint",
        "hugeint",
        "utinyint",
        "usmallint",
        "uinteger",
        "ubigint",
        "uhugeint",
        "float",
        "double",
        "decimal",
        "date",
        "time",
        "time with time zone",
        "timestamp",
        "timestamp with time zone",
        "timestamp_s",
        "timestamp_ms",
        "timestamp_ns",
        "interval",
        "uuid",
        "enum",
        "null",
    }
)


def decimal_projection(
    raw: Any, sql: str, limits: EngineLimits | None = None, decimal_text: bool = True
) -> tuple[str, tuple[int, ...], list[Any] | None]:
    """``sql`` with its DECIMAL columns cast to VARCHAR and its long values bounded; the DECIMAL columns'
    indexes and the original types.

    Only a plain query (``SELECT``/``WITH``/``FROM`` first) is bound to learn its columns; the projection
    takes them by position (``AS assay_rows(c0, c1, ...)``), keeps the rows' order and their names. With
    ``limits``, its filter checks each text, binary or nested column's length and raises DuckDB's
    ``error()`` (marked, see :mod:`..value_limits`) before a longer value or row is handed over. Unchanged
    when nothing applies or the projection does not bind to the same columns.
    """
    if not _QUERY_START.match(sql):
        return sql, (), None
    try:
        relation = raw.sql(sql)  # binds the query; a query is not run until fetched
        names, types = list(relation.columns), list(relation.types)
    except Exception:  # noqa: BLE001 - the statement itself reports its error when run
        return sql, (), None
    # Only DECIMAL columns themselves: a list, array, struct or map of DECIMALs casts to text that is not a
    # number (its type's name also starts with DECIMAL: 'DECIMAL(10,2)[]'), and is left to the driver.
    decimals = (
        [i for i, t in enumerate(types) if getattr(t, "id", "") == "decimal"]
        if decimal_text
        else []
    )
    lengths = {}
    if limits is not None and limits.max_value_bytes is not None:
        lengths = {
            i: _length_sql(i, getattr(t, "id", ""))
            for i, t in enumerate(types)
            if getattr(t, "id", "") not in SHORT_TYPES
        }
    if not decimals and not lengths:
        return sql, (), None
    body = sql.strip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    columns = ", ".join(
        (f'CAST("c{i}" AS VARCHAR)' if i in decimals else f'"c{i}"') + f" AS {_quote(n)}"
        for i, n in enumerate(names)
    )
    aliases = ", ".join(f'"c{i}"' for i in range(len(names)))
    projected = f"SELECT {columns} FROM (\n{body}\n) AS assay_rows({aliases})"
    if lengths:
        assert limits is not None and limits.max_value_bytes is not None
        projected += " WHERE " + bounds_filter(
            lengths, limits.max_value_bytes, limits.max_row_bytes or 2**62, "error({})"
        )
    try:  # bound, not run: text the projection cannot wrap (a trailing comment after ';') keeps its own form
        if list(raw.sql(projected).columns) != names:
            return sql, (), None
    except Exception:  # noqa: BLE001
        return sql, (), None
    return projected, tuple(decimals), types if decimals else None


def _length_sql(index: int, type_id: str) -> str:
    if type_id == "varchar":
        return f'strlen("c{index}")'
    if type_id == "blob":
        return f'octet_length("c{index}")'
    return f'strlen(CAST("c{index}" AS VARCHAR))'  # lists, structs, maps...: their text


def _refusal(
    exc: BaseException, cur: Any, sql: str, limits: EngineLimits | None
) -> BaseException | None:
    if limits is None or limits.max_value_bytes is None:
        return None
    try:  # refused before the first row: the query's columns, bound again (on this error path only)
        names = list(cur.sql(sql).columns)
    except Exception:  # noqa: BLE001
        names = []
    return from_engine(exc, names, limits.max_value_bytes, limits.max_row_bytes or 0)


def _refusing(batches: Any, names: list[str], limits: EngineLimits | None) -> Any:
    try:
        yield from batches
    except Exception as exc:
        if limits is None or limits.max_value_bytes is None:
            raise
        refused = from_engine(exc, names, limits.max_value_bytes, limits.max_row_bytes or 0)
        if refused is None:
            raise
        raise refused from None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
