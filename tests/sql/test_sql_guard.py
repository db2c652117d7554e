"""The read-only check before execution: one read-only statement, judged by parsing per dialect."""

from __future__ import annotations

import pytest

from assay.plugins.sql.errors import SQL_QUERY_FAILED, SQL_READ_ONLY_REQUIRED, SqlError
from assay.plugins.sql.guard import check_read_only

DIALECTS = ["sqlite", "postgresql", "mysql", "mariadb", "duckdb"]


def reason(sql: str, dialect: str) -> str:
    with pytest.raises(SqlError) as info:
        check_read_only(sql, dialect)
    assert info.value.code == SQL_READ_ONLY_REQUIRED
    return info.value.message


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "select o.order_id, sum(i.quantity) from orders o join order_items i on i.order_id = o.order_id group by 1",
        "WITH big AS (SELECT * FROM orders WHERE total > 100) SELECT count(*) FROM big",
        "SELECT 1 UNION ALL SELECT 2",
        "SELECT * FROM orders WHERE status IN (SELECT status FROM orders LIMIT 1);",
        "-- a comment\nSELECT 1 /* another */",
    ],
)
def test_read_only_queries_are_accepted(sql, dialect):
    check_read_only(sql, dialect)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_two_statements_are_refused_even_if_both_read(dialect):
    assert "2 statements" in reason("SELECT 1; SELECT 2", dialect)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_text_that_does_not_parse_is_refused_with_the_reason(dialect):
    # Issue 12: a typo is a syntax problem (SQL_QUERY_FAILED with the parser's position), not a write.
    with pytest.raises(SqlError) as info:
        check_read_only("SELEC 1 FROM", dialect)
    assert info.value.code == SQL_QUERY_FAILED
    assert "does not parse" in info.value.message
    assert "line 1, column" in info.value.message and "nothing was run" in info.value.message
    assert "syntax" in info.value.hint
    assert info.value.details["line"] == 1 and info.value.details["col"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_empty_text_is_refused(dialect):
    assert "empty" in reason("   ", dialect)


def test_data_modifying_cte_is_refused():
    assert "DELETE" in reason(
        "WITH x AS (DELETE FROM orders RETURNING *) SELECT * FROM x", "postgresql"
    )


def test_select_into_is_refused():
    assert "INTO" in reason("SELECT * INTO copy_of_orders FROM orders", "postgresql")


def test_select_for_update_is_refused():
    assert "LOCK" in reason("SELECT * FROM orders FOR UPDATE", "postgresql")


@pytest.mark.parametrize(
    "sql,dialect",
    [
        ("SELECT pg_read_file('/etc/passwd')", "postgresql"),
        ("SELECT pg_catalog.pg_ls_dir('.')", "postgresql"),
        ("SELECT lo_import('/etc/passwd')", "postgresql"),
        ("SELECT pg_terminate_backend(1)", "postgresql"),
        ("SELECT * FROM dblink('host=x', 'select 1') AS t(a int)", "postgresql"),
        ("SELECT set_config('default_transaction_read_only', 'off', false)", "postgresql"),
        ("SELECT LOAD_FILE('/etc/passwd')", "mariadb"),
        ("SELECT load_extension('/tmp/evil.so')", "sqlite"),
        ("SELECT * FROM read_csv('/etc/passwd')", "duckdb"),
        ("SELECT * FROM read_parquet('/data/x.parquet')", "duckdb"),
        ("SELECT * FROM read_json('/data/x.json')", "duckdb"),
        ("SELECT * FROM '/etc/passwd.csv'", "duckdb"),
    ],
)
def test_functions_that_reach_files_or_sessions_are_refused_by_name(sql, dialect):
    message = reason(sql, dialect)
    assert "not allowed" in message or "never allowed" in message or "allow-list" in message


def test_explain_of_a_select_is_accepted_but_explain_analyze_is_refused():
    check_read_only("EXPLAIN SELECT * FROM orders", "postgresql")
    assert "ANALYZE" in reason("EXPLAIN ANALYZE DELETE FROM orders", "postgresql")
    assert "not a read-only" in reason("EXPLAIN DELETE FROM orders", "postgresql")


def test_refusal_carries_a_hint_naming_what_is_allowed():
    with pytest.raises(SqlError) as info:
        check_read_only("DROP TABLE orders", "sqlite")
    assert "read-only SELECT" in info.value.hint
    assert info.value.details["reason"]
