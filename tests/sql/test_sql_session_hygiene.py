"""Session hygiene on pooled connections: reset after every statement, verified read-only at checkout.

With the parser patched out (``parser_bypassed``), a statement leaves state in
its session (an advisory lock, a ``GET_LOCK``, a prepared statement, a user
variable, a changed ``sql_mode``...); the next statement on the same pooled
connection (``pool_size=1``; the session id proves it is the same) sees none
of it. A connection whose read-only flag was switched off behind the pool's
back, or whose reset failed, is discarded: the next statement runs on a new
session and the old one is gone from the server.
"""

from __future__ import annotations

import time
import uuid

import pytest

from assay.plugins.sql.errors import SqlError
from tests.sql.conftest import mariadb_admin, new_db, pg_admin

SESSION_ID = {"postgresql": "SELECT pg_backend_pid()", "mariadb": "SELECT CONNECTION_ID()"}


def _sid(db, engine: str) -> int:
    return db.query(SESSION_ID[engine]).rows[0][0]


def _gone(engine: str, sid: int) -> bool:
    """The server no longer has session ``sid`` (waits up to 5 s for the close to land)."""
    for _ in range(50):
        if engine == "postgresql":
            with pg_admin() as conn:
                alive = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (sid,)
                ).fetchone()[0]
        else:
            conn = mariadb_admin()
            try:
                with conn.cursor() as cur:
                    cur.execute(
                        "SELECT count(*) FROM information_schema.PROCESSLIST WHERE ID = %s", (sid,)
                    )
                    alive = cur.fetchone()[0]
            finally:
                conn.close()
        if not alive:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(params=["postgresql", "mariadb"])
def server(request) -> str:
    return request.param


@pytest.fixture
def one_connection(server, request):
    db = new_db(server, request, pool_size=1)
    yield db
    db.close()


def test_postgres_advisory_locks_are_released_when_the_statement_ends(request, parser_bypassed):
    db = new_db("postgresql", request, pool_size=1)
    key = uuid.uuid4().int % 2**31
    try:
        sid = db.query(
            f"SELECT pg_backend_pid(), pg_advisory_lock({key}), pg_advisory_lock_shared({key + 1}), "
            f"pg_try_advisory_lock({key + 2})"
        ).rows[0][0]
        with pg_admin() as admin:
            held = admin.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid IN (%s, %s, %s)",
                (key, key + 1, key + 2),
            ).fetchone()[0]
        assert held == 0
        again = db.query(
            "SELECT pg_backend_pid(), (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() "
            "AND locktype = 'advisory')"
        ).rows[0]
        assert again == (sid, 0)  # the same pooled session, reset rather than replaced
    finally:
        db.close()


def test_postgres_prepared_statements_and_session_settings_do_not_survive(request, parser_bypassed):
    db = new_db("postgresql", request, pool_size=1)
    try:
        sid = _sid(db, "postgresql")
        db.query("PREPARE assay_leak AS SELECT 1")
        db.query(
            "SELECT set_config('assay.leak', 'x', false), set_config('search_path', 'pg_catalog', false)"
        )
        row = db.query(
            "SELECT pg_backend_pid(), (SELECT count(*) FROM pg_prepared_statements WHERE name = 'assay_leak'), "
            "coalesce(current_setting('assay.leak', true), ''), current_setting('default_transaction_read_only'), "
            "(SELECT count(*) FROM pg_settings WHERE source = 'session' AND name NOT IN "
            "('default_transaction_read_only', 'standard_conforming_strings') "
            "AND name NOT LIKE 'transaction_%%' AND name <> 'statement_timeout')"
        ).rows[0]  # begin sets it for the statement
        assert row == (sid, 0, "", "on", 0)
        assert (
            db.query("SELECT count(*) FROM orders").rows[0][0] > 0
        )  # search_path is the datasource's again
    finally:
        db.close()


def test_mariadb_get_lock_variables_and_sql_mode_do_not_survive(request, parser_bypassed):
    db = new_db("mariadb", request, pool_size=1)
    lock = f"assay_{uuid.uuid4().hex[:12]}"
    try:
        sid = db.query(f"SELECT CONNECTION_ID(), GET_LOCK('{lock}', 0)").rows[0][0]
        admin = mariadb_admin()
        try:
            with admin.cursor() as cur:
                cur.execute("SELECT IS_USED_LOCK(%s)", (lock,))
                assert cur.fetchone()[0] is None  # released when the statement ended
        finally:
            admin.close()
        db.query("SET @assay_leak = 42")
        db.query("SET SESSION sql_mode = 'ANSI_QUOTES'")
        db.query("SET SESSION max_join_size = 7")
        row = db.query(
            f"SELECT CONNECTION_ID(), @assay_leak, @@session.sql_mode = @@global.sql_mode, "
            f"@@session.max_join_size = @@global.max_join_size, IS_FREE_LOCK('{lock}'), "
            "@@session.tx_read_only"
        ).rows[0]
        assert row == (sid, None, 1, 1, 1, 1)
    finally:
        db.close()


def test_mariadb_read_only_switched_off_by_a_statement_does_not_reach_the_next(
    request, parser_bypassed
):
    db = new_db("mariadb", request, pool_size=1)
    table = f"assay_evil_{uuid.uuid4().hex[:8]}"
    try:
        db.query("SET @@session.tx_read_only = 0")
        with pytest.raises(
            SqlError
        ) as refused:  # the session is read-only again: the server refuses
            db.query(f"CREATE TABLE {table} (a int)")
        assert "read" in refused.value.message.lower()
        assert (
            db.query(
                f"SELECT count(*) FROM information_schema.tables WHERE table_name = '{table}'"
            ).rows[0][0]
            == 0
        )
        assert db.query("SELECT @@session.tx_read_only").rows[0][0] == 1
    finally:
        db.close()


def _switch_read_only_off(db, engine: str) -> None:
    """Behind the pool's back (no statement, no reset): the pooled session is made read-write."""
    fairy = db.executor().pool.connect()
    raw = fairy.dbapi_connection
    if engine == "postgresql":
        raw.rollback()
        raw.autocommit = True
        raw.execute("SET default_transaction_read_only = off")
        raw.autocommit = False
    else:
        with raw.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION READ WRITE")
    fairy.close()


def test_a_connection_whose_read_only_flag_was_switched_off_is_discarded(server, one_connection):
    db = one_connection
    before = _sid(db, server)
    _switch_read_only_off(db, server)
    after = _sid(db, server)
    assert after != before  # the spoiled session was not used ...
    assert _gone(server, before)  # ... and was closed, not put back
    flag = (
        "current_setting('default_transaction_read_only')"
        if server == "postgresql"
        else "@@session.tx_read_only"
    )
    assert db.query(f"SELECT {flag}").rows[0][0] in ("on", 1)
    assert _sid(db, server) == after  # the new session is pooled as usual


def test_a_connection_whose_reset_fails_is_discarded(server, one_connection, monkeypatch):
    db = one_connection
    before = _sid(db, server)

    def broken(raw):
        raise RuntimeError("reset failed")

    monkeypatch.setattr(db.engine, "reset", broken)
    assert _sid(db, server) == before  # this statement ran; its reset failed
    monkeypatch.undo()
    after = _sid(db, server)
    assert after != before
    assert _gone(server, before)


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_file_engines_verify_their_sessions_at_checkout(engine, request):
    db = new_db(engine, request, pool_size=1)
    try:
        fairy = db.executor().pool.connect()
        assert db.engine.verify(fairy.dbapi_connection) == []
        fairy.close()
        assert db.query("SELECT 1").rows == [(1,)]
    finally:
        db.close()


def test_duckdb_cursor_state_does_not_survive_into_the_next_statement(request, parser_bypassed):
    db = new_db("duckdb", request, pool_size=1)
    try:
        for sql in (
            "SET VARIABLE assay_leak = 42",
            "CREATE TEMP TABLE assay_leak AS SELECT 1 AS a",
            "CREATE TEMP MACRO assay_leak_m(a) AS a + 1",
            "SET search_path = 'temp'",
        ):
            db.query(sql)
            row = db.query(
                "SELECT getvariable('assay_leak'), (SELECT count(*) FROM duckdb_tables() WHERE temporary), "
                "(SELECT count(*) FROM duckdb_functions() WHERE database_name = 'temp'), "
                "current_setting('search_path')"
            ).rows[0]
            assert row == (None, 0, 0, ""), sql
        assert db.query("SELECT count(*) FROM orders").rows[0][0] > 0
    finally:
        db.close()


def test_sqlite_savepoint_left_open_is_rolled_back(request, parser_bypassed):
    db = new_db("sqlite", request, pool_size=1)
    try:
        db.query("SAVEPOINT assay_leak")
        fairy = db.executor().pool.connect()
        assert fairy.dbapi_connection.in_transaction is False
        fairy.close()
        assert db.query("SELECT count(*) FROM orders").rows[0][0] > 0
    finally:
        db.close()
