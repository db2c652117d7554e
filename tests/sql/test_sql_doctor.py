"""``assay db doctor`` says the truth about a login: its privileges, its roles and the settings the guard reads by.

Each test makes its own login (a unique role or user, dropped afterwards) on
the real PostgreSQL/MariaDB servers:

- members of pg_read_all_stats / pg_monitor (who see every session's SQL) and
  of pg_write_all_data are privileged, not "a least-privilege login";
- a MariaDB user with a role it has not enabled (no default role) is judged
  by that role's grants, not refused as "cannot open the datasource";
- a refused login's tool metadata says privileged_login: true beside its
  privileges;
- a role or database default that turns standard_conforming_strings off, a
  sql_mode with ANSI_QUOTES / NO_BACKSLASH_ESCAPES, and a login without
  temp_file_limit are reported, with what an administrator should run.
"""

from __future__ import annotations

import pytest

from assay.plugins.sql.errors import SQL_DATASOURCE_PRIVILEGED, SqlError
from tests.sql.conftest import (
    create_mariadb_user,
    drop_mariadb_user,
    drop_pg_role,
    mariadb_admin,
    pg_admin,
    unique,
    url_for,
)
from tests.sql.test_sql_privileged_logins import _resource
from tests.sql.test_sql_settings_cli import run_cli


@pytest.fixture
def pg_login(request):
    """A PostgreSQL login made by the test (``make(*statements)`` runs them with {role}); dropped afterwards."""
    if request.getfixturevalue("pg_schema") is None:
        url_for("postgresql", request)  # fails in CI, skips elsewhere
    made: list[str] = []

    def make(*statements: str) -> str:
        role = unique("assay_doc")
        with pg_admin() as conn:
            conn.execute(f'CREATE ROLE "{role}" LOGIN')
            for statement in statements:
                conn.execute(statement.format(role=f'"{role}"'))
        made.append(role)
        return role

    yield make
    for role in made:
        drop_pg_role(role)


@pytest.mark.parametrize("member_of", ["pg_read_all_stats", "pg_monitor", "pg_write_all_data"])
def test_doctor_refuses_a_member_of_a_role_that_sees_sessions_or_writes_everything(
    member_of, pg_login
):
    role = pg_login(f"GRANT {member_of} TO {{role}}")
    out = run_cli("db", "doctor", f"postgresql://{role}@127.0.0.1:5432/test")
    assert out.exit_code == 1, out.output
    assert "least-privilege login" not in out.output
    assert (
        f"{member_of}:" in out.output
        and "verdict: refused (SQL_DATASOURCE_PRIVILEGED)" in out.output
    )


def test_refused_login_metadata_says_privileged_beside_its_privileges(pg_login, kernel):
    role = pg_login("GRANT pg_monitor TO {role}")
    kernel.attach(_resource(f"postgresql://{role}@127.0.0.1:5432/test"))
    result = kernel.call_tool("sql_query", {"sql": "SELECT 1 AS one"})
    assert result.error_code == SQL_DATASOURCE_PRIVILEGED
    assert any(p.startswith("pg_monitor:") for p in result.metadata["privileges"])
    assert result.metadata["privileged_login"] is True and result.metadata["allowed"] is False


def test_doctor_reports_standard_conforming_strings_off_as_a_role_default(pg_login):
    role = pg_login("ALTER ROLE {role} SET standard_conforming_strings = off")
    out = run_cli("db", "doctor", f"postgresql://{role}@127.0.0.1:5432/test")
    assert out.exit_code == 0, out.output
    line = next(x for x in out.output.splitlines() if "standard_conforming_strings:" in x)
    assert "WARNING" in line and "role default: standard_conforming_strings=off" in line
    assert f'ALTER ROLE "{role}" SET standard_conforming_strings = on' in out.output


def test_doctor_says_standard_conforming_strings_is_ok_for_a_plain_login(pg_login):
    role = pg_login()
    out = run_cli("db", "doctor", f"postgresql://{role}@127.0.0.1:5432/test")
    assert out.exit_code == 0, out.output
    assert (
        "standard_conforming_strings: on" in out.output
        and "privileged: none (a least-privilege login)" in out.output
    )


def test_doctor_advises_a_temp_file_limit_the_login_cannot_set_itself(pg_login):
    role = pg_login()
    out = run_cli("db", "doctor", f"postgresql://{role}@127.0.0.1:5432/test")
    assert "temp_file_limit: none: WARNING" in out.output
    assert f"ALTER ROLE \"{role}\" SET temp_file_limit = '2048MB';" in out.output
    bounded = pg_login("ALTER ROLE {role} SET temp_file_limit = '1GB'")
    out = run_cli("db", "doctor", f"postgresql://{bounded}@127.0.0.1:5432/test")
    assert "temp_file_limit: 1,024 MB (the login's own bound): ok" in out.output
    assert "SET temp_file_limit" not in out.output


def test_doctor_on_a_login_with_write_grants_does_not_call_it_least_privilege(pg_login, request):
    schema = request.getfixturevalue("pg_schema")
    role = pg_login(
        f'GRANT USAGE ON SCHEMA "{schema}" TO {{role}}',
        f'GRANT INSERT ON ALL TABLES IN SCHEMA "{schema}" TO {{role}}',
    )
    out = run_cli("db", "doctor", f"postgresql://{role}@127.0.0.1:5432/test")
    assert out.exit_code == 0, out.output
    assert (
        "least-privilege login" not in out.output
        and "not least-privilege: it may write" in out.output
    )


# --- MariaDB ---------------------------------------------------------------------------------------------


@pytest.fixture
def mariadb_role_user(request):
    """A user granted a role holding FILE, the role not enabled by default; dropped afterwards."""
    database = request.getfixturevalue("mariadb_database")
    if database is None:
        url_for("mariadb", request)
    user, role = unique("assay_du")[:32], unique("assay_dr")[:32]
    conn = mariadb_admin()
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE ROLE `{role}`")
            cur.execute(f"GRANT FILE ON *.* TO `{role}`")
        create_mariadb_user(user, f"SELECT ON `{database}`.*")
        with conn.cursor() as cur:
            for host in ("%", "localhost", "127.0.0.1"):
                cur.execute(f"GRANT `{role}` TO '{user}'@'{host}'")
        yield user, role, database
    finally:
        drop_mariadb_user(user)
        with conn.cursor() as cur:
            cur.execute(f"DROP ROLE IF EXISTS `{role}`")
        conn.close()


def test_doctor_judges_a_mariadb_role_the_user_has_not_enabled_by_its_grants(mariadb_role_user):
    user, role, database = mariadb_role_user
    url = f"mariadb://{user}@127.0.0.1:3306/{database}"
    out = run_cli("db", "doctor", url)
    assert "SQL_DATASOURCE_UNAVAILABLE" not in out.output and "Access denied" not in out.output, (
        out.output
    )
    assert (
        out.exit_code == 1 and "FILE:" in out.output and f"roles it may use: {role}" in out.output
    )
    db = _resource(url)
    try:
        with pytest.raises(SqlError) as caught:  # the pool refuses it the same way
            db.query("SELECT 1")
        assert caught.value.code == SQL_DATASOURCE_PRIVILEGED and "FILE" in caught.value.message
    finally:
        db.close()


def test_doctor_shows_the_pinned_sql_mode_whatever_the_url_asks_for(request):
    database = request.getfixturevalue("mariadb_database")
    if database is None:
        url_for("mariadb", request)
    user = unique("assay_dm")[:32]
    create_mariadb_user(user, f"SELECT ON `{database}`.*")
    try:
        url = f"mariadb://{user}@127.0.0.1:3306/{database}?init_command=SET+sql_mode%3D%27ANSI_QUOTES%27"
        out = run_cli("db", "doctor", url)
        # the URL asks for ANSI_QUOTES; every assay session's sql_mode is pinned without it (i30's guard)
        assert "sql_mode without ANSI_QUOTES: ok" in out.output, out.output
        assert (
            "sql_mode without NO_BACKSLASH_ESCAPES: ok" in out.output
            and "WARNING" not in out.output
        )
        plain = run_cli("db", "doctor", f"mariadb://{user}@127.0.0.1:3306/{database}")
        assert "sql_mode without ANSI_QUOTES: ok" in plain.output, plain.output
    finally:
        drop_mariadb_user(user)
