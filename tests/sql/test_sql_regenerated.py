"""The SQL that runs is written from the checked tree: same rows as the submitted text, both kept as evidence.

* A corpus of analyst queries per engine (the false-positive suite and more
  literals, casts and comments): the written SQL returns the same rows as the
  submitted text run as it is (the guard taken out for that run only).
* A property (hypothesis): any string value written as a literal comes back
  from the server unchanged through the written SQL.
* What cannot be written back the same is refused (SQL_NOT_REPRODUCIBLE),
  never sent as submitted.
* The evidence: the artifact's provenance names the SQL that ran, and keeps
  the submitted text beside it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.sql.conftest import new_db
from tests.sql.test_sql_false_positives import queries_for

# More of what analysts write: literals of every kind, casts, comments, odd spacing and case.
LITERALS = {
    "postgresql": [
        "select 'it''s' as q, 'back\\slash' as b, E'tab\\tnew\\nline' as e, $$dollar ' quoted$$ as d, U&'\\00e9t\\00e9' as u",
        "SELECT 1.50::numeric(5, 2) AS n, -3 AS neg, 1e3 AS f, NULL AS z, TRUE AS t, DATE '2024-02-29' AS d",
        "SELECT round(avg(total), 2), round(sum(total)) FROM orders -- trailing comment",
        "/* leading */ SELECT\tcount(*)\nFROM orders\nWHERE status <> 'x' AND total BETWEEN 1 AND 1e6",
        "SELECT 'héllo wörld ✓' AS s, length('日本語') AS n, 'a' || 'b' || 'c' AS c",
        "SELECT interval '1 day 2 hours' AS i, '2024-01-01'::date + 7 AS d, now()::date = current_date AS t",
        'SELECT "order_id", "Total" FROM (SELECT order_id, total AS "Total" FROM orders) x ORDER BY 1 LIMIT 5',
        "SELECT status, count(*) FILTER (WHERE total > 50) AS big FROM orders GROUP BY status ORDER BY status",
    ],
    "mariadb": [
        "select 'it''s' as q, \"dq\" as d, 'per%cent' as p, 0x41 as h, X'42' as x, N'nat' as n",
        "SELECT 1.50 AS n, -3 AS neg, 1e3 AS f, NULL AS z, TRUE AS t, DATE '2024-02-29' AS d",
        "SELECT round(avg(total), 2), round(sum(total)) FROM orders -- trailing comment",
        "# hash comment\nSELECT count(*) FROM orders WHERE status <> 'x' AND total BETWEEN 1 AND 1000000",
        "SELECT 'héllo wörld ✓' AS s, char_length('日本語') AS n, concat('a', 'b') AS c",
        "SELECT `order_id`, total AS `Total` FROM orders ORDER BY 1 LIMIT 5",
        "SELECT CAST(total AS INTEGER), CAST(total AS DECIMAL(10, 1)), CAST('7' AS UNSIGNED) FROM orders LIMIT 5",
        "SELECT monthname(ordered_at), to_days(ordered_at), timestampadd(WEEK, 1, ordered_at) FROM orders LIMIT 5",
        "SELECT status, group_concat(channel), group_concat(DISTINCT channel ORDER BY channel SEPARATOR '|') "
        "FROM orders GROUP BY status",
    ],
    "sqlite": [
        "select 'it''s' as q, 'back\\slash' as b, x'41' as h, NULL as z, 1e3 as f, -3 as neg",
        "SELECT round(avg(total), 2), round(sum(total)) FROM orders -- trailing comment",
        "/* leading */ SELECT\tcount(*)\nFROM orders\nWHERE status <> 'x' AND total BETWEEN 1 AND 1e6",
        "SELECT 'héllo wörld ✓' AS s, length('日本語') AS n, 'a' || 'b' AS c",
        "SELECT CAST(total AS DECIMAL(10, 2)), CAST(total AS NUMERIC), CAST(order_id AS VARCHAR(5)) FROM orders LIMIT 5",
        'SELECT [order_id], `total`, "status" FROM orders ORDER BY 1 LIMIT 5',
    ],
    "duckdb": [
        "select 'it''s' as q, 'back\\slash' as b, E'tab\\tnew' as e, $$dollar ' quoted$$ as d, NULL as z",
        "SELECT 1.50::DECIMAL(5, 2) AS n, -3 AS neg, 1e3 AS f, TRUE AS t, DATE '2024-02-29' AS d",
        "SELECT round(avg(total), 2), round(sum(total)) FROM orders -- trailing comment",
        "/* leading */ SELECT\tcount(*)\nFROM orders\nWHERE status <> 'x' AND total BETWEEN 1 AND 1e6",
        "SELECT 'héllo wörld ✓' AS s, length('日本語') AS n, 'a' || 'b' AS c, [1, 2] AS l, {'k': 1} AS m",
        "PIVOT orders ON channel USING sum(total) GROUP BY store_id ORDER BY store_id",
    ],
}


def corpus(engine: str) -> list[str]:
    return queries_for(engine) + LITERALS[engine]


def rows_of(db: Any, sql: str) -> list[Any]:
    result = db.query(sql)
    return sorted((tuple(_plain(v) for v in row) for row in result.rows), key=repr)


def _plain(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value


def test_regenerated_sql_returns_the_same_rows_as_the_submitted_sql(engine, request, monkeypatch):
    from assay.plugins.sql import execution
    from assay.plugins.sql.guard import check_read_only

    db = new_db(engine, request)
    differ, refused = [], []
    try:
        for sql in corpus(engine):
            try:
                written = check_read_only(sql, engine).sql
            except Exception as exc:  # noqa: BLE001 - every query of the corpus must be accepted
                refused.append((sql, getattr(exc, "code", type(exc).__name__), str(exc)[:200]))
                continue
            with (
                monkeypatch.context() as m
            ):  # the submitted text as it is, and the written SQL as it is
                m.setattr(execution, "check_read_only", lambda *a, **k: None)
                submitted_rows, written_rows = rows_of(db, sql), rows_of(db, written)
            if submitted_rows != written_rows:
                differ.append((sql, written, submitted_rows[:2], written_rows[:2]))
    finally:
        db.close()
    assert refused == [], (
        f"{len(refused)} of {len(corpus(engine))} corpus queries refused on {engine}: {refused}"
    )
    assert differ == [], f"{len(differ)} written queries return other rows on {engine}: {differ}"


TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30
)


@pytest.mark.parametrize("engine", ["sqlite", "duckdb", "postgresql", "mariadb"])
def test_any_string_literal_comes_back_unchanged_through_the_written_sql(engine, request):
    from assay.plugins.sql.errors import SQL_AMBIGUOUS_BACKSLASH, SqlError
    from assay.plugins.sql.guard import check_read_only

    db = new_db(engine, request)

    @settings(
        max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
    )
    @given(value=TEXT)
    def literal_round_trips(value: str) -> None:
        literal = "'" + value.replace("'", "''") + "'"
        if engine == "mariadb":
            literal = literal.replace("\\", "\\\\")  # the pinned sql_mode takes backslash escapes
        sql = f"SELECT {literal} AS v"
        try:
            written = check_read_only(sql, engine).sql
        except SqlError as exc:
            assert exc.code == SQL_AMBIGUOUS_BACKSLASH, (sql, exc.code, exc.message)
            return
        assert db.query(written).rows == [(value,)], (sql, written)

    try:
        literal_round_trips()
    finally:
        db.close()


@pytest.mark.parametrize(
    "dialect,sql",
    [
        (
            "postgresql",
            "SELECT '\\' ' , pg_backend_pid() --'",
        ),  # adjacent strings: written back as CONCAT(...)
        (
            "duckdb",
            "SELECT initcap(name) FROM stores",
        ),  # DuckDB has none; sqlglot writes an emulation
    ],
)
def test_what_cannot_be_written_back_the_same_is_refused_and_never_sent_as_submitted(dialect, sql):
    from assay.plugins.sql.errors import SQL_NOT_REPRODUCIBLE, SqlError
    from assay.plugins.sql.guard import check_read_only

    with pytest.raises(SqlError) as info:
        check_read_only(sql, dialect)
    assert (
        info.value.code == SQL_NOT_REPRODUCIBLE
        and info.value.hint
        and "reason" in info.value.details
    )


def test_the_artifact_names_the_sql_that_ran_and_keeps_the_submitted_text(engine, request, kernel):
    kernel.attach(new_db(engine, request))
    run = kernel.new_run()
    submitted = "select count(*) as n /* the number of stores */ from stores"
    result = kernel.call_tool("sql_query", {"sql": submitted}, run=run)
    assert result.success, result.message
    [record] = [r for r in run.artifacts.records() if r.kind == "sql"]
    written = record.provenance["sql"]
    assert record.provenance["submitted_sql"] == submitted and written != submitted
    assert "/*" not in written and "stores" in written and result.data["executed_sql"] == written
    failed = kernel.call_tool("sql_query", {"sql": "select nope /* x */ from stores"}, run=run)
    assert failed.error_code == "SQL_QUERY_FAILED"
    last = [r for r in run.artifacts.records() if r.kind == "sql"][-1]
    assert (
        last.status == "failed"
        and last.provenance["submitted_sql"] == "select nope /* x */ from stores"
    )
    assert "/*" not in last.provenance["sql"]
