"""sql_query's numeric fast path stores and previews exactly what the Decimal path does.

PostgreSQL numeric columns are fetched as the server's text (as bytes, C
loader) instead of ``Decimal`` objects and written canonically from that text. The
same result captured with and without the fast path must give the same
SHA-256, the same stored preview and the same model-facing text, whether the
rows stream (libpq chunked rows) or are fetched whole; DuckDB (DECIMAL columns
cast to text by a projection) must give the bytes of the value-by-value
reference encoder.
"""

from __future__ import annotations

import hashlib
import re

import duckdb
import pytest

from assay import Kernel
from assay.kernel.evidence.canonical import dumps_bytes, row_line
from assay.plugins.sql import open_datasource
from assay.plugins.sql.engines import postgres
from tests.conftest import require
from tests.sql.conftest import PG_BASE, pg_admin, pg_available, unique

NUMERIC_VALUES = [
    "1.25",
    "2.50",
    "5.00",
    "-0.00",
    "-0.50",
    "0.000001",
    "0.0000001",
    "1E-20",
    "100.10",
    "12345678901234567890123.0",
    "123456789012345678901234567890.5",
    "99999999999999999999999999999999999999999",
    "-7",
    "0",
    "NaN",
    "Infinity",
    "-Infinity",
    "0.1000000000000000000000000000000001",
    "3.14159265358979323846264338327950288",
]


def _sha_of_reference(columns, rows) -> str:
    data = dumps_bytes({"columns": columns}) + b"\n" + b"".join(row_line(r) for r in rows)
    return hashlib.sha256(data).hexdigest()


def _table_text(content: str) -> str:
    """The model-facing text without the parts that differ per call (artifact id, elapsed ms)."""
    return re.sub(r"art_[0-9a-zA-Z_-]+|\d+ ms", "X", content)


def _run_variants(kernel: Kernel, name: str, sql: str, monkeypatch):
    """The same query through sql_query three ways: streamed (numeric as text), fetched whole with
    numeric as text (an engine without streaming), and fetched whole as Decimal."""
    out, taken = [], []
    real_stream = postgres.PostgresEngine.stream

    def spy(self, raw, cur, sql, **kw):
        got = real_stream(self, raw, cur, sql, **kw)
        taken.append(bool(got is not None and got.decimal_text))
        return got

    variants = [
        {"stream": spy},
        {"stream": lambda self, raw, cur, sql, **kw: None},
        {
            "stream": lambda self, raw, cur, sql, **kw: None,
            "fetch_decimal_text": lambda self, raw, cur, limit: None,
        },
    ]
    for patches in variants:
        for attr, fn in patches.items():
            monkeypatch.setattr(postgres.PostgresEngine, attr, fn)
        run = kernel.new_run()
        result = kernel.call_tool("sql_query", {"sql": sql, "datasource": name}, run=run)
        assert result.success, result.message
        record = run.artifacts.catalog.get(result.data["artifact_id"])
        out.append((record, result))
        run.close()
        monkeypatch.undo()
    assert taken == [True]  # the first run really streamed numeric text
    return out


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    k = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False)
    k.start()
    yield k
    k.close()


@pytest.fixture
def pg_numeric_table():
    require(pg_available(), "PostgreSQL at 127.0.0.1:5432")
    schema = unique("assay_dec")
    with pg_admin() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(
            f"CREATE TABLE {schema}.t (id int, amount numeric, price numeric(12, 2), label text, "
            "ts timestamp, wide numeric(40, 30))"
        )
        for i, v in enumerate(NUMERIC_VALUES * 30):
            conn.execute(
                f"INSERT INTO {schema}.t VALUES (%s, %s::numeric, %s, %s, "
                "timestamp '2024-01-01' + %s * interval '1 minute', %s)",
                (
                    i,
                    v,
                    None if i % 7 == 0 else (i * 1.25),
                    f"row|{i}",
                    i,
                    None if i % 5 == 0 else f"{i}.{i:030d}"[:40],
                ),
            )
        conn.execute(
            f"INSERT INTO {schema}.t SELECT g, g * 0.25, (g * 1.25)::numeric(12,2), md5(g::text), "
            "timestamp '2024-01-01' + g * interval '1 minute', NULL FROM generate_series(1000, 21000) g"
        )
    try:
        yield schema
    finally:
        with pg_admin() as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_postgresql_numeric_fast_paths_store_and_preview_the_same(
    kernel, pg_numeric_table, monkeypatch
):
    from assay.plugins.sql.settings import DatasourceConfig

    # The superuser login, accepted knowingly (the table is the test's own, made by that login).
    config = DatasourceConfig(url=PG_BASE, allow_privileged=True)
    kernel.attach(open_datasource("pg", PG_BASE, kernel=kernel, config=config))
    sql = f"SELECT * FROM {pg_numeric_table}.t ORDER BY id"
    (fast, fast_result), *others = _run_variants(kernel, "pg", sql, monkeypatch)
    for slow, slow_result in others:
        assert fast.row_count == slow.row_count == len(NUMERIC_VALUES) * 30 + 20001
        assert fast_result.data["row_count"] == slow_result.data["row_count"] == fast.row_count
        assert fast.sha256 == slow.sha256
        assert fast.preview == slow.preview
        assert _table_text(fast_result.content) == _table_text(slow_result.content)
        assert fast_result.data["column_types"] == slow_result.data["column_types"]
    import psycopg

    with psycopg.connect(PG_BASE) as conn:
        cur = conn.execute(sql)
        reference = _sha_of_reference([d.name for d in cur.description], cur.fetchall())
    assert fast.sha256 == reference


def test_postgresql_fast_path_is_really_taken_and_skipped_for_nested_numerics(pg_numeric_table):
    import psycopg

    with psycopg.connect(PG_BASE) as raw:
        cur = raw.execute(
            f"SELECT amount, price, label FROM {pg_numeric_table}.t ORDER BY id LIMIT 3"
        )
        rows, columns = postgres.POSTGRESQL.fetch_decimal_text(raw, cur, 10)
        assert (
            columns == [0, 1]
            and rows[0][0] == b"1.25"
            and rows[1][1] == b"1.25"
            and rows[0][1] is None
        )
        for nested in (
            "SELECT ARRAY[1.5::numeric]",
            "SELECT numrange(1.5, 2.5)",
            "SELECT ROW(1.5::numeric, 2)",
        ):
            assert postgres.POSTGRESQL.fetch_decimal_text(raw, raw.execute(nested), 10) is None, (
                nested
            )
        assert postgres.POSTGRESQL.fetch_decimal_text(raw, raw.execute("SELECT 1, 'x'"), 10) is None


def test_duckdb_capture_equals_the_reference_encoder(kernel, tmp_path):
    path = tmp_path / "dec.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute(
            "CREATE TABLE t AS SELECT i AS id, (i * 1.25)::DECIMAL(12,2) AS amount, "
            "CASE WHEN i % 9 = 0 THEN NULL ELSE (i * 0.0001)::DECIMAL(18,8) END AS small, "
            "md5(i::varchar) AS s, TIMESTAMP '2024-01-01' + i * INTERVAL 1 MINUTE AS ts, "
            "(-i)::DECIMAL(38,0) AS whole FROM range(1, 20001) r(i)"
        )
        expected_rows = conn.execute("SELECT * FROM t ORDER BY id").fetchall()
    kernel.attach(open_datasource("dk", f"duckdb:///{path}", kernel=kernel))
    run = kernel.new_run()
    result = kernel.call_tool(
        "sql_query", {"sql": "SELECT * FROM t ORDER BY id", "datasource": "dk"}, run=run
    )
    assert result.success, result.message
    record = run.artifacts.catalog.get(result.data["artifact_id"])
    assert record.sha256 == _sha_of_reference(
        ["id", "amount", "small", "s", "ts", "whole"], expected_rows
    )
    assert (
        "| 1 | 1.25 | 0.00010000 |" in result.content
    )  # previews show the Decimal as the driver made it
    run.close()


def test_duckdb_lists_arrays_and_maps_of_decimals_are_captured_as_the_driver_returns_them(
    kernel, tmp_path
):
    # Their type names start with DECIMAL too ('DECIMAL(10,2)[]'): they were cast to text like a DECIMAL
    # column and the capture failed on Decimal('[1.50, 2.25]') (ARTIFACT_CAPTURE_FAILED, ConversionSyntax).
    path = tmp_path / "declist.duckdb"
    sql = "SELECT id, amount, amounts, fixed, by_key FROM t ORDER BY id"
    with duckdb.connect(str(path)) as conn:
        conn.execute(
            "CREATE TABLE t AS SELECT i AS id, (i * 1.25)::DECIMAL(10,2) AS amount, "
            "[(i * 1.5)::DECIMAL(10,2), NULL, 2.25] AS amounts, "
            "array_value((i * 0.5)::DECIMAL(4,1), 1.0) AS fixed, "
            "map(['a'], [(i * 0.1)::DECIMAL(8,3)]) AS by_key FROM range(1, 101) r(i)"
        )
        expected_rows = conn.execute(sql).fetchall()
    kernel.attach(open_datasource("dl", f"duckdb:///{path}", kernel=kernel))
    run = kernel.new_run()
    result = kernel.call_tool("sql_query", {"sql": sql, "datasource": "dl"}, run=run)
    assert result.success, result.message
    record = run.artifacts.catalog.get(result.data["artifact_id"])
    assert record.sha256 == _sha_of_reference(
        ["id", "amount", "amounts", "fixed", "by_key"], expected_rows
    )
    assert result.data["column_types"][2] == "DECIMAL(10,2)[]"
    run.close()
