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
from typing import Any

from assay.kernel.database_engine import CatalogFetch

from ..schema import ForeignKey, TableInfo
from .base import Pool, SqlEngine, Streamed, cursor_stream, group_tables, queue_pool

LOCKED_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}
_QUERY_START = re.compile(r"\s*(?:\(\s*)*(?:select|with|from)\b", re.IGNORECASE)


class DuckdbEngine(SqlEngine):
    name = "duckdb"
    schemes = ("duckdb",)
    dialect = "duckdb"

    def make_pool(self, url: Any, *, pool_size: int, pool_timeout_s: float) -> Pool:
        import duckdb

        path = url.database or ":memory:"
        read_only = path != ":memory:"
        database = duckdb.connect(path, read_only=read_only, config=dict(LOCKED_CONFIG))
        # The shared instance: its cursors are the pooled connections, closed after them.
        return Pool(queue_pool(database.cursor, pool_size, pool_timeout_s, reset=None), closers=[database.close])

    def end(self, raw: Any) -> None:
        return None  # the database is opened read-only; nothing to undo

    def reset(self, raw: Any) -> bool:
        """Never reused: a read-only, locked instance still lets a cursor keep variables, temporary
        tables, views, macros, sequences and a search_path, and DuckDB has no reset for them (nor a
        cheap way to list them all: duckdb_functions() alone takes ~20 ms). A fresh cursor costs ~0.1 ms."""
        return False

    def verify(self, raw: Any) -> list[str]:
        external, locked = raw.execute(
            "SELECT current_setting('enable_external_access'), current_setting('lock_configuration')").fetchone()
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

    def cancel(self, raw: Any, session_id: Any, pool: Pool) -> None:
        raw.interrupt()

    def is_timeout_error(self, exc: BaseException) -> bool:
        return type(exc).__name__ == "InterruptException"

    def column_types(self, raw: Any, description: Any, rows: list[tuple]) -> list[str]:
        return [str(col[1]) for col in description or ()]

    def stream(self, raw: Any, cur: Any, sql: str, *, chunk_rows: int, decimal_text: bool) -> Streamed:
        statement, text_columns, types = sql, (), None
        if decimal_text:
            statement, text_columns, types = decimal_projection(cur, sql)
        return cursor_stream(cur, statement, chunk_rows, text_columns, types)

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
                tables[key].foreign_keys.append(ForeignKey(columns=list(cols), ref_table=ref, ref_columns=list(ref_cols or [])))
        return list(tables.values())


DUCKDB = DuckdbEngine()


def decimal_projection(raw: Any, sql: str) -> tuple[str, tuple[int, ...], list[Any] | None]:
    """``sql`` with its DECIMAL columns cast to VARCHAR, their indexes and the original types.

    Only a plain query (``SELECT``/``WITH``/``FROM`` first) is bound to learn its
    columns; a projection keeps the rows' order. Unchanged when nothing applies
    or the projection does not bind to the same columns.
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
    decimals = [i for i, t in enumerate(types) if getattr(t, "id", "") == "decimal"]
    if not decimals or len({n.lower() for n in names}) != len(names):
        return sql, (), None
    body = sql.strip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    casts = ", ".join(f'CAST({_quote(names[i])} AS VARCHAR) AS {_quote(names[i])}' for i in decimals)
    projected = f"SELECT * REPLACE ({casts}) FROM (\n{body}\n) AS assay_rows"
    try:  # bound, not run: text the projection cannot wrap (a trailing comment after ';') keeps its own form
        if list(raw.sql(projected).columns) != names:
            return sql, (), None
    except Exception:  # noqa: BLE001
        return sql, (), None
    return projected, tuple(decimals), types


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
