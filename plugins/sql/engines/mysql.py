"""MySQL and MariaDB (pymysql): read-only sessions, ``KILL QUERY`` from a kept-open side connection.

- Pool: every session's ``sql_mode`` is the server's without the modes that
  change how text is read (:data:`LEXICAL_MODES`: ``ANSI_QUOTES``,
  ``NO_BACKSLASH_ESCAPES``, ``PIPES_AS_CONCAT``, ``IGNORE_SPACE``,
  ``HIGH_NOT_PRECEDENCE``, ``ANSI`` and the ``ORACLE``/``MSSQL``/``DB2``/
  ``POSTGRESQL``/``MAXDB`` parsers), so the server reads strings, quotes and
  operators as the guard does; every session is
  ``SET SESSION TRANSACTION READ ONLY`` (DDL commits
  implicitly and would escape a READ ONLY transaction; a read-only session
  refuses it); each statement runs in ``START TRANSACTION READ ONLY``, rolled
  back, with ``max_statement_time`` (MariaDB) or ``max_execution_time``
  (MySQL) as the server-side backstop.
- Cancel: ``KILL QUERY <thread id>`` from a second connection, opened when
  the pool is made and kept (a new MariaDB login can take 200+ ms).
- Hygiene: after each statement the session is reset (``COM_RESET_CONNECTION``:
  user variables, ``GET_LOCK`` locks, temporary tables, prepared statements,
  session variables such as ``sql_mode`` back to the server's), then set up
  again as pymysql sets up a new connection, and read-only. At checkout the
  session must be read-only, not autocommit, its ``sql_mode`` the server's
  less :data:`LEXICAL_MODES` and its isolation the server's.
- Streaming: an unbuffered cursor (``SSCursor``) hands the rows over as they
  arrive; a statement left early is stopped with ``KILL QUERY`` and drained.
- Types: the protocol's field type names.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from assay.kernel.database_engine import CatalogFetch, StatementDeadline
from assay.kernel.log import get_logger

from ..errors import SQL_VALUE_TOO_LARGE, SqlError
from ..schema import ForeignKey, TableInfo
from ..value_limits import VALUE_HINT
from .base import (
    EngineLimits,
    Pool,
    SqlEngine,
    Streamed,
    apply_comments,
    group_tables,
    listing_digest,
    server_pool,
)

log = get_logger("assay.sql")
TIMEOUT_ERRORS = (
    1969,
    3024,
    1317,
)  # MariaDB max_statement_time, MySQL max_execution_time, interrupted
# Each pooled connection's pool's KILL QUERY connection (a streamed statement left early is stopped with it).
KILL_CONNECTIONS: weakref.WeakKeyDictionary[Any, KillConnection] = weakref.WeakKeyDictionary()
COM_RESET_CONNECTION = 0x1F  # MariaDB 10.2.4+, MySQL 5.7.3+ (pymysql names no constant for it)


# sql_mode flags that change how the server reads the text (quotes, backslashes, ||, spaces before '(',
# NOT's precedence, another server's grammar): never set in assay's sessions.
LEXICAL_MODES = frozenset(
    {
        "ANSI",
        "ANSI_QUOTES",
        "NO_BACKSLASH_ESCAPES",
        "PIPES_AS_CONCAT",
        "IGNORE_SPACE",
        "HIGH_NOT_PRECEDENCE",
        "ORACLE",
        "MSSQL",
        "DB2",
        "POSTGRESQL",
        "MAXDB",
    }
)


def pinned_sql_mode(mode: str) -> str:
    """``mode`` (a server's sql_mode) without :data:`LEXICAL_MODES`."""
    return ",".join(m for m in (mode or "").split(",") if m and m.upper() not in LEXICAL_MODES)


def _read_only_session(dbapi_conn: Any, *, reset: bool = False) -> None:
    """Read-only, and the sql_mode the guard reads with. The server's mode is read once per connection; after
    a reset (the session has the server's mode again) it is set only when it differs from the server's."""
    with dbapi_conn.cursor() as cur:
        modes = getattr(dbapi_conn, "assay_sql_modes", None)
        if modes is None:
            cur.execute("SELECT @@GLOBAL.sql_mode")
            server = cur.fetchone()[0]
            modes = dbapi_conn.assay_sql_modes = (server, pinned_sql_mode(server))
        if not reset or modes[0] != modes[1]:
            cur.execute("SET SESSION sql_mode = %s", (modes[1],))
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

    def make_pool(
        self, url: Any, *, pool_size: int, pool_timeout_s: float, limits: EngineLimits | None = None
    ) -> Pool:
        # Values are bounded by the server's max_allowed_packet, and checked as they arrive (value_limits).
        kill: list[KillConnection] = []

        def setup(dbapi_conn: Any) -> None:
            _read_only_session(dbapi_conn)
            # A streamed statement left early is stopped from the side connection (see stream()).
            if kill:
                KILL_CONNECTIONS[dbapi_conn] = kill[0]

        connections, engine = server_pool(
            url, pool_size=pool_size, pool_timeout_s=pool_timeout_s, on_connect=setup
        )
        args, kwargs = engine.dialect.create_connect_args(engine.url)
        control = KillConnection(args, kwargs)
        kill.append(control)
        control.warm()
        return Pool(
            connections,
            control=control,
            closers=[control.close, engine.dispose],
            limits=limits or EngineLimits(),
        )

    def begin(self, raw: Any, state: StatementDeadline, backstop_s: float) -> None:
        with raw.cursor() as cur:
            if is_mariadb(raw):
                cur.execute("SET SESSION max_statement_time = %s", (round(backstop_s, 3),))
            else:
                cur.execute("SET SESSION max_execution_time = %s", (int(backstop_s * 1000),))
            cur.execute("START TRANSACTION READ ONLY")

    def end(self, raw: Any) -> None:
        raw.rollback()

    def reset(self, raw: Any) -> None:
        """``COM_RESET_CONNECTION``, then the set-up pymysql gives a new connection, then read-only again with
        the pinned ``sql_mode`` (it replaces any ``sql_mode`` the URL asked for)."""
        raw._execute_command(COM_RESET_CONNECTION, b"")
        raw._read_ok_packet()
        # The reset put every session variable back to the server's global value: the
        # connection's character set and autocommit mode included.
        raw.set_character_set(raw.charset, raw.collation)
        with raw.cursor() as cur:
            if raw.init_command is not None:
                cur.execute(raw.init_command)
        if raw.autocommit_mode is not None:
            raw.autocommit(raw.autocommit_mode)
        _read_only_session(raw, reset=True)

    def verify(self, raw: Any) -> list[str]:
        names = (
            ("tx_read_only", "tx_isolation")
            if is_mariadb(raw)
            else ("transaction_read_only", "transaction_isolation")
        )
        ro, iso = names
        with raw.cursor() as cur:
            cur.execute(
                f"SELECT @@session.{ro}, @@session.autocommit, @@session.sql_mode, @@global.sql_mode, "
                f"@@session.{iso}, @@global.{iso}"
            )
            read_only, autocommit, sql_mode, global_mode, isolation, global_isolation = (
                cur.fetchone()
            )
        raw.rollback()
        problems = []
        if int(read_only) != 1:
            problems.append(f"the session is not read-only ({ro}={read_only})")
        if int(autocommit) != 0:
            problems.append("the session is in autocommit mode")
        if sql_mode != pinned_sql_mode(global_mode):
            problems.append(
                f"sql_mode is not the one assay sets ({sql_mode!r}; the server's is {global_mode!r}, "
                f"less {', '.join(sorted(LEXICAL_MODES))})"
            )
        if isolation != global_isolation:
            problems.append(
                f"the isolation level was changed ({isolation}, the server's is {global_isolation})"
            )
        return problems

    def login_report(self, raw: Any) -> Any:
        from ..privileges import mysql_login_report

        return mysql_login_report(raw)

    def stream(
        self, raw: Any, cur: Any, sql: str, *, chunk_rows: int, decimal_text: bool
    ) -> Streamed:
        """An unbuffered cursor: rows are read from the socket as they are handed over."""
        import pymysql.cursors

        ss = raw.cursor(pymysql.cursors.SSCursor)
        try:
            ss.execute(sql)
        except BaseException:
            _close_unbuffered(raw, ss, stop=False)
            raise
        description = ss.description
        if not description:
            _close_unbuffered(raw, ss, stop=False)
            return Streamed(None, iter(()))
        return Streamed(list(description), _unbuffered_batches(raw, ss, chunk_rows))

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
        apply_comments(
            tables,
            fetch(
                "SELECT table_name, '', table_comment FROM information_schema.tables WHERE table_schema = DATABASE() "
                "AND table_type <> 'VIEW' AND table_comment <> '' UNION ALL "
                "SELECT table_name, column_name, column_comment FROM information_schema.columns "
                "WHERE table_schema = DATABASE() AND column_comment <> ''",
                None,
            ),
        )
        return list(tables.values())

    def schema_fingerprint(self, fetch: CatalogFetch, schemas: list[str] | None) -> str:
        """A digest of the ``information_schema`` listing (MariaDB keeps no catalog change counter)."""
        columns = fetch(
            "SELECT table_name, column_name, column_type, is_nullable, column_key, column_comment "
            "FROM information_schema.columns WHERE table_schema = DATABASE() ORDER BY table_name, ordinal_position",
            None,
        )
        tables = fetch(
            "SELECT table_name, table_type, table_comment, create_time FROM information_schema.tables "
            "WHERE table_schema = DATABASE() ORDER BY table_name",
            None,
        )
        keys = fetch(
            "SELECT table_name, constraint_name, column_name, referenced_table_name, referenced_column_name "
            "FROM information_schema.key_column_usage WHERE table_schema = DATABASE() "
            "ORDER BY table_name, constraint_name, ordinal_position",
            None,
        )
        return "mysql:" + listing_digest(columns, tables, keys)


MYSQL = MysqlEngine()


def _unbuffered_batches(raw: Any, cur: Any, chunk_rows: int) -> Any:
    finished = False
    try:
        while True:
            batch = cur.fetchmany(chunk_rows)
            if not batch:
                finished = True
                break
            yield batch
    finally:
        _close_unbuffered(raw, cur, stop=not finished)
    _refuse_cut_values(raw, cur)


CUT_WARNINGS = (
    1301,
)  # "Result of repeat() was larger than max_allowed_packet (N) - truncated": a NULL instead


def _refuse_cut_values(raw: Any, cur: Any) -> None:
    """The server replaced a value longer than max_allowed_packet with NULL (a warning, not an error): the
    result is not what the query asked for, so it is refused rather than kept with the NULL."""
    result = getattr(cur, "_result", None)
    if not getattr(result, "warning_count", 0):
        return
    cut = [w for w in raw.show_warnings() if len(w) > 2 and w[1] in CUT_WARNINGS]
    if cut:
        raise SqlError(
            SQL_VALUE_TOO_LARGE,
            f"the server returned NULL for a value longer than its max_allowed_packet ({cut[0][2]}); the result "
            "is not what the query asked for, so it was not kept",
            VALUE_HINT,
            details={"row": None, "column": None, "engine_warning": str(cut[0][2])},
        )


def _close_unbuffered(raw: Any, cur: Any, *, stop: bool) -> None:
    """Close an unbuffered cursor; ``stop``: the rows were left early, so stop the statement first.

    Closing reads whatever the server still sends; ``KILL QUERY`` from the side
    connection makes that short. A connection that cannot be drained is found
    (and dropped) by ``end``/``reset``.
    """
    if stop:
        kill = KILL_CONNECTIONS.get(raw)
        if kill is not None:
            try:
                kill.kill_query(int(raw.thread_id()))
            except Exception as exc:  # noqa: BLE001 - the drain below still ends the statement
                log.debug("sql_stream_kill_failed", error=type(exc).__name__)
    try:
        cur.close()
    except Exception as exc:  # noqa: BLE001 - an interrupted statement ends with an error packet
        log.debug("sql_stream_close_error", error=type(exc).__name__)


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
