"""sql_query captures rows while the statement streams them (PostgreSQL chunked rows, DuckDB fetchmany,
MariaDB an unbuffered cursor).

Against the real engines: the rows and their count are whole, only the preview
rows are kept in memory, and a statement stopped mid-stream (row limit, time
limit) is really stopped, leaves no succeeded artifact and no staged file, and
hands back a usable connection. DuckDB's DECIMAL-as-text projection keeps the
order and the types and steps aside where it cannot apply.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import time
from pathlib import Path

import duckdb
import psycopg
import pytest
from psycopg.adapt import Loader, Transformer

from assay import Kernel
from assay.kernel.evidence.canonical import dumps_bytes, row_line
from assay.plugins.sql import open_datasource
from assay.plugins.sql.engines.duckdb import decimal_projection
from assay.plugins.sql.engines.postgres import chunked_stream, value_kinds
from assay.plugins.sql.errors import SQL_QUERY_TIMEOUT, SQL_RESULT_TOO_LARGE, SqlError
from tests.conftest import require
from tests.sql.conftest import PG_BASE, new_db, pg_admin, pg_available

STREAMING = ["postgresql", "duckdb", "mariadb"]
# Rows that keep coming for minutes (an SRF in the select list streams; one in FROM is materialised first).
ENDLESS = {
    "postgresql": "SELECT generate_series(1, 2000000000) AS n, 'row' AS label",
    "duckdb": "SELECT range AS n, 'row' AS label FROM range(2000000000)",
    "mariadb": "SELECT seq AS n, 'row' AS label FROM seq_1_to_2000000000",
}


def _pg_running(pid) -> bool:
    with pg_admin() as conn:
        return (
            conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND state = 'active'", (pid,)
            ).fetchone()[0]
            > 0
        )


def _staged_files() -> list[Path]:
    """Half-written captures left in the store's staging directory (which the capture created)."""
    staging = [
        p for p in Path(os.environ["ASSAY_HOME"]).rglob("*") if p.is_dir() and p.name == "tmp"
    ]
    assert staging, "no capture was started"
    return [p for d in staging for p in d.glob("*.partial")]


@pytest.mark.parametrize("engine", STREAMING)
def test_streamed_rows_are_all_counted_and_only_the_preview_rows_are_kept(engine, request):
    db = new_db(engine, request)
    try:
        attempt = db.new_attempt(30)
        attempt.keep_rows = 7
        seen = []
        attempt.consume = lambda stream: seen.append(sum(1 for _ in stream.rows)) or "captured"
        result = db.query("SELECT order_id, total FROM orders ORDER BY order_id", attempt=attempt)
        assert result.consumed == "captured"
        assert seen == [2000] and result.row_count == 2000
        assert [r[0] for r in result.rows] == [1, 2, 3, 4, 5, 6, 7]  # the head only, in order
        assert result.elapsed_ms > 0
    finally:
        db.close()


@pytest.mark.parametrize("engine", STREAMING)
def test_row_limit_stops_a_streaming_statement_and_keeps_nothing(engine, request, kernel):
    db = kernel.attach(new_db(engine, request, max_result_rows=20_000))
    run = kernel.new_run()
    result = kernel.call_tool("sql_query", {"sql": ENDLESS[engine]}, run=run)
    assert result.error_code == SQL_RESULT_TOO_LARGE, result.message
    assert [r.status for r in run.artifacts.records() if r.kind == "sql"] == ["failed"]
    assert _staged_files() == []
    assert kernel.call_tool(
        "sql_query", {"sql": "SELECT count(*) AS n FROM stores"}, run=run
    ).success
    if engine == "postgresql":  # nothing of the big query is left running
        with pg_admin() as conn:
            assert (
                conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE query ILIKE %s AND state = 'active'",
                    ("%generate_series(1, 2000000000)%",),
                ).fetchone()[0]
                == 0
            )
    run.close()
    db.close()


@pytest.mark.parametrize("engine", STREAMING)
def test_time_limit_while_rows_stream_is_a_timeout_and_stops_the_statement(engine, request):
    db = new_db(engine, request, max_result_rows=10**10, cancel_grace_s=3.0)
    try:
        attempt = db.new_attempt(1.0)
        got = []
        attempt.consume = lambda stream: got.append(sum(1 for _ in stream.rows))
        started = time.monotonic()
        with pytest.raises(SqlError) as info:
            db.query(ENDLESS[engine], attempt=attempt)
        assert info.value.code == SQL_QUERY_TIMEOUT
        assert info.value.details["stopped"] is True and "confirmed stopped" in info.value.message
        assert time.monotonic() - started < 4.0
        assert got == []  # the consumer never saw an end of the rows
        if engine == "postgresql":
            assert not _pg_running(attempt.session_id)
        assert (
            db.query("SELECT count(*) FROM stores").rows[0][0] > 0
        )  # the connection came back usable
    finally:
        db.close()


def test_timeout_through_the_tool_mid_stream_leaves_a_failed_attempt_only(request, kernel):
    kernel.attach(new_db("postgresql", request, max_result_rows=10**10))
    run = kernel.new_run()
    result = kernel.call_tool(
        "sql_query", {"sql": ENDLESS["postgresql"], "timeout_s": 1.0}, run=run
    )
    assert result.error_code == SQL_QUERY_TIMEOUT
    assert [r.status for r in run.artifacts.records() if r.kind == "sql"] == ["failed"]
    assert _staged_files() == []
    run.close()


@pytest.mark.parametrize("engine", STREAMING)
def test_capture_cut_at_its_byte_limit_still_counts_every_row(engine, request, monkeypatch):
    monkeypatch.setenv("ASSAY_ARTIFACT_MAX_BYTES", "20000")
    kernel = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False)
    kernel.start()
    try:
        kernel.attach(new_db(engine, request))
        run = kernel.new_run()
        result = kernel.call_tool(
            "sql_query", {"sql": "SELECT order_id, total FROM orders ORDER BY order_id"}, run=run
        )
        assert result.success, result.message
        assert result.data["row_count"] == 2000
        record = run.artifacts.catalog.get(result.data["artifact_id"])
        assert record.complete is False and 0 < record.row_count < 2000
        assert "ASSAY_ARTIFACT_MAX_BYTES" in record.provenance["incomplete_reason"]
        run.close()
    finally:
        kernel.close()


# --- DuckDB: DECIMAL columns as text ------------------------------------------------------------


@pytest.fixture
def decimal_duckdb(tmp_path) -> Path:
    path = tmp_path / "dec.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute(
            "CREATE TABLE t AS SELECT i AS id, (i * 1.25)::DECIMAL(12,2) AS amount, "
            "md5(i::varchar) AS s FROM range(1, 30001) r(i)"
        )
    return path


def test_duckdb_decimal_projection_keeps_the_order_and_reports_the_query_types(
    kernel, decimal_duckdb
):
    sql = "SELECT s, amount, id FROM t ORDER BY s DESC"
    with duckdb.connect(str(decimal_duckdb), read_only=True) as conn:
        expected = conn.execute(sql).fetchall()  # Decimal objects, in the query's order
    kernel.attach(open_datasource("dk", f"duckdb:///{decimal_duckdb}", kernel=kernel))
    run = kernel.new_run()
    result = kernel.call_tool("sql_query", {"sql": sql}, run=run)
    assert result.success, result.message
    assert result.data["column_types"] == ["VARCHAR", "DECIMAL(12,2)", "BIGINT"]
    reference = (
        dumps_bytes({"columns": ["s", "amount", "id"]}) + b"\n" + b"".join(map(row_line, expected))
    )
    record = run.artifacts.catalog.get(result.data["artifact_id"])
    assert (
        record.sha256 == hashlib.sha256(reference).hexdigest()
    )  # same rows, same order, same bytes
    run.close()


def test_duckdb_projection_takes_duplicate_column_names_by_position(decimal_duckdb):
    with duckdb.connect(str(decimal_duckdb), read_only=True) as conn:
        statement, columns, _ = decimal_projection(
            conn, "SELECT amount, amount, id FROM t ORDER BY id LIMIT 1"
        )
        assert columns == (0, 1) and conn.execute(statement).fetchall() == [("1.25", "1.25", 1)]
        assert [d[0] for d in conn.execute(statement).description] == ["amount", "amount", "id"]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id FROM t",  # no DECIMAL column
        "DESCRIBE t",  # not a plain query: never bound here
        "SELECT amount FROM t; -- the end",  # the projection would not parse around it
    ],
)
def test_duckdb_decimal_projection_steps_aside_where_it_cannot_apply(decimal_duckdb, sql):
    with duckdb.connect(str(decimal_duckdb), read_only=True) as conn:
        assert decimal_projection(conn, sql) == (sql, (), None)


def test_duckdb_decimal_projection_wraps_a_query_with_a_trailing_semicolon(decimal_duckdb):
    with duckdb.connect(str(decimal_duckdb), read_only=True) as conn:
        statement, columns, types = decimal_projection(
            conn, "SELECT id, amount FROM t ORDER BY id DESC;\n"
        )
        assert columns == (1,) and [str(t) for t in types] == ["BIGINT", "DECIMAL(12,2)"]
        assert conn.execute(statement).fetchmany(2) == [(30000, "37500.00"), (29999, "37498.75")]


PROMISED = (
    "SELECT 1::int AS a, 2::bigint AS b, 'x'::text AS c, 'y'::varchar AS d, 1.50::numeric AS e, "
    "date '2024-01-01' AS f, timestamp '2024-01-01 10:00' AS g, true AS h"
)


def _pg_stream(raw, sql):
    streamed = chunked_stream(raw, sql, 100, True)
    assert streamed is not None, "this libpq cannot stream chunked rows"
    rows = [r for batch in streamed.batches for r in batch]
    return streamed, rows


def test_postgresql_stream_promises_the_kinds_of_its_stock_loaders():
    require(pg_available(), "PostgreSQL at 127.0.0.1:5432")
    with psycopg.connect(PG_BASE) as raw:
        streamed, rows = _pg_stream(raw, PROMISED)
        assert streamed.value_kinds == (
            "int",
            "int",
            "str",
            "str",
            "decimal_text",
            "date",
            "naive_datetime",
            "bool",
        )
        assert rows == [
            (1, 2, "x", "y", b"1.50", dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 10), True)
        ]
        for unpromised in ("SELECT 1::int, now()", "SELECT '{}'::json", "SELECT 1.5::float8"):
            assert _pg_stream(raw, unpromised)[0].value_kinds is None, unpromised
        assert value_kinds(Transformer(raw), [25], (), "utf-8") == ("str",)
        assert (
            value_kinds(Transformer(raw), [25], (), "ascii") is None
        )  # SQL_ASCII text comes as bytes


def test_postgresql_stream_promises_nothing_when_a_loader_is_not_the_stock_one():
    class Int4AsText(Loader):
        def load(self, data):
            return bytes(data).decode()

    require(pg_available(), "PostgreSQL at 127.0.0.1:5432")
    with psycopg.connect(PG_BASE) as raw:
        raw.adapters.register_loader("int4", Int4AsText)
        streamed, rows = _pg_stream(raw, PROMISED)
        assert streamed.value_kinds is None and rows[0][0] == "1"
