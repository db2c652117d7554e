"""Privileged logins are refused when the pool opens, unless the datasource is marked allow_privileged.

Both paths on real servers: the superuser/root login refused by default and
accepted (every result then says ``privileged_login``) with
``allow_privileged``; a least-privilege login accepted; logins that hold one
dangerous role or privilege (created here, dropped afterwards) refused; and
``assay db doctor`` says which and why.
"""

from __future__ import annotations

import pytest

from assay.plugins.sql.errors import SQL_DATASOURCE_PRIVILEGED, SqlError
from assay.plugins.sql.resource import DatabaseResource
from assay.plugins.sql.settings import DatasourceConfig
from tests.sql.conftest import (
    admin_url_for,
    create_mariadb_user,
    drop_mariadb_user,
    drop_pg_role,
    pg_admin,
    unique,
    url_for,
)
from tests.sql.test_sql_settings_cli import run_cli

SERVERS = ["postgresql", "mariadb"]


def _resource(url: str, *, allow: bool = False, name: str = "warehouse") -> DatabaseResource:
    return DatabaseResource(name, url, config=DatasourceConfig(url=url, allow_privileged=allow))


@pytest.mark.parametrize("engine", SERVERS)
def test_superuser_login_is_refused_by_default_with_a_least_privilege_hint(engine, request):
    db = _resource(admin_url_for(engine, request))
    try:
        with pytest.raises(SqlError) as caught:
            db.query("SELECT 1")
        assert caught.value.code == SQL_DATASOURCE_PRIVILEGED
        expected = "SUPERUSER" if engine == "postgresql" else "ALL PRIVILEGES"  # root: ALL ON *.*
        assert expected in caught.value.message and expected in str(
            caught.value.details["privileges"]
        )
        assert ("CREATE ROLE" if engine == "postgresql" else "CREATE USER") in caught.value.hint
        assert "allow_privileged" in caught.value.hint
        with pytest.raises(SqlError) as again:  # fail-closed every time, not only the first
            db.tables()
        assert again.value.code == SQL_DATASOURCE_PRIVILEGED
        assert db.executor()._pool is None  # the pool was closed, nothing kept open
    finally:
        db.close()


@pytest.mark.parametrize("engine", SERVERS)
def test_superuser_login_refused_through_the_tool(engine, request, kernel):
    kernel.attach(_resource(admin_url_for(engine, request)))
    result = kernel.call_tool("sql_query", {"sql": "SELECT 1 AS one"})
    assert not result.success and result.error_code == SQL_DATASOURCE_PRIVILEGED
    # The login is privileged, and the metadata says so beside the privileges (nothing ran as it: allowed false).
    assert result.metadata["privileged_login"] is True and result.metadata["allowed"] is False
    assert result.metadata["privileges"]


@pytest.mark.parametrize("engine", SERVERS)
def test_allow_privileged_accepts_the_superuser_and_every_result_says_so(engine, request, kernel):
    kernel.attach(_resource(admin_url_for(engine, request), allow=True))
    ok = kernel.call_tool("sql_query", {"sql": "SELECT count(*) AS n FROM orders"})
    assert ok.success, ok.message
    assert ok.data["privileged_login"] is True
    assert "WARNING privileged_login" in ok.for_model()
    failed = kernel.call_tool("sql_query", {"sql": "SELECT no_such_column FROM orders"})
    assert not failed.success
    assert failed.metadata["privileged_login"] is True
    assert "WARNING privileged_login" in failed.for_model()
    for tool, args in (("list_tables", {}), ("describe_table", {"table": "orders"})):
        listed = kernel.call_tool(tool, args)
        assert listed.success and listed.metadata["privileged_login"] is True
        assert "WARNING privileged_login" in listed.for_model()


@pytest.mark.parametrize("engine", SERVERS)
def test_least_privilege_login_is_accepted_and_results_say_not_privileged(engine, request, kernel):
    db = kernel.attach(_resource(url_for(engine, request)))
    ok = kernel.call_tool("sql_query", {"sql": "SELECT count(*) AS n FROM orders"})
    assert ok.success, ok.message
    assert ok.data["privileged_login"] is False and "privileged_login" not in ok.for_model()
    assert db.login is not None and db.login.privileged == []


@pytest.mark.parametrize(
    "grant",
    [
        "pg_read_server_files",
        "pg_write_server_files",
        "pg_execute_server_program",
        "pg_signal_backend",
        "CREATEROLE",
        "EXECUTE pg_read_file",
    ],
)
def test_postgres_login_holding_one_dangerous_role_is_refused(grant, request):
    schema = request.getfixturevalue("pg_schema")
    if schema is None:
        url_for("postgresql", request)  # fails in CI, skips elsewhere
    role = unique("assay_priv")
    with pg_admin() as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        if grant == "CREATEROLE":
            conn.execute(f'ALTER ROLE "{role}" CREATEROLE')
        elif grant.startswith("EXECUTE"):
            conn.execute(f'GRANT EXECUTE ON FUNCTION pg_read_file(text) TO "{role}"')
        else:
            conn.execute(f'GRANT {grant} TO "{role}"')
    db = _resource(f"postgresql://{role}@127.0.0.1:5432/test")
    try:
        with pytest.raises(SqlError) as caught:
            db.query("SELECT 1")
        assert caught.value.code == SQL_DATASOURCE_PRIVILEGED
        assert grant.split()[-1] in caught.value.message + str(caught.value.details["privileges"])
    finally:
        db.close()
        with pg_admin() as conn:
            if grant.startswith("EXECUTE"):
                conn.execute(f'REVOKE EXECUTE ON FUNCTION pg_read_file(text) FROM "{role}"')
        drop_pg_role(role)


@pytest.mark.parametrize("privilege", ["FILE", "PROCESS", "SUPER", "SHUTDOWN", "CONNECTION ADMIN"])
def test_mariadb_login_holding_one_dangerous_privilege_is_refused(privilege, request):
    database = request.getfixturevalue("mariadb_database")
    if database is None:
        url_for("mariadb", request)
    user = unique("assay_pv")[:32]
    create_mariadb_user(user, f"{privilege} ON *.*")
    db = _resource(f"mariadb://{user}@127.0.0.1:3306/")
    try:
        with pytest.raises(SqlError) as caught:
            db.query("SELECT 1")
        assert caught.value.code == SQL_DATASOURCE_PRIVILEGED
        assert privilege in caught.value.message
    finally:
        db.close()
        drop_mariadb_user(user)


@pytest.mark.parametrize("engine", SERVERS)
def test_db_doctor_says_what_the_login_can_do_and_why(engine, request):
    refused = run_cli("db", "doctor", admin_url_for(engine, request))
    assert refused.exit_code == 1, refused.output
    assert "verdict: refused (SQL_DATASOURCE_PRIVILEGED)" in refused.output
    assert ("SUPERUSER:" if engine == "postgresql" else "ALL PRIVILEGES:") in refused.output
    allowed = run_cli("db", "doctor", admin_url_for(engine, request), "--allow-privileged")
    assert (
        allowed.exit_code == 0
        and "accepted because the datasource is marked allow_privileged" in allowed.output
    )
    fine = run_cli("db", "doctor", url_for(engine, request))
    assert fine.exit_code == 0, fine.output
    assert "privileged: none" in fine.output and "verdict: accepted" in fine.output


def test_cli_sql_allow_privileged_flag(request):
    url = admin_url_for("postgresql", request)
    refused = run_cli("sql", "--db", url, "SELECT 1 AS one")
    assert refused.exit_code == 1 and SQL_DATASOURCE_PRIVILEGED in refused.output
    allowed = run_cli("sql", "--db", url, "--allow-privileged", "SELECT 1 AS one")
    assert allowed.exit_code == 0, allowed.output
    assert "WARNING privileged_login" in allowed.output


def test_db_doctor_on_a_file_database_has_no_login(sqlite_path):
    result = run_cli("db", "doctor", f"sqlite:///{sqlite_path}")
    assert result.exit_code == 0 and "no logins" in result.output
