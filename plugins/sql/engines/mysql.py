"""MySQL and MariaDB (pymysql): read-only sessions, ``KILL QUERY`` from a kept-open side connection.

- Pool: every session is ``SET SESSION TRANSACTION READ ONLY`` (DDL commits
  implicitly and would escape a READ ONLY transaction; a read-only session
  refuses it); each statement runs in ``START TRANSACTION READ ONLY``, rolled
  back, with ``max_statement_time`` (MariaDB) or ``max_execution_time``
  (MySQL) as the server-side backstop.
- Cancel: ``KILL QUERY <thread id>`` from a second connection, opened when
  the pool is made and kept (a new MariaDB login can take 200+ ms).
- Streaming: none; pymysql's execute() holds the whole result, which is then
  handed over as one batch.
- Types: the protocol's field type names.
"""

from __future__ import annotations

import threading
from typing import Any

from assay.kernel.database_engine import CatalogFetch, StatementDeadline

from ..schema import ForeignKey, TableInfo
from .base import Pool, SqlEngine, group_tables, server_pool

TIMEOUT_ERRORS = (1969, 3024, 1317)  # MariaDB max_statement_time, MySQL max_execution_time, interrupted


def _read_only_session(dbapi_conn: Any) -> None:
    with dbapi_conn.cursor() as cur:
        cur.execute("SET SESSION TRANSACTION READ ONLY")


def is_mariadb(raw: Any) -> bool:
    """The server said it is MariaDB when this connection logged in (no round trip)."""
    return "mariadb" in raw.get_server_info().lower()


class MysqlEngine(SqlEngine):
    name = "mysql"
    schemes = ("mysql", "mariadb", "mysql+pymysql", "mariadb+pymysql")
    dialect = "mysql"

    def normalize_url(self, url: Any) -> Any:
        return url.set(drivername="mysql+pymysql")

    def dialect_for(self, url: Any) -> str:
        return "mariadb" if url.get_backend_name() == "mariadb" else "mysql"

    def make_pool(self, url: Any, *, pool_size: int, pool_timeout_s: float) -> Pool:
        connections, engine = server_pool(url, pool_size=pool_size, pool_timeout_s=pool_timeout_s,
                                          on_connect=_read_only_session)
        args, kwargs = engine.dialect.create_connect_args(engine.url)
        control = KillConnection(args, kwargs)
        control.warm()
        return Pool(connections, control=control, closers=[control.close, engine.dispose])

    def begin(self, raw: Any, state: StatementDeadline, backstop_s: float) -> None:
        with raw.cursor() as cur:
            if is_mariadb(raw):
                cur.execute("SET SESSION max_statement_time = %s", (round(backstop_s, 3),))
            else:
                cur.execute("SET SESSION max_execution_time = %s", (int(backstop_s * 1000),))
            cur.execute("START TRANSACTION READ ONLY")

    def end(self, raw: Any) -> None:
        raw.rollback()

    def session_id(self, raw: Any) -> Any:
        return raw.thread_id()

    def cancel(self, raw: Any, session_id: Any, pool: Pool) -> None:
        pool.control.kill_query(int(session_id))

    def is_timeout_error(self, exc: BaseException) -> bool:
        code = exc.args[0] if getattr(exc, "args", None) else None
        return code in TIMEOUT_ERRORS

    def column_types(self, raw: Any, description: Any, rows: list[tuple]) -> list[str]:
        from pymysql.constants import FIELD_TYPE

        names = {v: k for k, v in vars(FIELD_TYPE).items() if isinstance(v, int)}
        return [names.get(col[1], str(col[1])) for col in description or ()]

    def introspect(self, fetch: CatalogFetch, schemas: list[str] | None) -> list[TableInfo]:
        rows = fetch(
            "SELECT c.table_name, IF(t.table_type = 'VIEW', 'view', 'table'), t.table_rows, c.column_name, "
            "c.column_type, c.is_nullable = 'YES', c.column_key = 'PRI' "
            "FROM information_schema.columns c JOIN information_schema.tables t "
            "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.table_schema = DATABASE() ORDER BY c.table_name, c.ordinal_position",
            None,
        )
        tables = group_tables(rows)
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


MYSQL = MysqlEngine()


class KillConnection:
    """A second connection kept open for ``KILL QUERY`` (a new MariaDB login can take 200+ ms)."""

    def __init__(self, args: Any, kwargs: Any) -> None:
        self._args, self._kwargs = args, {**kwargs, "connect_timeout": 5}
        self._conn: Any = None
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Connect in the background now, so the first cancel does not wait for a login."""
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
                    self._drop()
                    if attempt == 2:
                        raise

    def close(self) -> None:
        # Not under the lock: closing must not wait behind a kill that hangs on a dead server.
        self._drop()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass
