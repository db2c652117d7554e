"""Ordinary analytical queries the read-only allow-list must let through, run for real on each engine.

At least 25 per engine: window functions, CTEs, recursive CTEs, JSON, LATERAL,
ROLLUP, QUALIFY, PIVOT, date arithmetic, string aggregation, catalog views.
Each goes through the real ``sql_query`` tool on the retail data set and
must succeed (the guard let it through and the engine ran it).
"""

from __future__ import annotations

import pytest

from tests.sql.conftest import new_db

COMMON = [
    "SELECT status, count(*) AS n, sum(total) AS revenue FROM orders GROUP BY status ORDER BY n DESC",
    "SELECT order_id, total, row_number() OVER (PARTITION BY store_id ORDER BY total DESC) AS rn FROM orders",
    "SELECT order_id, total, rank() OVER (ORDER BY total DESC), dense_rank() OVER (ORDER BY total DESC) FROM orders",
    (
        "SELECT order_id, total - lag(total) OVER (ORDER BY order_id) AS delta, lead(total, 2) OVER (ORDER BY order_id) "
        "FROM orders"
    ),
    (
        "SELECT store_id, avg(total) OVER (PARTITION BY store_id ORDER BY order_id ROWS BETWEEN 6 PRECEDING AND "
        "CURRENT ROW) AS moving_avg FROM orders"
    ),
    (
        "SELECT ntile(4) OVER (ORDER BY total) AS quartile, first_value(total) OVER (ORDER BY total), "
        "percent_rank() OVER (ORDER BY total), cume_dist() OVER (ORDER BY total) FROM orders"
    ),
    "WITH big AS (SELECT * FROM orders WHERE total > 100) SELECT channel, count(*) FROM big GROUP BY channel",
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 10) SELECT sum(x) FROM n",
    (
        "WITH a AS (SELECT customer_id, count(*) AS c FROM orders GROUP BY customer_id), "
        "b AS (SELECT c, count(*) AS k FROM a GROUP BY c) SELECT * FROM b ORDER BY c"
    ),
    (
        "SELECT c.segment, count(DISTINCT o.order_id) FROM customers c LEFT JOIN orders o ON o.customer_id = "
        "c.customer_id GROUP BY c.segment"
    ),
    (
        "SELECT p.category, sum(i.quantity * i.unit_price) AS gross FROM order_items i JOIN products p ON p.product_id = "
        "i.product_id GROUP BY p.category HAVING sum(i.quantity) > 0"
    ),
    "SELECT * FROM orders WHERE customer_id IN (SELECT customer_id FROM customers WHERE segment = 'consumer')",
    "SELECT o.order_id FROM orders o WHERE EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = o.order_id)",
    "SELECT region, city, count(*) FROM stores GROUP BY region, city ORDER BY 1, 2",
    (
        "SELECT CASE WHEN total > 100 THEN 'big' WHEN total > 20 THEN 'mid' ELSE 'small' END AS size, count(*) "
        "FROM orders GROUP BY 1"
    ),
    "SELECT coalesce(promotion_id, 0), nullif(status, 'x') FROM orders",
    (
        "SELECT upper(name), lower(city), length(name), substring(name, 1, 3), trim(name), replace(city, 'a', 'b') "
        "FROM stores"
    ),
    (
        "SELECT round(avg(total), 2), min(total), max(total), abs(min(total)), floor(max(total)) "
        "FROM orders"
    ),
    "SELECT CAST(total AS INTEGER), CAST(order_id AS CHAR(10)) FROM orders",
    "SELECT order_id FROM orders UNION SELECT order_id FROM refunds ORDER BY 1",
    "SELECT 1 AS a, 'x' AS b",
    (
        "SELECT count(*) FROM orders o JOIN order_items i ON i.order_id = o.order_id JOIN products p "
        "ON p.product_id = i.product_id WHERE p.unit_price > 5"
    ),
    "SELECT status, sum(CASE WHEN channel = 'web' THEN total ELSE 0 END) AS web FROM orders GROUP BY status",
]

PER_ENGINE = {
    "postgresql": [
        "SHOW search_path",
        "SELECT greatest(total, 1), least(total, 1), stddev_samp(total) OVER () FROM orders",
        "SELECT store_id, channel, sum(total) FROM orders GROUP BY ROLLUP (store_id, channel)",
        "SELECT date_trunc('month', ordered_at) AS m, count(*) FROM orders GROUP BY 1 ORDER BY 1",
        (
            "SELECT ordered_at + interval '7 days', ordered_at::date - date '2020-01-01', extract(year FROM ordered_at), "
            "age(ordered_at) FROM orders"
        ),
        (
            "SELECT to_char(ordered_at, 'YYYY-MM'), string_agg(DISTINCT channel, ',' ORDER BY channel) FROM orders "
            "GROUP BY 1"
        ),
        (
            "SELECT s.store_id, t.total FROM stores s CROSS JOIN LATERAL (SELECT total FROM orders o WHERE o.store_id = "
            "s.store_id ORDER BY total DESC LIMIT 3) t"
        ),
        "SELECT jsonb_build_object('id', order_id, 'total', total) ->> 'id', json_agg(status) OVER () FROM orders",
        'SELECT * FROM jsonb_each(\'{"a": 1, "b": 2}\'::jsonb)',
        "SELECT g, g * 2 FROM generate_series(1, 12) AS g",
        (
            "SELECT count(*) FILTER (WHERE status = 'refunded'), percentile_cont(0.5) WITHIN GROUP (ORDER BY total) "
            "FROM orders"
        ),
        "SELECT array_agg(order_id ORDER BY order_id), array_length(array_agg(order_id), 1) FROM orders",
        "SELECT unnest(ARRAY[1, 2, 3]) AS x",
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
        "SELECT tablename FROM pg_catalog.pg_tables LIMIT 5",
        "SELECT regexp_replace(name, '[aeiou]', '', 'g'), split_part(email, '@', 2) FROM customers",
        "SELECT 1 OPERATOR(pg_catalog.+) 2, pg_catalog.lower('A'), \"lower\"('B')",
        'SELECT U&"\\0073um"(total) FROM orders',
        "VALUES (1, 'a'), (2, 'b')",
        "SELECT DISTINCT ON (store_id) store_id, total FROM orders ORDER BY store_id, total DESC",
        (
            "SELECT '{\"a\": 1}'::jsonb ? 'a', '{\"a\": 1}'::jsonb @> '{\"a\": 1}', ARRAY[1, 2] @> ARRAY[1], "
            "to_tsvector('english', name) @@ to_tsquery('english', 'store'), name ~* '^s' FROM stores"
        ),
        "EXPLAIN SELECT * FROM orders WHERE total > 10",
    ],
    "mariadb": [
        "VALUES (1, 'a'), (2, 'b')",
        "SELECT greatest(total, 1), least(total, 1), stddev_samp(total) FROM orders",
        "SELECT store_id, channel, sum(total) FROM orders GROUP BY store_id, channel WITH ROLLUP",
        "SELECT date_format(ordered_at, '%Y-%m') AS m, count(*) FROM orders GROUP BY m ORDER BY m",
        (
            "SELECT ordered_at + INTERVAL 7 DAY, datediff(ordered_at, '2020-01-01'), year(ordered_at), "
            "date_add(ordered_at, INTERVAL 1 MONTH) FROM orders"
        ),
        "SELECT channel, group_concat(DISTINCT status ORDER BY status SEPARATOR ',') FROM orders GROUP BY channel",
        "SELECT json_object('id', order_id, 'total', total), json_extract('{\"a\": [1, 2]}', '$.a[1]') FROM orders",
        "SELECT * FROM JSON_TABLE('[{\"a\": 1}, {\"a\": 2}]', '$[*]' COLUMNS (a INT PATH '$.a')) AS jt",
        "SELECT seq FROM seq_1_to_12",
        "SELECT if(total > 100, 'big', 'small'), ifnull(promotion_id, 0) FROM orders",
        "SELECT table_name FROM information_schema.tables WHERE table_schema = database()",
        "SHOW TABLES",
        "SHOW COLUMNS FROM orders",
        "SELECT concat_ws('-', city, region), lpad(store_id, 5, '0'), locate('a', city) FROM stores",
        "SELECT timestampdiff(DAY, min(ordered_at), max(ordered_at)), unix_timestamp(max(ordered_at)) FROM orders",
        "DESCRIBE orders",
        "SELECT median(total) OVER (PARTITION BY store_id) FROM orders",
        "EXPLAIN SELECT * FROM orders WHERE total > 10",
    ],
    "sqlite": [
        "SELECT strftime('%Y-%m', ordered_at) AS m, count(*) FROM orders GROUP BY m ORDER BY m",
        "SELECT date(ordered_at, '+7 days'), julianday(ordered_at) - julianday('2020-01-01') FROM orders",
        "SELECT channel, group_concat(status, ',') FROM orders GROUP BY channel",
        "SELECT json_object('id', order_id, 'total', total), json_extract('{\"a\": [1, 2]}', '$.a[1]') FROM orders",
        'SELECT key, value FROM json_each(\'{"a": 1, "b": 2}\')',
        "SELECT name FROM sqlite_master WHERE type = 'table'",
        "SELECT * FROM pragma_table_info('orders')",
        "SELECT iif(total > 100, 'big', 'small'), ifnull(promotion_id, 0), typeof(total) FROM orders",
        "SELECT printf('%05d', store_id), instr(city, 'a') FROM stores",
        "VALUES (1, 'a'), (2, 'b')",
        "SELECT total(total), sum(total) FROM orders",
        "EXPLAIN QUERY PLAN SELECT * FROM orders WHERE total > 10",
    ],
    "duckdb": [
        "SELECT store_id, channel, sum(total) FROM orders GROUP BY ROLLUP (store_id, channel)",
        "SELECT order_id, total FROM orders QUALIFY row_number() OVER (PARTITION BY store_id ORDER BY total DESC) = 1",
        "PIVOT orders ON channel USING sum(total) GROUP BY store_id",
        "UNPIVOT (SELECT store_id, 1 AS a, 2 AS b FROM stores) ON a, b INTO NAME k VALUE v",
        "SUMMARIZE orders",
        "SUMMARIZE SELECT total FROM orders",
        "SELECT date_trunc('month', ordered_at) AS m, count(*) FROM orders GROUP BY ALL ORDER BY 1",
        (
            "SELECT ordered_at + INTERVAL 7 DAY, date_diff('day', DATE '2020-01-01', ordered_at::DATE), "
            "strftime(ordered_at, '%Y') FROM orders"
        ),
        "SELECT channel, string_agg(DISTINCT status, ',' ORDER BY status), list(order_id)[1] FROM orders GROUP BY 1",
        (
            "SELECT s.store_id, t.total FROM stores s, LATERAL (SELECT total FROM orders o WHERE o.store_id = s.store_id "
            "ORDER BY total DESC LIMIT 3) t"
        ),
        "SELECT json_extract('{\"a\": [1, 2]}', '$.a[1]'), to_json({'id': 1})",
        "SELECT * FROM range(12) t(i)",
        "SELECT list_sort([3, 1, 2]), [1, 2, 3][2], {'a': 1}.a, greatest(1, 2), stddev_samp(total) FROM orders",
        "SELECT table_name FROM information_schema.tables",
        "SELECT count(*) FROM duckdb_tables()",
        "FROM orders SELECT order_id LIMIT 3",
        "SELECT COLUMNS('order_.*') FROM orders LIMIT 3",
        "DESCRIBE orders",
        "SELECT 'abc'.upper(), upper('abc')",
        "SELECT median(total), quantile_cont(total, 0.9), arg_max(order_id, total) FROM orders",
    ],
}


def queries_for(engine: str) -> list[str]:
    return COMMON + PER_ENGINE[engine]


def test_false_positive_suite_has_at_least_25_queries_per_engine():
    for engine in PER_ENGINE:
        assert len(queries_for(engine)) >= 25, engine


def test_ordinary_analytical_queries_run_through_sql_query(engine, request, kernel):
    kernel.attach(new_db(engine, request, name="retail"))
    failed = []
    for sql in queries_for(engine):
        result = kernel.call_tool("sql_query", {"sql": sql, "timeout_s": 20})
        if not result.success:
            failed.append((sql, result.error_code, result.message[:300]))
    assert failed == [], (
        f"{len(failed)} of {len(queries_for(engine))} ordinary queries refused or failed on {engine}"
    )


@pytest.mark.parametrize(
    "dialect,sql",
    [
        ("postgresql", "SHOW search_path"),
        ("mariadb", "VALUES (1,'a'),(2,'b')"),
        ("duckdb", "PIVOT orders ON channel USING sum(total)"),
        ("duckdb", "SUMMARIZE orders"),
    ],
)
def test_the_false_positives_named_in_issue_12_are_accepted(dialect, sql):
    from assay.plugins.sql.guard import check_read_only

    check_read_only(sql, dialect)


# Issue 30's false positives, found with 74 analyst queries: each must run on its engine.
ISSUE_30 = {
    "postgresql": [
        "SELECT session_user, current_user",
        "SELECT store_id, channel, GROUPING(store_id, channel), sum(total) FROM orders GROUP BY ROLLUP (store_id, channel)",
        "SELECT ARRAY(SELECT order_id FROM orders ORDER BY order_id LIMIT 3)",
        "SELECT xmlparse(content '<a>1</a>'), xmlparse(document '<b/>')",
        "SELECT has_function_privilege('lower(text)', 'EXECUTE'), has_database_privilege(current_database(), 'CONNECT')",
        "SELECT count(*) FROM pg_stat_statements",  # the extension's view, unqualified (see the fixture below)
        "SELECT pg_sleep_for('1 millisecond'), pg_sleep_until(now())",
    ],
    "mariadb": [
        "SELECT TO_CHAR(ordered_at, 'YYYY-MM') FROM orders",
        "SELECT ASCII(name), INSERT(name, 1, 2, 'XX') FROM stores",
        "SELECT '/*+ not a hint */' AS s, '/*! nor code */' AS t",
        "SELECT group_concat(status) FROM orders",
        "SELECT timestampadd(WEEK, 1, ordered_at) FROM orders",
    ],
    "duckdb": [
        "SELECT count_if(total > 100) FROM orders",
        "SELECT store_id, GROUPING(store_id), sum(total) FROM orders GROUP BY ROLLUP (store_id)",
        "PIVOT orders ON channel USING sum(total) GROUP BY store_id ORDER BY store_id",
        "UNPIVOT (SELECT store_id, 1 AS a, 2 AS b FROM stores) ON a, b INTO NAME k VALUE v ORDER BY store_id, k",
        "PIVOT orders ON channel USING count(*) GROUP BY store_id ORDER BY store_id LIMIT 3",
        "SELECT string_agg(status), bool_and(total > 0), if(count(*) > 1, 'many', 'one') FROM orders",
    ],
    "sqlite": [
        "SELECT CAST(order_id AS CHAR(10)), CAST(total AS DECIMAL(10, 2)) FROM orders",
    ],
}


@pytest.fixture
def pg_stat_statements_view(request) -> None:
    """pg_stat_statements as a non-catalog view the login can read unqualified (where CREATE EXTENSION put it);
    a view of the run's own schema stands in for the extension's, which needs shared_preload_libraries."""
    from tests.sql.conftest import pg_admin

    schema, role = request.getfixturevalue("pg_schema"), request.getfixturevalue("pg_analyst")
    with pg_admin() as conn:
        conn.execute(
            f"CREATE VIEW \"{schema}\".pg_stat_statements AS SELECT 1 AS calls, 'SELECT 1'::text AS query"
        )
        conn.execute(f'GRANT SELECT ON "{schema}".pg_stat_statements TO "{role}"')
    yield
    with pg_admin() as conn:
        conn.execute(f'DROP VIEW IF EXISTS "{schema}".pg_stat_statements')


def test_issue_30_false_positives_run_through_sql_query(engine, request, kernel):
    if engine == "postgresql":
        request.getfixturevalue("pg_stat_statements_view")
    kernel.attach(new_db(engine, request, name="retail"))
    failed = []
    for sql in ISSUE_30[engine]:
        result = kernel.call_tool("sql_query", {"sql": sql, "timeout_s": 20})
        if not result.success:
            failed.append((sql, result.error_code, result.message[:300]))
    assert failed == [], (
        f"{len(failed)} of issue 30's false positives refused or failed on {engine}: {failed}"
    )


def test_about_45_nested_calls_are_too_deeply_nested_not_a_write():
    from assay.plugins.sql.errors import SQL_TOO_DEEPLY_NESTED, SqlError
    from assay.plugins.sql.guard import check_read_only

    check_read_only("SELECT " + "abs(" * 20 + "1" + ")" * 20, "postgresql")
    with pytest.raises(SqlError) as info:
        check_read_only("SELECT " + "abs(" * 60 + "1" + ")" * 60, "postgresql")
    assert info.value.code == SQL_TOO_DEEPLY_NESTED and "WITH" in info.value.hint


def test_mariadb_next_value_for_is_refused_as_a_write_not_as_a_syntax_error():
    from assay.plugins.sql.errors import SQL_READ_ONLY_REQUIRED, SqlError
    from assay.plugins.sql.guard import check_read_only

    for sql in ("SELECT NEXT VALUE FOR seq", "SELECT next value for s, 1 FROM orders"):
        with pytest.raises(SqlError) as info:
            check_read_only(sql, "mariadb")
        assert info.value.code == SQL_READ_ONLY_REQUIRED and "sequence" in info.value.message


def test_refusal_hints_name_allow_functions_and_schema_qualifying_where_they_apply():
    from assay.plugins.sql.errors import SqlError
    from assay.plugins.sql.guard import check_read_only

    with pytest.raises(SqlError) as info:
        check_read_only("SELECT fiscal_quarter(now())", "postgresql")
    assert "allow_functions" in info.value.hint and "schema-qualified" in info.value.hint
    with pytest.raises(SqlError) as info:
        check_read_only("SELECT * FROM pg_my_table", "postgresql")
    assert "schema-qualify" in info.value.hint and "myschema.pg_my_table" in info.value.hint
    with pytest.raises(SqlError) as info:
        check_read_only("DELETE FROM orders", "postgresql")
    assert "allow_functions" not in info.value.hint
