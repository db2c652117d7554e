"""Per engine, against the real databases: success, zero rows, syntax errors, runaway queries, writes."""

from __future__ import annotations

import threading
import time

import pytest

from assay.plugins.sql.errors import (
    SQL_QUERY_FAILED,
    SQL_QUERY_TIMEOUT,
    SQL_READ_ONLY_REQUIRED,
    SqlError,
)
from tests.sql.conftest import RUNAWAY, mariadb_admin, new_db, pg_admin


def test_success_returns_rows_columns_and_types(engine, db):
    result = db.query("SELECT store_id, name FROM stores ORDER BY store_id LIMIT 3")
    assert result.columns == ["store_id", "name"]
    assert [r[0] for r in result.rows] == [1, 2, 3]
    assert len(result.column_types) == 2 and result.column_types[0]
    assert result.elapsed_ms > 0


def test_zero_rows_is_a_success_with_columns(engine, db):
    result = db.query("SELECT order_id, total FROM orders WHERE total < 0")
    assert result.rows == [] and result.columns == ["order_id", "total"]


def test_unparseable_text_is_refused_before_the_database(engine, db):
    with pytest.raises(SqlError) as info:
        db.query("SELEC order_id FROM orders")
    # issue 12: a syntax problem (with the parser's position), refused before the database - not "a write"
    assert info.value.code == SQL_QUERY_FAILED
    assert "does not parse" in info.value.message
    assert info.value.details["stage"] == "parser"


def test_syntax_error_from_the_engine_is_sql_query_failed_with_its_message(
    engine, db, parser_bypassed
):
    with pytest.raises(SqlError) as info:
        db.query("SELEC order_id FROM orders")
    assert info.value.code == SQL_QUERY_FAILED
    assert "syntax" in info.value.message.lower() or "parser" in info.value.message.lower()


def test_unknown_column_is_sql_query_failed_naming_it(engine, db):
    with pytest.raises(SqlError) as info:
        db.query("SELECT no_such_column FROM orders")
    assert info.value.code == SQL_QUERY_FAILED
    assert "no_such_column" in info.value.message


def test_connection_is_reusable_after_a_failure(engine, db):
    with pytest.raises(SqlError):
        db.query("SELECT no_such_column FROM orders")
    assert db.query("SELECT count(*) FROM stores").rows[0][0] > 0


def test_writes_are_refused_by_the_parser(engine, db):
    for sql in (
        "DELETE FROM refunds",
        "UPDATE orders SET total = 0",
        "DROP TABLE refunds",
        "CREATE TABLE evil (a int)",
        "INSERT INTO stores SELECT * FROM stores",
    ):
        with pytest.raises(SqlError) as info:
            db.query(sql)
        assert info.value.code == SQL_READ_ONLY_REQUIRED, sql


def test_writes_with_the_parser_bypassed_are_refused_by_the_database(engine, db, parser_bypassed):
    before = db.query("SELECT count(*) FROM refunds").rows[0][0]
    for sql in ("DELETE FROM refunds", "CREATE TABLE evil_probe (a int)", "DROP TABLE refunds"):
        with pytest.raises(SqlError) as info:
            db.query(sql)
        # issue 12: the database refusing a write is SQL_READ_ONLY_REQUIRED, not a failed query
        assert info.value.code == SQL_READ_ONLY_REQUIRED, sql
        assert info.value.details["reason"] == "database"
    assert db.query("SELECT count(*) FROM refunds").rows[0][0] == before
    assert "evil_probe" not in {t.name for t in db.tables(refresh=True)}


# --- runaway queries ---------------------------------------------------------


def _server_running(engine: str, session_id) -> bool:
    """The server's own activity view: is this session still running a statement?"""
    if engine == "postgresql":
        with pg_admin() as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND state = 'active'",
                (session_id,),
            ).fetchone()
        return row[0] > 0
    conn = mariadb_admin()
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM information_schema.processlist WHERE id = %s AND command = 'Query'",
                (session_id,),
            )
            return cur.fetchone()[0] > 0
    finally:
        conn.close()


def test_runaway_query_hits_the_time_limit_and_is_really_stopped(engine, request):
    db = new_db(engine, request, cancel_grace_s=3.0)
    try:
        attempt = db.new_attempt(1.0)
        seen_running = threading.Event()
        if engine in ("postgresql", "mariadb"):

            def watch():
                while not attempt.done and not seen_running.is_set():
                    if attempt.session_id is not None and _server_running(
                        engine, attempt.session_id
                    ):
                        seen_running.set()
                    time.sleep(0.05)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
        started = time.monotonic()
        with pytest.raises(SqlError) as info:
            db.query(RUNAWAY[engine], attempt=attempt)
        returned = time.monotonic()
        error = info.value
        assert error.code == SQL_QUERY_TIMEOUT
        assert error.details["stopped"] is True
        assert "confirmed stopped" in error.message
        assert "check the query plan" in error.hint and "resubmit" in error.hint
        assert 0.9 <= returned - started < 4.0
        if engine in ("postgresql", "mariadb"):
            watcher.join(2)
            assert seen_running.is_set(), "the activity view never showed the query running"
            deadline = time.monotonic() + 1.0
            while _server_running(engine, attempt.session_id) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert not _server_running(engine, attempt.session_id), (
                "still running 1 s after the time limit"
            )
        assert (
            db.query("SELECT count(*) FROM stores").rows[0][0] > 0
        )  # the connection came back usable
    finally:
        db.close()


def test_time_limit_is_lowered_per_call_but_never_raised_past_the_maximum(engine, request):
    db = new_db(engine, request, default_timeout_s=5.0, max_timeout_s=2.0)
    try:
        assert db.effective_timeout(None) == 2.0
        assert db.effective_timeout(1.0) == 1.0
        assert db.effective_timeout(600) == 2.0
    finally:
        db.close()


def test_unconfirmed_stop_says_only_that_cancellation_was_requested(engine, request, monkeypatch):
    db = new_db(engine, request, cancel_grace_s=0.3)
    try:
        real_cancel = db.engine.cancel
        monkeypatch.setattr(
            db.engine, "cancel", lambda raw, sid, pool: None
        )  # the cancel request is lost
        attempt = db.new_attempt(0.5)
        with pytest.raises(SqlError) as info:
            db.query(RUNAWAY[engine], attempt=attempt)
        if (
            engine == "sqlite"
        ):  # SQLite's own progress-handler deadline stops it without the cancel call
            assert info.value.details["stopped"] is True
            return
        assert info.value.code == SQL_QUERY_TIMEOUT
        assert info.value.details["stopped"] is False
        assert "cancellation was requested" in info.value.message
        assert "confirmed stopped" not in info.value.message.replace("not confirmed stopped", "")
        real_cancel(attempt.raw, attempt.session_id, db.executor().pool)  # clean up the runaway
        deadline = time.monotonic() + 5
        while not attempt.done and time.monotonic() < deadline:
            time.sleep(0.02)
        assert attempt.done
    finally:
        db.close()


@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
def test_a_pooled_connection_the_server_killed_is_replaced(engine, request):
    db = new_db(engine, request, pool_size=1)
    try:
        attempt = db.new_attempt(5)
        db.query("SELECT 1", attempt=attempt)
        if engine == "postgresql":
            with pg_admin() as conn:
                conn.execute("SELECT pg_terminate_backend(%s)", (attempt.session_id,))
        else:
            conn = mariadb_admin()
            conn.cursor().execute(f"KILL {int(attempt.session_id)}")
            conn.close()
        time.sleep(0.2)
        again = db.new_attempt(5)
        assert db.query("SELECT count(*) FROM stores", attempt=again).rows[0][0] > 0
        assert again.session_id != attempt.session_id
    finally:
        db.close()
