"""Issue 30's bypasses: text the check read one way and the server another, through the real ``sql_query``.

Three forms, each with variants, each hiding an expression EXPR that the old
check took for part of a string literal while the server ran it:

1. PostgreSQL and DuckDB nest ``/* /* */ */``; the parser did not:
   ``SELECT 1 /*/* */ || ' */ , EXPR --'``.
2. MariaDB ends ``--`` only at an ASCII space or control character; the
   parser also at a Unicode space: ``SELECT 1 --<U+00A0> , EXPR FROM (SELECT
   2 AS <U+00A0>) AS t`` (the space is a column name to MariaDB).
3. PostgreSQL with ``standard_conforming_strings = off`` (a server, database
   or role setting; here the login's connection options): ``SELECT '\\' ' ,
   EXPR --'``.

Each runs as the least-privilege login and as the superuser of an
``allow_privileged`` datasource (SQLite, which reads both comment forms as
the parser did, runs them too, for cover). EXPR kills a witness session of the same
login (PostgreSQL), reads a server file (superusers) or computes a marker
that shows in the result only if it ran. Afterwards: no marker or file text in
any result, the witness alive, no table, lock, setting or file changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.sql.conftest import admin_url_for, pg_admin, url_for
from tests.sql.test_sql_attack_classes import server_state
from tests.sql.test_sql_attack_corpus import fingerprint

# The Unicode spaces MariaDB reads as part of a name (and the old parser as the end of "--").
UNICODE_SPACES = [
    "\u00a0",
    "\u1680",
    "\u2000",
    "\u2001",
    "\u2002",
    "\u2003",
    "\u2004",
    "\u2005",
    "\u2006",
    "\u2007",
    "\u2008",
    "\u2009",
    "\u200a",
    "\u202f",
    "\u205f",
    "\u3000",
]
MARKER = {
    "postgresql": ("upper($$pwned$$)", "PWNED"),
    "duckdb": ("upper($$pwned$$)", "PWNED"),
    "mariadb": ("13 * 1031", "13403"),
    "sqlite": ("upper(char(112, 119, 110, 101, 100))", "PWNED"),
}
HOSTNAME = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").exists() else ""


def nested_comment_forms(expr: str) -> list[str]:
    return [
        f"SELECT 1 /*/* */ || ' */ , {expr} --'",
        f"SELECT 1 /* /* */ || ' */ , {expr} --'",
        f"SELECT 1 AS a /*/* x */ , ' */ , {expr} --' AS b",
        f"SELECT 'a' /*/*/* */ */ || ' */ , {expr} --'",
    ]


def unicode_dash_forms(expr: str) -> list[str]:
    return [f"SELECT 1 --{sp} , {expr} FROM (SELECT 2 AS {sp}) AS t" for sp in UNICODE_SPACES]


def backslash_forms(expr: str) -> list[str]:
    return [
        f"SELECT '\\' ' , {expr} --'",
        f"SELECT '\\' ' , {expr}, ' AS x",
        f"SELECT 'x\\' ' , {expr} --'",
    ]


def attacks(engine: str, exprs: list[str]) -> list[str]:
    if engine == "mariadb":
        return [sql for e in exprs for sql in unicode_dash_forms(e)]
    if (
        engine == "sqlite"
    ):  # SQLite nests no comment and ends "--" nowhere but at a newline: both forms, for cover
        return [sql for e in exprs for sql in nested_comment_forms(e) + unicode_dash_forms(e)]
    out = [sql for e in exprs for sql in nested_comment_forms(e)]
    if engine == "postgresql":
        out += [sql for e in exprs for sql in backslash_forms(e)]
    return out


def witness_session(url: str) -> Any:
    """A session of the datasource's own login, which the hidden pg_terminate_backend would end."""
    import psycopg

    return psycopg.connect(url.split("?", 1)[0], autocommit=True)


def run_attacks(kernel: Any, engine: str, exprs: list[str], secrets: list[str]) -> list[tuple]:
    """Every attack through sql_query; the ones whose hidden expression showed in the result."""
    slipped = []
    for sql in attacks(engine, exprs):
        result = kernel.call_tool("sql_query", {"sql": sql, "timeout_s": 10})
        shown = (result.content or "") + (result.message or "") + repr(result.data)
        leaked = [s for s in secrets if s and s in shown]
        if leaked:
            slipped.append((sql, result.error_code, leaked))
    return slipped


def assert_never_ran(
    kernel: Any,
    db: Any,
    engine: str,
    exprs: list[str],
    secrets: list[str],
    witness: Any,
    attack_dir: Path,
) -> None:
    """Every attack hiding each of ``exprs``; then no secret in a result, the witness session alive, and no
    table, server state or file changed."""
    before, state = fingerprint(db), server_state(engine)
    try:
        slipped = run_attacks(kernel, engine, exprs, secrets)
        if witness is not None:
            assert witness.execute("SELECT 1").fetchone() == (1,), (
                "the hidden pg_terminate_backend ran"
            )
    finally:
        if witness is not None:
            witness.close()
    assert slipped == [], f"{len(slipped)} hidden expression(s) ran on {engine}: {slipped[:3]}"
    assert fingerprint(db) == before
    assert server_state(engine) == state
    assert list(attack_dir.iterdir()) == []


def with_conforming_strings_off(url: str) -> str:
    """The datasource's URL with standard_conforming_strings off from its connection's start (as a role or
    database setting would have it)."""
    return url + "%20-cstandard_conforming_strings%3Doff"


@pytest.mark.parametrize("engine", ["postgresql", "duckdb", "mariadb", "sqlite"])
def test_text_read_two_ways_never_runs_the_hidden_expression_as_a_least_privilege_login(
    engine, request, kernel, db, attack_dir
):
    from assay.plugins.sql.resource import DatabaseResource
    from assay.plugins.sql.settings import DatasourceConfig

    url = url_for(engine, request)
    if engine == "postgresql":
        url = with_conforming_strings_off(url)
    resource = DatabaseResource("retail", url, config=DatasourceConfig(url=url))
    kernel.attach(resource)
    expr, marker = MARKER[engine]
    exprs, witness = [expr], None
    if engine == "postgresql":
        witness = witness_session(url)
        exprs.append(f"pg_terminate_backend({witness.info.backend_pid})")
    assert_never_ran(kernel, db, engine, exprs, [marker], witness, attack_dir)


@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
def test_text_read_two_ways_never_runs_the_hidden_expression_for_an_allow_privileged_superuser(
    engine, request, kernel, db, attack_dir
):
    from assay.plugins.sql.resource import DatabaseResource
    from assay.plugins.sql.settings import DatasourceConfig

    url = admin_url_for(engine, request)
    if engine == "postgresql":
        url = with_conforming_strings_off(url)
    resource = DatabaseResource(
        "retail", url, config=DatasourceConfig(url=url, allow_privileged=True)
    )
    kernel.attach(resource)
    expr, marker = MARKER[engine]
    if engine == "postgresql":
        witness = pg_admin()
        exprs = [
            expr,
            f"pg_terminate_backend({witness.info.backend_pid})",
            "pg_read_file($$/etc/hostname$$)",
        ]
    else:
        witness = None
        exprs = [expr, "LOAD_FILE(0x2f6574632f686f73746e616d65)"]  # '/etc/hostname'
    assert_never_ran(kernel, db, engine, exprs, [marker, HOSTNAME], witness, attack_dir)


@pytest.fixture
def attack_dir(tmp_path) -> Path:
    target = tmp_path / "attack"
    target.mkdir()
    return target


def test_each_form_is_refused_before_the_parse_with_its_own_code():
    from assay.plugins.sql.errors import SQL_AMBIGUOUS_CHARACTER, SQL_AMBIGUOUS_COMMENT, SqlError
    from assay.plugins.sql.guard import check_read_only

    for dialect in ("postgresql", "duckdb"):
        for sql in nested_comment_forms("version()"):
            with pytest.raises(SqlError) as info:
                check_read_only(sql, dialect)
            assert info.value.code == SQL_AMBIGUOUS_COMMENT and "/*" in info.value.hint
    for sql in unicode_dash_forms("version()"):
        with pytest.raises(SqlError) as info:
            check_read_only(sql, "mariadb")
        assert (
            info.value.code == SQL_AMBIGUOUS_CHARACTER
            and "U+" in info.value.message
            and info.value.hint
        )


def test_the_old_connection_setting_is_overridden_for_every_session(request):
    """A login whose connections start with standard_conforming_strings off gets it on in assay's sessions."""
    from assay.plugins.sql.resource import DatabaseResource
    from assay.plugins.sql.settings import DatasourceConfig

    url = with_conforming_strings_off(url_for("postgresql", request))
    db = DatabaseResource("retail", url, config=DatasourceConfig(url=url))
    try:
        for _ in range(3):  # the first session, then the same one after its reset
            assert db.query("SELECT current_setting('standard_conforming_strings')").rows == [
                ("on",)
            ]
    finally:
        db.close()


def test_mariadb_sessions_never_hold_the_sql_modes_that_change_how_text_is_read(request):
    from assay.plugins.sql.engines.mysql import LEXICAL_MODES
    from assay.plugins.sql.resource import DatabaseResource
    from assay.plugins.sql.settings import DatasourceConfig

    url = (
        url_for("mariadb", request)
        + "?sql_mode=ANSI_QUOTES,NO_BACKSLASH_ESCAPES,PIPES_AS_CONCAT,STRICT_ALL_TABLES"
    )
    db = DatabaseResource("retail", url, config=DatasourceConfig(url=url))
    try:
        for _ in range(3):
            (mode,) = db.query("SELECT @@SESSION.sql_mode").rows[0]
            assert not set(mode.split(",")) & LEXICAL_MODES, mode
        # what the guard reads as a string with a backslash escape, the server reads the same way
        assert db.query("SELECT 'a\\\\b' AS s, \"x\" AS t").rows == [("a\\b", "x")]
    finally:
        db.close()
