"""SQLite: a read-only file, an authorizer below the parser, a deadline in the VM.

Connections open the file with ``mode=ro`` and ``PRAGMA query_only``, and an
authorizer refuses ATTACH/DETACH, file functions and writing PRAGMAs. A
progress handler checks the deadline every 10,000 VM steps (well under a
millisecond of work), ``interrupt()`` backs it up for a cancel, and rows
stream as the statement steps (``fetchmany``). ``SQLITE_LIMIT_LENGTH`` is
lowered to ``max_value_bytes``: SQLite itself refuses to make (or read) a
longer string, blob or stored row (``string or blob too big``:
``SQL_VALUE_TOO_LARGE``), so it never reaches Python. (SQLite's ``printf``
returns NULL instead of failing.)
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any
from urllib.parse import quote

from assay.kernel.database_engine import CatalogFetch, StatementDeadline

from ..errors import SQL_VALUE_TOO_LARGE, SqlError
from ..schema import ColumnInfo, ForeignKey, TableInfo
from ..value_limits import VALUE_HINT
from .base import EngineLimits, Pool, SqlEngine, Streamed, cursor_stream, listing_digest
from .file_pool import ConnectionPool, FileURL, parse_file_url

DENY = sqlite3.SQLITE_DENY
OK = sqlite3.SQLITE_OK
READ_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "collation_list",
        "database_list",
        "query_only",
        "user_version",
        "schema_version",
        "page_count",
        "page_size",
    }
)
DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})


def authorizer(action: int, arg1: Any, arg2: Any, dbname: Any, source: Any) -> int:
    """Below the parser: no ATTACH/DETACH, no file functions, no writing PRAGMAs."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return DENY
    if action == sqlite3.SQLITE_FUNCTION and str(arg2 or "").lower() in DENIED_FUNCTIONS:
        return DENY
    if action == sqlite3.SQLITE_PRAGMA:
        name = str(arg1 or "").lower()
        if name not in READ_PRAGMAS or (
            arg2 is not None and name in {"query_only", "user_version"}
        ):
            return DENY
    return OK


class SqliteEngine(SqlEngine):
    name = "sqlite"
    schemes = ("sqlite", "sqlite+pysqlite")
    dialect = "sqlite"
    cancel_repeat_s = 0.05  # in-process: an interrupt sent between two steps is lost; sent again
    streams_rows = True
    typed_columns = False  # any row may hold any type in any column

    def parse_url(self, text: str) -> FileURL | None:
        """``sqlite:///PATH`` without SQLAlchemy (see :mod:`.file_pool`); ``None``: let SQLAlchemy parse it."""
        return parse_file_url(text, self.schemes)

    def make_pool(
        self, url: Any, *, pool_size: int, pool_timeout_s: float, limits: EngineLimits | None = None
    ) -> Pool:
        limits = limits or EngineLimits()
        path = url.database or ""
        if not path or path == ":memory:":
            raise ValueError(
                "SQLite datasources must name a database file (read-only in-memory databases are empty)"
            )

        def creator() -> sqlite3.Connection:
            conn = sqlite3.connect(
                f"file:{quote(path)}?mode=ro",
                uri=True,
                check_same_thread=False,
                isolation_level=None,
            )
            conn.execute("PRAGMA query_only = 1")
            conn.set_authorizer(authorizer)
            if (
                limits.max_value_bytes is not None
            ):  # SQLite refuses longer values itself (never made)
                length = conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
                conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, min(length, limits.max_value_bytes))
            return conn

        return Pool(
            ConnectionPool(creator, pool_size=pool_size, timeout_s=pool_timeout_s), limits=limits
        )

    def begin(self, raw: sqlite3.Connection, state: StatementDeadline, backstop_s: float) -> None:
        deadline = state.deadline or float("inf")
        monotonic = time.monotonic

        def check() -> int:
            return 1 if monotonic() >= deadline or state.cancel_requested() else 0

        raw.set_progress_handler(check, 10_000)  # well under a millisecond of work between checks

    def end(self, raw: sqlite3.Connection) -> None:
        raw.set_progress_handler(None, 0)

    def reset(self, raw: sqlite3.Connection) -> None:
        if raw.in_transaction:  # a SAVEPOINT the statement opened
            raw.rollback()

    def verify(self, raw: sqlite3.Connection) -> list[str]:
        (query_only,) = raw.execute("PRAGMA query_only").fetchone()
        problems = [] if query_only == 1 else ["PRAGMA query_only is off"]
        if raw.in_transaction:
            problems.append("a transaction was left open")
        return problems

    def value_length_bound(self, raw: sqlite3.Connection) -> int:
        # SQLITE_LIMIT_LENGTH (1,000,000,000 bytes by default, under the default 1 GiB artifact cap) bounds
        # every string or blob SQLite produces; a str of n characters is at least n bytes.
        return raw.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)

    def cancel(self, raw: sqlite3.Connection, session_id: Any, pool: Pool) -> None:
        raw.interrupt()  # the progress handler also stops it at the deadline

    def is_timeout_error(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and "interrupted" in str(exc)

    def stream(
        self, raw: Any, cur: Any, sql: str, *, chunk_rows: int, decimal_text: bool
    ) -> Streamed:
        limit = raw.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
        try:
            streamed = cursor_stream(cur, sql, chunk_rows)
        except sqlite3.DataError as exc:
            raise _too_big(exc, limit) from None
        streamed.batches = _refusing(streamed.batches, limit)
        return streamed

    def introspect(self, fetch: CatalogFetch, schemas: list[str] | None) -> list[TableInfo]:
        """Three catalog queries whatever the number of tables (``pragma_table_info`` joined to the listing)."""
        objects = fetch(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name",
            (),
        )
        columns: dict[str, list[ColumnInfo]] = {name: [] for name, _ in objects}
        for table, c, t, nn, pk in fetch(
            'SELECT m.name, p.name, p.type, p."notnull", p.pk FROM sqlite_master m, pragma_table_info(m.name) p '
            "WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid",
            (),
        ):
            columns[table].append(
                ColumnInfo(name=c, type=t or "", nullable=not nn, primary_key=bool(pk))
            )
        fks: dict[str, dict[int, ForeignKey]] = {}
        for table, fk_id, ref, col_from, col_to in fetch(
            'SELECT m.name, f.id, f."table", f."from", f."to" FROM sqlite_master m, pragma_foreign_key_list(m.name) f '
            "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, f.id, f.seq",
            (),
        ):
            fk = fks.setdefault(table, {}).setdefault(
                fk_id, ForeignKey(columns=[], ref_table=ref, ref_columns=[])
            )
            fk.columns.append(col_from)
            if col_to:
                fk.ref_columns.append(col_to)
        tables = []
        for name, kind in objects:
            estimate = None
            if kind == "table" and len(objects) <= 200:
                quoted = '"' + name.replace('"', '""') + '"'
                estimate = fetch(f"SELECT count(*) FROM {quoted}", ())[0][0]
            tables.append(
                TableInfo(
                    name=name,
                    kind=kind,
                    row_estimate=estimate,
                    columns=columns.get(name, []),
                    foreign_keys=list(fks.get(name, {}).values()),
                )
            )
        return tables

    def schema_fingerprint(self, fetch: CatalogFetch, schemas: list[str] | None) -> str:
        """``schema_version`` (bumped by every schema change) and a digest of ``sqlite_master``."""
        version = fetch("SELECT schema_version FROM pragma_schema_version()", ())[0][0]
        listing = fetch(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name", ()
        )
        return f"sqlite:{version}:{listing_digest(listing)}"


SQLITE = SqliteEngine()


def _refusing(batches: Any, limit: int) -> Any:
    try:
        yield from batches
    except sqlite3.DataError as exc:
        raise _too_big(exc, limit) from None


def _too_big(exc: sqlite3.DataError, limit: int) -> BaseException:
    if getattr(exc, "sqlite_errorname", "") != "SQLITE_TOOBIG":
        return exc
    return SqlError(
        SQL_VALUE_TOO_LARGE,
        f"SQLite refused to make or read a value (or stored row) longer than its length limit of {limit:,} bytes "
        "(max_value_bytes): it was never made, and cannot be kept as evidence, so the query was stopped",
        VALUE_HINT,
        details={"row": None, "column": None, "max_bytes": limit},
    )
