"""PostgreSQL (psycopg 3): read-only sessions, cancel requests, chunked-rows streaming, numeric as text.

- Pool: every session defaults to ``default_transaction_read_only`` and has
  ``standard_conforming_strings`` on (a backslash in a plain string is a
  backslash, as the guard reads it, whatever the server, database or role
  says); each
  statement runs in a READ ONLY transaction that is always rolled back, with
  ``statement_timeout`` (limit + margin) as the server-side backstop.
- Hygiene: after each statement ``DISCARD ALL`` (settings, advisory locks,
  prepared statements, temporary tables, role) and read-only again; at
  checkout the session must be read-only, hold no session-level setting but
  ours, ``standard_conforming_strings`` on, no advisory lock, no other role
  and no temporary table.
- Cancel: a cancel request for the backend (``cancel_safe``).
- Streaming: libpq's chunked-rows mode (libpq 17 and newer), so the server
  keeps sending while a chunk is encoded; one statement by the extended
  protocol, whatever the text holds. An older libpq is fetched whole.
- Bounds: a statement is described first (Parse + Describe); when it has
  text, binary or other long columns it runs wrapped in a projection whose
  filter checks their lengths on the server and raises an error naming the
  column before an oversized value or row is sent (``max_value_bytes``,
  ``max_row_bytes``: :mod:`..value_limits`). ``temp_file_limit`` is set per
  statement where the login may set it (superuser, or ``GRANT SET ON
  PARAMETER``); ``assay db doctor`` advises ``ALTER ROLE`` otherwise.
- Types: ``numeric`` columns may be read as the server's text (ASCII bytes,
  C loader) instead of ``Decimal`` objects; when psycopg's stock loaders read
  every column the stream promises each column's value kind, which spares
  the evidence encoder its per-column type passes.
"""

from __future__ import annotations

import re
import select
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from assay.kernel.database_engine import CatalogFetch, StatementDeadline

from ..schema import ForeignKey, TableInfo
from ..value_limits import bounds_filter, from_engine
from .base import (
    EngineLimits,
    Pool,
    SqlEngine,
    StreamColumn,
    Streamed,
    apply_comments,
    group_tables,
    server_pool,
)

SYSTEM_SCHEMAS = "('pg_catalog', 'information_schema', 'pg_toast')"
NUMERIC = 1700
# Scalar types whose loaders never consult the numeric loader (arrays, ranges, records and
# composites of numeric do: a result holding any other type is fetched as usual).
PLAIN_TYPES = frozenset(
    {
        16,
        17,
        18,
        19,
        20,
        21,
        23,
        25,
        26,
        114,
        700,
        701,
        1042,
        1043,
        1082,
        1083,
        1114,
        1184,
        1186,
        1266,
        NUMERIC,
        2950,
        3802,
    }
)
# The kinds psycopg's own text loaders produce, by type oid: bool, int2/4/8 and oid,
# text/varchar/bpchar/name (str unless the connection is SQL_ASCII), date, timestamp.
STOCK_KINDS = {
    16: ("BoolLoader", "bool"),
    20: ("IntLoader", "int"),
    21: ("IntLoader", "int"),
    23: ("IntLoader", "int"),
    26: ("IntLoader", "int"),
    25: ("TextLoader", "str"),
    1043: ("TextLoader", "str"),
    1042: ("TextLoader", "str"),
    19: ("TextLoader", "str"),
    1082: ("DateLoader", "date"),
    1114: ("TimestampLoader", "naive_datetime"),
}


class NumericAsText:
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
        self.adapters.register_loader(NUMERIC, ByteaLoader)


# The session settings assay sets: read-only by default, and strings read as the guard reads them.
SESSION_SETUP = "SET default_transaction_read_only = on; SET standard_conforming_strings = on"


def _read_only_session(dbapi_conn: Any) -> None:
    dbapi_conn.read_only = True  # every transaction psycopg opens is BEGIN READ ONLY
    with dbapi_conn.cursor() as cur:
        cur.execute(SESSION_SETUP)
    dbapi_conn.commit()


@dataclass(frozen=True)
class SessionBounds:
    """A connection's bounds: the datasource's limits, and the temp_file_limit (kB) to set per statement."""

    limits: EngineLimits
    temp_file_limit_kb: int | None = None  # None: the login may not set it, or its own is lower


BOUNDS: weakref.WeakKeyDictionary[Any, SessionBounds] = weakref.WeakKeyDictionary()
TEMP_LIMIT_SQL = (
    "SELECT current_setting('server_version_num')::int, (SELECT rolsuper FROM pg_roles WHERE rolname = session_user), "
    "(SELECT reset_val::bigint FROM pg_settings WHERE name = 'temp_file_limit')"
)


def _session_bounds(dbapi_conn: Any, limits: EngineLimits) -> SessionBounds:
    """Whether this login may set temp_file_limit (PGC_SUSET) and whether ours is lower than its own."""
    wanted = limits.pg_temp_file_limit_mb * 1024
    if not wanted:
        return SessionBounds(limits)
    try:
        version, superuser, current = dbapi_conn.execute(TEMP_LIMIT_SQL).fetchone()
        allowed = bool(superuser) or (
            version >= 150000
            and bool(
                dbapi_conn.execute(
                    "SELECT has_parameter_privilege(session_user, 'temp_file_limit', 'SET')"
                ).fetchone()[0]
            )
        )
    finally:
        dbapi_conn.rollback()
    if not allowed or 0 <= current <= wanted:
        return SessionBounds(limits)
    return SessionBounds(limits, wanted)


# Settings a session may hold at the session level (source 'session'): the one we set, and those
# of the current transaction (BEGIN READ ONLY sets them).
OUR_SESSION_SETTINGS = (
    "default_transaction_read_only",
    "standard_conforming_strings",
    "transaction_read_only",
    "transaction_isolation",
    "transaction_deferrable",
)  # per transaction
# One round trip at checkout: the read-only flags, session-level settings someone else set,
# locks the session holds, its role, its temporary tables.
VERIFY_SQL = (
    "SELECT current_setting('default_transaction_read_only'), current_setting('transaction_read_only'), "
    "current_setting('standard_conforming_strings'), "
    "current_setting('transaction_isolation') = (SELECT reset_val FROM pg_settings "
    "  WHERE name = 'default_transaction_isolation'), "
    "ARRAY(SELECT name FROM pg_settings WHERE source = 'session' AND name <> ALL(%s)), "
    "(SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'), "
    "session_user = current_user, "
    "(SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema())"
)


class PostgresEngine(SqlEngine):
    name = "postgresql"
    schemes = (
        "postgresql",
        "postgres",
        "postgresql+psycopg",
        "postgresql+psycopg2",
        "postgresql+psycopg3",
    )
    dialect = "postgresql"

    def normalize_url(self, url: Any) -> Any:
        return url.set(drivername="postgresql+psycopg")

    def make_pool(
        self, url: Any, *, pool_size: int, pool_timeout_s: float, limits: EngineLimits | None = None
    ) -> Pool:
        limits = limits or EngineLimits()

        def setup(dbapi_conn: Any) -> None:
            _read_only_session(dbapi_conn)
            BOUNDS[dbapi_conn] = _session_bounds(dbapi_conn, limits)

        connections, engine = server_pool(
            url, pool_size=pool_size, pool_timeout_s=pool_timeout_s, on_connect=setup
        )
        return Pool(connections, closers=[engine.dispose], limits=limits)

    def begin(self, raw: Any, state: StatementDeadline, backstop_s: float) -> None:
        if (
            raw.info.transaction_status != 0
        ):  # pragma: no cover - pool reset normally leaves it idle
            raw.rollback()
        raw.read_only = True
        timeout = f"{int(backstop_s * 1000)}ms"
        bounds = BOUNDS.get(raw)
        with raw.cursor() as cur:
            if bounds is not None and bounds.temp_file_limit_kb:  # for this transaction only
                cur.execute(
                    "SELECT set_config('statement_timeout', %s, true), set_config('temp_file_limit', %s, true)",
                    (timeout, f"{bounds.temp_file_limit_kb}kB"),
                )
            else:
                cur.execute("SELECT set_config('statement_timeout', %s, true)", (timeout,))

    def end(self, raw: Any) -> None:
        raw.rollback()

    def reset(self, raw: Any) -> None:
        """``DISCARD ALL`` (session settings, advisory locks, prepared statements, temporary tables,
        LISTEN, the role), then read-only and standard-conforming strings again."""
        if raw.info.transaction_status != 0:
            raw.rollback()
        raw.autocommit = True  # DISCARD ALL cannot run inside a transaction block
        try:
            raw.execute("DISCARD ALL")  # psycopg forgets its own prepared statements on seeing it
            raw.execute(SESSION_SETUP)
        finally:
            raw.autocommit = False
        raw.read_only = True

    def verify(self, raw: Any) -> list[str]:
        if raw.info.transaction_status != 0:
            raw.rollback()
        try:
            default_ro, tx_ro, conforming, isolation_ok, settings, locks, same_role, temp = (
                raw.execute(VERIFY_SQL, (list(OUR_SESSION_SETTINGS),)).fetchone()
            )
        finally:
            raw.rollback()
        problems = []
        if raw.read_only is not True or default_ro != "on" or tx_ro != "on":
            problems.append(
                f"the session is not read-only (default_transaction_read_only={default_ro}, "
                f"transaction_read_only={tx_ro})"
            )
        if conforming != "on":
            problems.append(
                "standard_conforming_strings is off (a backslash would end a string the check "
                "read as going on)"
            )
        if not isolation_ok:
            problems.append("the transaction isolation differs from the server's default")
        if settings:
            problems.append(f"session-level settings were changed: {', '.join(sorted(settings))}")
        if locks:
            problems.append(f"the session holds {locks} advisory lock(s)")
        if not same_role:
            problems.append("the session's role was changed (SET ROLE / SET SESSION AUTHORIZATION)")
        if temp:
            problems.append(f"the session holds {temp} temporary relation(s)")
        return problems

    def login_report(self, raw: Any) -> Any:
        from ..privileges import postgres_login_report

        return postgres_login_report(raw)

    def session_id(self, raw: Any) -> Any:
        return raw.info.backend_pid

    def cancel(self, raw: Any, session_id: Any, pool: Pool) -> None:
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

    def stream(
        self, raw: Any, cur: Any, sql: str, *, chunk_rows: int, decimal_text: bool
    ) -> Streamed | None:
        return chunked_stream(raw, sql, chunk_rows, decimal_text, BOUNDS.get(raw))

    def fetch_decimal_text(
        self, raw: Any, cur: Any, limit: int
    ) -> tuple[list[tuple], list[int]] | None:
        # psycopg's numeric loader is Decimal(text) of the server's text output: loading that
        # text as bytes with a C loader instead skips 100,000s of Decimal objects.
        res = cur.pgresult
        if res is None or cur.rownumber not in (0, None):
            return None
        oids = [res.ftype(i) for i in range(res.nfields)]
        if NUMERIC not in oids or not set(oids) <= PLAIN_TYPES:
            return None
        if any(res.fformat(i) != 0 for i in range(res.nfields)):  # binary results: the usual path
            return None
        from psycopg.adapt import Transformer

        tx = Transformer(NumericAsText(raw))
        tx.set_pgresult(res)
        rows = tx.load_rows(0, min(res.ntuples, limit), tuple)
        return rows, [i for i, oid in enumerate(oids) if oid == NUMERIC]

    def introspect(self, fetch: CatalogFetch, schemas: list[str] | None) -> list[TableInfo]:
        where = (
            "n.nspname = ANY(%s)"
            if schemas
            else f"n.nspname NOT IN {SYSTEM_SCHEMAS} AND n.nspname NOT LIKE 'pg_%%'"
        )
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
        tables = group_tables(rows)
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
                tables[table].foreign_keys.append(
                    ForeignKey(columns=list(cols), ref_table=ref, ref_columns=list(ref_cols))
                )
        apply_comments(
            tables,
            fetch(  # COMMENT ON TABLE / COLUMN
                f"SELECT {_QUALIFIED}, a.attname, d.description FROM pg_description d "
                "JOIN pg_class c ON c.oid = d.objoid AND d.classoid = 'pg_class'::regclass "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.objsubid AND d.objsubid > 0 "
                f"WHERE {where}",
                params,
            ),
        )
        return list(tables.values())

    def schema_fingerprint(self, fetch: CatalogFetch, schemas: list[str] | None) -> str:
        """A digest of the catalog rows' versions (``xmin``): relations, columns, constraints, comments."""
        where = (
            "n.nspname = ANY(%s)"
            if schemas
            else f"n.nspname NOT IN {SYSTEM_SCHEMAS} AND n.nspname NOT LIKE 'pg_%%'"
        )
        params = (schemas,) * 4 if schemas else ()
        rels = f"pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND {where}"
        (digest,) = fetch(
            "SELECT md5(coalesce(string_agg(x, ',' ORDER BY x), '') || array_to_string(current_schemas(false), ',')) "
            "FROM ("
            f"  SELECT 'c' || c.oid || ':' || c.xmin || ':' || n.nspname || '.' || c.relname AS x FROM {rels} "
            "   WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') "
            f"  UNION ALL SELECT 'a' || a.attrelid || ':' || a.attnum || ':' || a.xmin FROM pg_attribute a "
            f"   JOIN {rels} ON c.oid = a.attrelid WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 "
            f"  UNION ALL SELECT 'k' || k.oid || ':' || k.xmin FROM pg_constraint k JOIN {rels} ON c.oid = k.conrelid "
            f"  UNION ALL SELECT 'd' || d.objoid || ':' || d.objsubid || ':' || d.xmin FROM pg_description d "
            f"   JOIN {rels} ON c.oid = d.objoid AND d.classoid = 'pg_class'::regclass"
            ") s",
            params,
        )[0]
        return f"postgresql:{digest}"


# A relation's name as the prompt shows it: bare on the search path, schema-qualified elsewhere.
_QUALIFIED = "CASE WHEN n.nspname = ANY(current_schemas(false)) THEN c.relname ELSE n.nspname || '.' || c.relname END"


POSTGRESQL = PostgresEngine()


# --- streaming: libpq chunked rows ------------------------------------------------


# Types whose text is short (never near a value bound): their lengths are not checked.
SHORT_TYPES = frozenset(
    {
        16,
        18,
        19,
        20,
        21,
        23,
        26,
        700,
        701,
        790,
        650,
        829,
        869,
        1082,
        1083,
        1114,
        1184,
        1186,
        1266,
        NUMERIC,
        2950,
    }
)
RAW_LENGTH_TYPES = frozenset(
    {25, 1042, 1043, 17}
)  # text, bpchar, varchar, bytea: octet_length reads the header
_PLAIN_QUERY = re.compile(r"\s*(?:\(\s*)*(?:select|with|values|table)\b", re.IGNORECASE)


def bounded_statement(raw: Any, sql: str, bounds: SessionBounds | None) -> tuple[str, list[str]]:
    """``sql``, wrapped so that the server refuses a value/row over the bounds before sending it; its column names.

    The statement is parsed and described first (one round trip); a parse or bind error is the statement's
    own and is raised. Unchanged when nothing is bounded or no column can hold a long value.
    """
    limits = bounds.limits if bounds is not None else None
    if limits is None or limits.max_value_bytes is None or not _PLAIN_QUERY.match(sql):
        return sql, []
    from psycopg import pq

    pgconn, encoding = raw.pgconn, raw.info.encoding
    res = pgconn.prepare(b"", sql.encode(encoding))
    if res.status == pq.ExecStatus.FATAL_ERROR:
        from psycopg import errors

        raise errors.error_from_result(res, encoding=encoding)
    desc = pgconn.describe_prepared(b"")
    names = [desc.fname(i).decode(encoding, "replace") for i in range(desc.nfields)]
    lengths = {
        i: (
            f'octet_length("c{i}")'
            if desc.ftype(i) in RAW_LENGTH_TYPES
            else f'octet_length("c{i}"::text)'
        )
        for i in range(desc.nfields)
        if desc.ftype(i) not in SHORT_TYPES
    }
    if not lengths:
        return sql, names
    body = sql.strip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    aliases = ", ".join(f'"c{i}"' for i in range(len(names)))
    columns = ", ".join(f'"c{i}" AS {_ident(n)}' for i, n in enumerate(names))
    check = bounds_filter(
        lengths, limits.max_value_bytes, limits.max_row_bytes or 2**62, "(({})::int = 0)"
    )
    # OFFSET 0 keeps the planner from pulling the query up into the filter, where each reference to a
    # computed column would compute it again (a 60 MB repeat() three times: for the value, the row, the output).
    return (
        f"SELECT {columns} FROM (SELECT * FROM (\n{body}\n) AS assay_query OFFSET 0) AS assay_rows({aliases}) "
        f"WHERE {check}"
    ), names


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def chunked_stream(
    raw: Any, sql: str, chunk_rows: int, decimal_text: bool, bounds: SessionBounds | None = None
) -> Streamed | None:
    """Send ``sql`` in chunked-rows mode; None when this libpq cannot (the caller fetches as usual)."""
    from psycopg import pq

    pgconn = raw.pgconn
    if pq.version() < 170000 or not hasattr(pgconn, "set_chunked_rows_mode"):
        return None
    encoding = raw.info.encoding
    sql, names = bounded_statement(raw, sql, bounds)
    # The extended protocol runs exactly one statement, whatever the text holds.
    pgconn.send_query_params(sql.encode(encoding), None)
    pgconn.set_chunked_rows_mode(chunk_rows)
    _flush(pgconn)
    first = _next_result(pgconn)
    try:
        _raise_if_failed(pgconn, first, encoding)
    except BaseException as exc:
        _drain(pgconn)
        refused = _refusal(exc, names, bounds)
        if refused is not None:
            raise refused from None
        raise
    if first is None or first.nfields == 0:
        _drain(pgconn)
        return Streamed(None, iter(()))
    from psycopg.adapt import Transformer

    oids = [first.ftype(i) for i in range(first.nfields)]
    as_text = decimal_text and NUMERIC in oids and set(oids) <= PLAIN_TYPES
    tx = Transformer(NumericAsText(raw) if as_text else raw)
    description = [
        StreamColumn(first.fname(i).decode(encoding, "replace"), oids[i])
        for i in range(first.nfields)
    ]
    text_columns = tuple(i for i, oid in enumerate(oids) if oid == NUMERIC) if as_text else ()
    kinds = value_kinds(tx, oids, text_columns, encoding)
    return Streamed(
        description, _batches(raw, first, tx, encoding, names, bounds), text_columns, kinds
    )


def _refusal(exc: BaseException, names: list[str], bounds: SessionBounds | None) -> Any:
    if bounds is None or not names or bounds.limits.max_value_bytes is None:
        return None
    return from_engine(exc, names, bounds.limits.max_value_bytes, bounds.limits.max_row_bytes or 0)


def value_kinds(
    tx: Any, oids: list[int], text_columns: tuple[int, ...], encoding: str
) -> tuple[str, ...] | None:
    """Each column's value kind when psycopg's stock loaders read every column, else None."""
    from psycopg import pq

    kinds = []
    for j, oid in enumerate(oids):
        if j in text_columns:
            kinds.append("decimal_text")
            continue
        loader_name, kind = STOCK_KINDS.get(oid, ("", ""))
        loader = type(tx.get_loader(oid, pq.Format.TEXT))
        if (
            not kind
            or loader.__name__ != loader_name
            or not loader.__module__.startswith("psycopg")
        ):
            return None
        if kind == "str" and encoding == "ascii":  # SQL_ASCII text comes as bytes
            return None
        kinds.append(kind)
    return tuple(kinds)


def _batches(
    raw: Any, res: Any, tx: Any, encoding: str, names: list[str], bounds: SessionBounds | None
) -> Iterator[list[tuple]]:
    pgconn = raw.pgconn
    finished = False
    try:
        while res is not None:
            try:
                _raise_if_failed(pgconn, res, encoding)
            except Exception as exc:
                refused = _refusal(exc, names, bounds)
                if refused is not None:
                    finished = True  # the statement ended with the error (drained)
                    raise refused from None
                raise
            if res.ntuples:
                tx.set_pgresult(res)
                yield tx.load_rows(0, res.ntuples, tuple)
            res = _next_result(pgconn)
        finished = True
    finally:
        if not finished:  # stopped early (row limit, capture failure, an error): end the statement
            try:
                if pgconn.transaction_status == 1:  # ACTIVE: rows are still coming
                    raw.cancel_safe(timeout=5.0)
            finally:
                _drain(pgconn)


def _flush(pgconn: Any) -> None:
    while pgconn.flush() == 1:
        select.select([], [pgconn.socket], [])


def _next_result(pgconn: Any) -> Any:
    """The next result of the running statement (None when it is complete), waiting without the GIL."""
    while True:
        pgconn.consume_input()
        if not pgconn.is_busy():
            return pgconn.get_result()
        select.select([pgconn.socket], [], [])


def _raise_if_failed(pgconn: Any, res: Any, encoding: str) -> None:
    from psycopg import errors, pq

    if res is not None and res.status == pq.ExecStatus.FATAL_ERROR:
        _drain(pgconn)
        raise errors.error_from_result(res, encoding=encoding)


def _drain(pgconn: Any) -> None:
    """Read every remaining result, so the connection is idle again (errors included)."""
    try:
        while _next_result(pgconn) is not None:
            pass
    except Exception:  # noqa: BLE001 - a broken connection is found (and dropped) by end()
        pass
