"""Streaming a statement's rows, batch by batch, as the engine produces them.

``sql_query`` captures rows as they arrive (on the worker thread that runs
the statement), so the evidence is encoded while the server is still
producing and sending the rest. Two engines stream natively:

* PostgreSQL, with libpq's chunked-rows mode (libpq 17 and newer): the
  server keeps sending while a chunk is encoded; numeric columns come as the
  server's text (see ``_NumericAsText`` in :mod:`.engines`), and when
  psycopg's stock loaders read every column the stream promises each
  column's value kind, which spares the encoder its per-column type passes.
* SQLite, which steps the statement as rows are fetched (``fetchmany``).
* DuckDB, with ``fetchmany``; DECIMAL columns are cast to VARCHAR by a
  projection over the statement (only for a plain query with unique column
  names), which skips building ``Decimal`` objects the canonical form would
  only turn back into text. Column types are reported as the query's own.

Every other engine (or an older libpq) is fetched as before and handed over
as one batch.
"""

from __future__ import annotations

import re
import select
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple


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


# --- PostgreSQL ---------------------------------------------------------------


def postgres_stream(raw: Any, sql: str, chunk_rows: int, decimal_text: bool) -> Streamed | None:
    """Send ``sql`` in chunked-rows mode; None when this libpq cannot (the caller fetches as usual)."""
    from psycopg import pq

    pgconn = raw.pgconn
    if pq.version() < 170000 or not hasattr(pgconn, "set_chunked_rows_mode"):
        return None
    encoding = raw.info.encoding
    # The extended protocol runs exactly one statement, whatever the text holds.
    pgconn.send_query_params(sql.encode(encoding), None)
    pgconn.set_chunked_rows_mode(chunk_rows)
    _flush(pgconn)
    first = _next_result(pgconn)
    try:
        _raise_if_failed(pgconn, first, encoding)
    except BaseException:
        _drain(pgconn)
        raise
    if first is None or first.nfields == 0:
        _drain(pgconn)
        return Streamed(None, iter(()))
    from psycopg.adapt import Transformer

    from .engines import _PG_NUMERIC, _PG_PLAIN_TYPES, _NumericAsText

    oids = [first.ftype(i) for i in range(first.nfields)]
    as_text = decimal_text and _PG_NUMERIC in oids and set(oids) <= _PG_PLAIN_TYPES
    tx = Transformer(_NumericAsText(raw) if as_text else raw)
    description = [StreamColumn(first.fname(i).decode(encoding, "replace"), oids[i]) for i in range(first.nfields)]
    text_columns = tuple(i for i, oid in enumerate(oids) if oid == _PG_NUMERIC) if as_text else ()
    kinds = _postgres_kinds(tx, oids, text_columns, encoding)
    return Streamed(description, _postgres_batches(raw, first, tx, encoding), text_columns, kinds)


# The kinds psycopg's own text loaders produce, by type oid: bool, int2/4/8 and oid,
# text/varchar/bpchar/name (str unless the connection is SQL_ASCII), date, timestamp.
_PG_KINDS = {16: ("BoolLoader", "bool"), 20: ("IntLoader", "int"), 21: ("IntLoader", "int"),
             23: ("IntLoader", "int"), 26: ("IntLoader", "int"), 25: ("TextLoader", "str"),
             1043: ("TextLoader", "str"), 1042: ("TextLoader", "str"), 19: ("TextLoader", "str"),
             1082: ("DateLoader", "date"), 1114: ("TimestampLoader", "naive_datetime")}


def _postgres_kinds(tx: Any, oids: list[int], text_columns: tuple[int, ...], encoding: str) -> tuple[str, ...] | None:
    """Each column's value kind when psycopg's stock loaders read every column, else None."""
    from psycopg import pq

    kinds = []
    for j, oid in enumerate(oids):
        if j in text_columns:
            kinds.append("decimal_text")
            continue
        loader_name, kind = _PG_KINDS.get(oid, ("", ""))
        loader = type(tx.get_loader(oid, pq.Format.TEXT))
        if not kind or loader.__name__ != loader_name or not loader.__module__.startswith("psycopg"):
            return None
        if kind == "str" and encoding == "ascii":  # SQL_ASCII text comes as bytes
            return None
        kinds.append(kind)
    return tuple(kinds)


def _postgres_batches(raw: Any, res: Any, tx: Any, encoding: str) -> Iterator[list[tuple]]:
    pgconn = raw.pgconn
    finished = False
    try:
        while res is not None:
            _raise_if_failed(pgconn, res, encoding)
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


# --- DB-API cursors that fetch lazily (SQLite, DuckDB) ----------------------------


def cursor_stream(cur: Any, statement: str, chunk_rows: int, decimal_text: tuple[int, ...] = (),
                  types: list[Any] | None = None) -> Streamed:
    """Execute ``statement`` on ``cur`` and fetch it ``chunk_rows`` at a time.

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


# --- DuckDB -------------------------------------------------------------------

_QUERY_START = re.compile(r"\s*(?:\(\s*)*(?:select|with|from)\b", re.IGNORECASE)


def duckdb_stream(raw: Any, sql: str, chunk_rows: int, decimal_text: bool) -> Streamed:
    """Run ``sql`` on DuckDB and fetch it in chunks, DECIMAL columns as text when that is safe."""
    statement, text_columns, types = sql, (), None
    if decimal_text:
        statement, text_columns, types = _decimal_projection(raw, sql)
    return cursor_stream(raw, statement, chunk_rows, text_columns, types)


def _decimal_projection(raw: Any, sql: str) -> tuple[str, tuple[int, ...], list[Any] | None]:
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
    decimals = [i for i, t in enumerate(types) if str(t).upper().startswith("DECIMAL")]
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
