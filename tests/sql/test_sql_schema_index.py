"""The schema index and the question-aware schema prompt (issue 37).

The recall test builds a 440-table warehouse (tests/sql/warehouse.py: ten
subject areas, staging/history/aggregate copies, foreign keys, comments on
some) and asks its 48 questions: each question's needed tables must all be
shown in full in the prompt the main agent would get, for at least 95% of
them. It runs on SQLite (which has no comments) and on PostgreSQL (comments
and foreign keys read from the catalog).
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

from assay import PromptBudget
from assay.plugins.sql.resource import DatabaseResource
from assay.plugins.sql.schema import ColumnInfo, TableInfo
from assay.plugins.sql.schema_index import SchemaIndex, match_expression, split_name
from assay.plugins.sql.schema_samples import is_secret
from assay.plugins.sql.settings import DatasourceConfig, SqlSettings
from tests.conftest import require
from tests.sql.conftest import PG_BASE, pg_admin, pg_available
from tests.sql.warehouse import QUESTIONS, ddl, sqlite_warehouse, tables

AGENT_BUDGET = 16_000  # the agent's default prompt budget in characters (4,000 tokens x 4)
WIDTH = 14  # columns per table: the core columns, padded with audit columns


def recall(resource: DatabaseResource) -> tuple[int, list[str]]:
    """How many questions have all their needed tables shown in full; the misses."""
    hits, misses = 0, []
    for question, needed in QUESTIONS:
        resource.get_prompt(PromptBudget(max_chars=AGENT_BUDGET, question=question))
        shown = {c.name for c in resource.last_layout.shown}
        if needed <= shown:
            hits += 1
        else:
            misses.append(f"{question!r} lacks {sorted(needed - shown)}")
    return hits, misses


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    return sqlite_warehouse(tmp_path_factory.mktemp("warehouse") / "warehouse.db", width=WIDTH)


@pytest.fixture(scope="module")
def pg_warehouse() -> str | None:
    if not pg_available():
        yield None
        return
    schema = f"assay_i37_{uuid.uuid4().hex[:10]}"
    with pg_admin() as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'SET search_path = "{schema}"')
        for statement in ddl("postgresql", width=WIDTH):
            conn.execute(statement)
    yield schema
    with pg_admin() as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def open_sqlite(path: Path, home: Path | None, **config) -> DatabaseResource:
    url = f"sqlite:///{path}"
    return DatabaseResource("wh", url, config=DatasourceConfig(url=url, **config), home=home)


def test_the_warehouse_has_400_tables_and_40_questions_with_their_tables():
    names = {t.name for t in tables()}
    assert len(names) >= 400 and len(QUESTIONS) >= 40
    assert all(needed <= names for _, needed in QUESTIONS)


def test_recall_on_the_sqlite_warehouse_is_at_least_95_percent(warehouse, tmp_path):
    resource = open_sqlite(
        warehouse, tmp_path, sample_values=False
    )  # empty tables: nothing to sample
    hits, misses = recall(resource)
    print(
        f"\nrecall (sqlite, {len(tables())} tables): {hits} of {len(QUESTIONS)}; missed: {misses}"
    )
    assert hits / len(QUESTIONS) >= 0.95, misses


def test_recall_on_the_postgresql_warehouse_with_comments_is_at_least_95_percent(
    pg_warehouse, tmp_path
):
    require(pg_warehouse is not None, "PostgreSQL at 127.0.0.1:5432")
    url = f"{PG_BASE}?options=-csearch_path%3D{pg_warehouse}"
    resource = DatabaseResource(
        "wh",
        url,
        config=DatasourceConfig(
            url=url, allow_privileged=True, schemas=[pg_warehouse], sample_values=False
        ),
        home=tmp_path,
    )
    try:
        assert resource.table("sales_returns").comment.startswith("Returned order lines")
        hits, misses = recall(resource)
    finally:
        resource.close()
    print(
        f"\nrecall (postgresql, {len(tables())} tables): {hits} of {len(QUESTIONS)}; missed: {misses}"
    )
    assert hits / len(QUESTIONS) >= 0.95, misses


def test_without_a_question_the_prompt_is_the_catalog_order_as_before(warehouse, tmp_path):
    resource = open_sqlite(warehouse, tmp_path)
    text = resource.get_prompt(PromptBudget(max_chars=AGENT_BUDGET))
    assert resource.last_layout.mode == "catalog" and "tables shown in full" in text
    assert "chosen for the question" not in text


def test_the_prompt_says_how_much_it_shows_and_how_to_get_the_rest(warehouse, tmp_path):
    resource = open_sqlite(warehouse, tmp_path)
    text = resource.get_prompt(
        PromptBudget(max_chars=AGENT_BUDGET, question="refunds paid on returns")
    )
    layout = resource.last_layout
    assert len(text) <= SqlSettings().schema_prompt_chars
    assert layout.shown[0].name == "sales_returns"
    assert len(layout.shown) + len(layout.listed) + len(layout.left_out) == len(tables())
    assert f"{len(layout.shown)} of {len(tables())} tables shown in full" in text
    assert "list_tables(search=...)" in text and "describe_table" in text


def test_a_foreign_key_neighbour_of_the_best_hit_is_shown_and_says_why(warehouse, tmp_path):
    resource = open_sqlite(warehouse, tmp_path)
    resource.get_prompt(
        PromptBudget(max_chars=AGENT_BUDGET, question="Revenue attributed to each campaign")
    )
    why = {c.name: c.why for c in resource.last_layout.shown}
    assert why["sales_orders"] == "joins mkt_attribution (foreign key)"


def test_a_second_datasource_on_the_same_home_reads_the_index_instead_of_introspecting(
    warehouse, tmp_path
):
    first = open_sqlite(warehouse, tmp_path)
    first.tables()
    assert first.index_state == "rebuilt" and list((tmp_path / "schema").glob("wh-*.sqlite"))
    second = open_sqlite(warehouse, tmp_path)
    second.executor().introspect = None  # introspecting again would fail
    assert len(second.tables()) == len(tables()) and second.index_state == "fresh"


def test_a_schema_change_rebuilds_the_index(tmp_path):
    path = tmp_path / "small.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (order_id INTEGER PRIMARY KEY)")
    open_sqlite(path, tmp_path).tables()
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE refunds (refund_id INTEGER PRIMARY KEY)")
    again = open_sqlite(path, tmp_path)
    assert [t.name for t in again.search_tables("refund")] == [
        "refunds"
    ] and again.index_state == "rebuilt"


def test_an_index_that_cannot_be_written_falls_back_to_the_catalog_order_and_says_so(
    warehouse, tmp_path
):
    home = tmp_path / "home"
    home.write_text("a file where the index directory should be")
    resource = open_sqlite(warehouse, home)
    text = resource.get_prompt(
        PromptBudget(max_chars=AGENT_BUDGET, question="refunds paid on returns")
    )
    assert resource.index_state.startswith("unavailable: SQL_SCHEMA_INDEX_FAILED")
    assert (
        "schema index unavailable: SQL_SCHEMA_INDEX_FAILED" in text
        and "not chosen for the question" in text
    )
    assert resource.last_layout.mode == "catalog"


def test_search_with_fts_syntax_in_the_question_matches_words_only(tmp_path):
    assert (
        match_expression('refund* OR "x" NEAR(a b) col:val')
        == '"refund" OR "x" OR "near" OR "b" OR "col" OR "val"'
    )
    index = SchemaIndex(tmp_path / "i.sqlite")
    index.rebuild([TableInfo(name="fin_refunds")], "f")
    assert index.search('refund*" OR (') == [
        ("fin_refunds", pytest.approx(index.search("refund")[0][1]))
    ]


def test_names_split_on_underscores_and_case():
    assert split_name("fact_SalesDaily") == ["fact", "sales", "daily"]
    assert split_name("customerOrderItems2") == ["customer", "order", "items", "2"]
    assert split_name("HTTPStatus") == ["http", "status"]


def test_secret_like_column_names_are_never_sampled():
    words = SqlSettings().sample_secret_words
    for name in [
        "password_hash",
        "api_token",
        "ApiKey",
        "ssn",
        "client_secret",
        "card_number",
        "user_email",
    ]:
        assert is_secret(name, words), name
    for name in ["order_status", "channel", "segment", "country_code"]:
        assert not is_secret(name, words), name


@pytest.fixture
def statuses(tmp_path) -> Path:
    path = tmp_path / "statuses.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, order_status TEXT, note TEXT, "
            "api_token TEXT)"
        )
        conn.executemany(
            "INSERT INTO orders VALUES (?, ?, ?, ?)",
            [
                (i, ["open", "shipped", "cancelled"][i % 3], f"note {i}", f"tok{i % 2}")
                for i in range(60)
            ],
        )
    return path


def test_low_cardinality_text_columns_show_their_values_and_secret_ones_do_not(statuses, tmp_path):
    resource = open_sqlite(statuses, tmp_path)
    text = resource.get_prompt(PromptBudget(question="cancelled orders"))
    assert "order_status TEXT  -- values: 'cancelled', 'open', 'shipped'" in text
    assert (
        "tok0" not in text and "note 1" not in text
    )  # a secret-like name; too many distinct values
    assert resource.schema_index.samples("orders") == {
        "order_status": ["cancelled", "open", "shipped"]
    }


def test_a_datasource_can_turn_sample_values_off(statuses, tmp_path):
    resource = open_sqlite(statuses, tmp_path, sample_values=False)
    text = resource.get_prompt(PromptBudget(question="cancelled orders"))
    assert "values:" not in text and resource.schema_index.samples("orders") is None


def test_sample_values_are_read_through_the_guard_with_its_time_limit(statuses, tmp_path):
    resource = open_sqlite(statuses, tmp_path)
    seen = []
    query = resource.query
    resource.query = lambda sql, **kw: seen.append((sql, kw)) or query(sql, **kw)
    resource.get_prompt(PromptBudget(question="cancelled orders"))
    assert seen and all(kw == {"timeout_s": resource.settings.sample_timeout_s} for _, kw in seen)
    assert all("LIMIT 10000" in sql for sql, _ in seen)


def test_comments_render_beside_the_table_and_column():
    table = TableInfo(
        name="t",
        comment="one row per order",
        columns=[ColumnInfo(name="c", type="TEXT", comment="status", samples=["a", "b"])],
    )
    assert (
        table.render()
        == "t (rows unknown, 1 columns)  -- one row per order\n  c TEXT  -- status; values: 'a', 'b'"
    )


# --- the database's own comments, and the fingerprint, per engine ------------------------------

COMMENTED = {
    "duckdb": [
        "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, status VARCHAR)",
        "COMMENT ON TABLE orders IS 'one row per order'",
        "COMMENT ON COLUMN orders.status IS 'lifecycle'",
    ],
    "postgresql": [
        "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, status TEXT)",
        "COMMENT ON TABLE orders IS 'one row per order'",
        "COMMENT ON COLUMN orders.status IS 'lifecycle'",
    ],
    "mariadb": [
        "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, status VARCHAR(20) COMMENT 'lifecycle') "
        "COMMENT='one row per order'"
    ],
}
RECOMMENT = {
    "duckdb": "COMMENT ON TABLE orders IS 'one row per sales order'",
    "postgresql": "COMMENT ON TABLE orders IS 'one row per sales order'",
    "mariadb": "ALTER TABLE orders COMMENT='one row per sales order'",
}


@pytest.fixture(params=["duckdb", "postgresql", "mariadb"])
def commented(request, tmp_path):
    """(url, config, run(sql)) of a one-table database with comments on the engine."""
    from tests.sql.conftest import mariadb_admin, mariadb_available

    engine = request.param
    if engine == "duckdb":
        import duckdb

        path = tmp_path / "c.duckdb"

        def run(sql: str) -> None:
            with duckdb.connect(str(path)) as conn:
                conn.execute(sql)

        for sql in COMMENTED[engine]:
            run(sql)
        yield f"duckdb:///{path}", {}, run
        return
    name = f"assay_i37_{uuid.uuid4().hex[:10]}"
    if engine == "postgresql":
        require(pg_available(), "PostgreSQL at 127.0.0.1:5432")

        def run(sql: str) -> None:
            with pg_admin() as conn:
                conn.execute(f'SET search_path = "{name}"')
                conn.execute(sql)

        with pg_admin() as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        try:
            for sql in COMMENTED[engine]:
                run(sql)
            yield (
                f"{PG_BASE}?options=-csearch_path%3D{name}",
                {"allow_privileged": True, "schemas": [name]},
                run,
            )
        finally:
            with pg_admin() as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        return
    require(mariadb_available(), "MariaDB at 127.0.0.1:3306")

    def run(sql: str) -> None:
        conn = mariadb_admin(name)
        try:
            conn.cursor().execute(sql)
        finally:
            conn.close()

    admin = mariadb_admin()
    admin.cursor().execute(f"CREATE DATABASE `{name}`")
    admin.close()
    try:
        for sql in COMMENTED[engine]:
            run(sql)
        yield f"mariadb://root@127.0.0.1:3306/{name}", {"allow_privileged": True}, run
    finally:
        admin = mariadb_admin()
        admin.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        admin.close()


def test_database_comments_are_read_and_a_changed_comment_rebuilds_the_index(
    commented, tmp_path, request
):
    url, config, run = commented
    engine = request.node.callspec.params["commented"]

    def open_it() -> DatabaseResource:
        return DatabaseResource("c", url, config=DatasourceConfig(url=url, **config), home=tmp_path)

    first = open_it()
    try:
        orders = first.table("orders")
        assert orders.comment == "one row per order"
        assert {c.name: c.comment for c in orders.columns}["status"] == "lifecycle"
        assert [t.name for t in first.search_tables("lifecycle")] == ["orders"]
    finally:
        first.close()
    same = open_it()
    try:
        same.tables()
        assert same.index_state == "fresh", engine
    finally:
        same.close()
    run(RECOMMENT[engine])
    changed = open_it()
    try:
        assert (
            changed.table("orders").comment == "one row per sales order"
            and changed.index_state == "rebuilt"
        )
    finally:
        changed.close()
