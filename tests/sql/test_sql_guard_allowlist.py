"""The allow-list guard (issue 12): names resolved as the server does, executable comments, honest codes."""

from __future__ import annotations

import pytest

from assay.plugins.sql.allowlist import FUNCTIONS, NEVER
from assay.plugins.sql.errors import (
    SQL_AMBIGUOUS_BACKSLASH,
    SQL_AMBIGUOUS_COMMENT,
    SQL_QUERY_FAILED,
    SQL_READ_ONLY_REQUIRED,
    SqlError,
)
from assay.plugins.sql.guard import check_read_only
from assay.plugins.sql.settings import DatasourceConfig
from tests.sql.conftest import PG_BASE, pg_admin, unique


def refusal(sql: str, dialect: str, **kw) -> str:
    with pytest.raises(SqlError) as info:
        check_read_only(sql, dialect, **kw)
    assert info.value.code == SQL_READ_ONLY_REQUIRED, info.value.message
    return info.value.message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT U&\"\\0070g_read_file\"('/etc/passwd')",
        "SELECT U&\"!0070g_read_file\" UESCAPE '!'('/etc/passwd')",
        "SELECT U&\"\\+000070g_read_file\"('/etc/passwd')",
        "SELECT pg_catalog.U&\"\\0070g_read_file\"('/etc/passwd')",
        "SELECT PG_CATALOG.PG_READ_FILE('/etc/passwd')",
    ],
)
def test_postgres_unicode_escaped_and_qualified_names_resolve_to_the_function_they_name(sql):
    assert "pg_read_file()" in refusal(sql, "postgresql")


@pytest.mark.parametrize(
    "sql",
    [
        'SELECT U&"\\zzzz"(1)',  # not a valid escape: PostgreSQL itself would refuse it
        "SELECT U&\"x\" UESCAPE '+'(1)",  # + cannot be the escape character
        "SELECT 'unterminated",
    ],
)
def test_names_and_literals_that_cannot_be_resolved_are_refused(sql):
    with pytest.raises(SqlError) as info:
        check_read_only(sql, "postgresql")
    assert info.value.code in (SQL_READ_ONLY_REQUIRED, SQL_QUERY_FAILED)
    if info.value.code == SQL_READ_ONLY_REQUIRED:
        assert "cannot be resolved" in info.value.message


@pytest.mark.parametrize(
    "sql",
    [
        # the comment before the dot must end at its own */, not at the one before UESCAPE
        "SELECT U&\"pg_catalog\"/* c */.U&\"pg_read_file\"/* c */UESCAPE '!'('/etc/passwd')",
        "SELECT U&\"lower\"/* c */.U&\"pg_read_file\"/* c */UESCAPE '!'('/etc/passwd')",
        "SELECT U&\"pg_catalog\"-- c\n.U&\"!0070g_read_file\"-- c\nUESCAPE -- c\n'!'('/etc/passwd')",
    ],
)
def test_a_comment_between_unicode_escaped_name_parts_does_not_hide_the_function(sql):
    assert "pg_read_file()" in refusal(sql, "postgresql")


def test_a_nested_comment_between_name_parts_is_refused_before_the_parse():
    sql = "SELECT U&\"pg_catalog\"/* a /* nested */ b */.U&\"pg_read_file\" UESCAPE '!'('/etc/passwd')"
    with pytest.raises(SqlError) as info:
        check_read_only(sql, "postgresql")
    assert info.value.code == SQL_AMBIGUOUS_COMMENT


def test_uescape_without_a_one_character_literal_cannot_be_resolved():
    assert "cannot be resolved" in refusal('SELECT U&"x" UESCAPE /* c */ 1', "postgresql")


def test_a_quoted_postgres_name_is_case_sensitive_like_the_server():
    check_read_only('SELECT "sum"(1), SUM(2), pg_catalog.sum(3)', "postgresql")
    assert "Sum()" in refusal('SELECT "Sum"(1)', "postgresql")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT ts_stat('SELECT 1')",
        "SELECT ts_rewrite('a'::tsquery, 'SELECT 1')",
        "SELECT query_to_xml('SELECT 1', true, true, '')",
        "SELECT * FROM dblink('x', 'SELECT 1') AS t(a int)",
    ],
)
def test_functions_that_run_sql_text_are_never_allowed(sql):
    assert "never allowed" in refusal(sql, "postgresql")


@pytest.mark.parametrize(
    "name", ["ts_stat", "query_to_xml", "dblink_exec", "pg_read_file", "query", "load_file"]
)
def test_allow_functions_cannot_admit_a_function_that_runs_sql_text(name):
    with pytest.raises(ValueError, match="never allowed"):
        DatasourceConfig(url="postgresql://x/y", allow_functions=[name])
    assert "never allowed" in refusal(f"SELECT {name}('x')", "postgresql", allow_functions=[name])


def test_allow_functions_extends_the_allow_list_by_name_and_by_schema():
    assert "fiscal_quarter()" in refusal("SELECT fiscal_quarter(now())", "postgresql")
    check_read_only(
        "SELECT fiscal_quarter(now())", "postgresql", allow_functions=["fiscal_quarter"]
    )
    assert "finance.net_margin()" in refusal(
        "SELECT finance.net_margin(1)", "postgresql", allow_functions=["net_margin"]
    )
    check_read_only(
        "SELECT finance.net_margin(1)", "postgresql", allow_functions=["finance.net_margin"]
    )
    with pytest.raises(ValueError):
        DatasourceConfig(url="postgresql://x/y", allow_functions=["not a name()"])


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1 /*!50000 , LOAD_FILE('/etc/passwd') */",
        "SELECT 1 /*M!100000 , LOAD_FILE('/etc/passwd') */",
        "SELECT /*+ SET_VAR(sql_mode='') */ 1",
        "SELECT 1 -- /*! , LOAD_FILE('/etc/passwd') */",  # in a comment too: only strings and quoted names are data
        "SELECT 1 --/*! , LOAD_FILE('/etc/passwd') */",  # MariaDB: -- without a space is not a comment
    ],
)
@pytest.mark.parametrize("dialect", ["mysql", "mariadb"])
def test_mysql_executable_comments_are_refused_outright(sql, dialect):
    assert "executable comment" in refusal(sql, dialect)


def test_executable_comment_openers_are_plain_comments_elsewhere():
    check_read_only("SELECT 1 /*!50000 , x */", "postgresql")


@pytest.mark.parametrize("dialect", ["mysql", "mariadb"])
def test_executable_comment_openers_inside_string_literals_are_data(dialect):
    check_read_only("SELECT '/*+ not a hint */' AS s, '/*!' AS t, `/*!x` FROM orders", dialect)


@pytest.mark.parametrize(
    "dialect,sql,what",
    [
        ("postgresql", "SELECT * FROM pg_authid", "pg_authid"),
        ("postgresql", "SELECT * FROM pg_catalog.pg_shadow", "pg_shadow"),
        ("postgresql", "SELECT * FROM pg_stat_activity", "pg_stat_activity"),
        ("mariadb", "SELECT * FROM mysql.user", "mysql.user"),
        ("mariadb", "SELECT * FROM information_schema.processlist", "processlist"),
        ("sqlite", "SELECT * FROM sqlite_dbpage", "sqlite_dbpage"),
        ("duckdb", "SELECT * FROM duckdb_secrets()", "duckdb_secrets"),
    ],
)
def test_system_views_off_the_allow_list_are_refused(dialect, sql, what):
    assert what in refusal(sql, dialect)


@pytest.mark.parametrize(
    "dialect,sql",
    [
        ("postgresql", "SELECT * FROM pg_catalog.pg_tables"),
        ("postgresql", "SELECT * FROM information_schema.columns"),
        ("postgresql", "SELECT * FROM myschema.pg_like_name"),
        ("mariadb", "SELECT * FROM information_schema.tables"),
        ("sqlite", "SELECT * FROM sqlite_master"),
        ("duckdb", "SELECT * FROM duckdb_tables()"),
    ],
)
def test_catalog_views_on_the_allow_list_are_accepted(dialect, sql):
    check_read_only(sql, dialect)


def test_operator_forms_are_allowed_only_over_pg_catalog():
    check_read_only("SELECT 1 OPERATOR(pg_catalog.+) 2", "postgresql")
    assert "OPERATOR(public.+)" in refusal("SELECT 1 OPERATOR(public.+) 2", "postgresql")


@pytest.mark.parametrize(
    "dialect,sql,kind",
    [
        ("postgresql", "SHOW search_path", "SHOW"),
        ("postgresql", "SHOW ALL", "SHOW"),
        ("mariadb", "VALUES (1,'a'),(2,'b')", "SELECT"),
        ("mariadb", "SHOW TABLES", "SHOW"),
        ("duckdb", "PIVOT t ON a USING sum(b)", "PIVOT"),
        ("duckdb", "SUMMARIZE t", "SUMMARIZE"),
    ],
)
def test_read_only_statement_kinds_refused_before_are_accepted(dialect, sql, kind):
    assert check_read_only(sql, dialect).kind == kind


def test_show_kinds_that_reveal_other_sessions_are_refused():
    assert "PROCESSLIST" in refusal("SHOW FULL PROCESSLIST", "mariadb")


def test_a_user_variable_assignment_is_refused_on_mariadb():
    assert ":=" in refusal("SELECT @x := 1", "mariadb")


@pytest.mark.parametrize("dialect", ["postgresql", "mariadb", "sqlite", "duckdb"])
def test_a_write_the_parser_cannot_read_is_still_a_read_only_refusal_not_a_syntax_error(dialect):
    assert "INSERT" in refusal("INSERT INTO t VALUES (1) ON SOMETHING WEIRD", dialect)


def test_every_allow_list_is_disjoint_from_never():
    for dialect, names in FUNCTIONS.items():
        assert not (names & NEVER), dialect


def test_allow_functions_admits_a_users_own_function_on_postgres():
    from assay.plugins.sql.resource import DatabaseResource
    from tests.conftest import require
    from tests.sql.conftest import pg_available

    require(pg_available(), "PostgreSQL at 127.0.0.1:5432")
    schema = unique()
    with pg_admin() as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(
            f'CREATE FUNCTION "{schema}".assay_double(int) RETURNS int AS $$ SELECT $1 * 2 $$ '
            "LANGUAGE sql IMMUTABLE"
        )
    url = f"{PG_BASE}?options=-csearch_path%3D{schema}"
    plain = DatabaseResource("plain", url, config=DatasourceConfig(url=url, allow_privileged=True))
    extended = DatabaseResource(
        "own",
        url,
        config=DatasourceConfig(url=url, allow_functions=["assay_double"], allow_privileged=True),
    )
    try:
        with pytest.raises(SqlError) as info:
            plain.query("SELECT assay_double(21)")
        assert info.value.code == SQL_READ_ONLY_REQUIRED and "assay_double()" in info.value.message
        assert extended.query("SELECT assay_double(21)").rows == [(42,)]
    finally:
        plain.close()
        extended.close()
        with pg_admin() as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def test_explain_options_are_read_and_analyze_in_any_spelling_is_refused():
    assert (
        check_read_only("EXPLAIN (FORMAT JSON, COSTS OFF) SELECT 1", "postgresql").kind
        == "explain SELECT"
    )
    assert check_read_only("EXPLAIN FORMAT=JSON SELECT 1", "mariadb").kind == "explain SELECT"
    assert "ANALYZE" in refusal("EXPLAIN (FORMAT JSON, ANALYSE) SELECT 1", "postgresql")
    assert "pg_read_file()" in refusal(
        "EXPLAIN (FORMAT JSON) SELECT pg_read_file('x')", "postgresql"
    )


@pytest.mark.parametrize("dialect", ["mysql", "mariadb"])
def test_mysql_text_that_reads_differently_without_backslash_escapes_is_refused(dialect):
    # with NO_BACKSLASH_ESCAPES the server would end the string at \' and run load_file
    hidden = "SELECT 'a\\', load_file(''/etc/passwd''), ''' AS x"
    with pytest.raises(SqlError) as info:
        check_read_only(hidden, dialect)
    assert (
        info.value.code == SQL_AMBIGUOUS_BACKSLASH and "NO_BACKSLASH_ESCAPES" in info.value.message
    )
    check_read_only(
        "SELECT 'a\\\\d' AS pattern, 'it''s' AS quote, regexp_like('x', '^\\w+$')", dialect
    )


# Names sqlglot turns into keyword constructs without keeping the name's position (its FUNCTION_PARSERS and a
# few predicates): the guard allows them by construct, not by name. Each was reviewed: a pure built-in, or a
# name the server does not have (it then fails there). A sqlglot upgrade that adds one fails this test.
REVIEWED_KEYWORD_CONSTRUCTS = {
    "ARGMAX",
    "ARGMIN",
    "ARG_MAX",
    "ARG_MIN",
    "MAX_BY",
    "MIN_BY",
    "CHAR",
    "CHR",
    "GLOB",
    "LIKE",
    "IF",
    "DECODE",
    "INITCAP",
    "NORMALIZE",
    "OVERLAY",
    "STRING_AGG",
    "STRINGAGG",
    "JSONB_EXISTS",
    "JSON_OBJECTAGG",
    "JSON_TABLE",
    "JSON_VALUE",
    "XMLELEMENT",
    "SCOPE_RESOLUTION",
}


@pytest.mark.parametrize("dialect", ["postgresql", "mysql", "sqlite", "duckdb"])
def test_every_name_sqlglot_knows_is_either_on_the_allow_list_refused_or_a_reviewed_keyword(
    dialect,
):
    from assay.plugins.sql.dialects import DIALECTS

    parser = DIALECTS[dialect].parser_class
    unexpected = set()
    for name in sorted(set(parser.FUNCTIONS) | set(parser.FUNCTION_PARSERS)):
        for args in ("1", "1, 2", "'a', 'b', 'c'"):
            try:
                check_read_only(f"SELECT {name}({args})", dialect)
            except SqlError:
                continue
            if (
                name.lower() not in FUNCTIONS[dialect]
                and name.upper() not in REVIEWED_KEYWORD_CONSTRUCTS
            ):
                unexpected.add(name)
            break
    assert unexpected == set()
