"""The guard's own cost is bounded: a length limit before the parse, and the parse inside the call's time limit."""

from __future__ import annotations

import time

import pytest

from tests.sql.conftest import new_db


def in_list(n: int) -> str:
    return (
        "SELECT count(*) FROM orders WHERE order_id IN ("
        + ", ".join(str(i) for i in range(n))
        + ")"
    )


def test_sql_longer_than_max_sql_bytes_is_refused_before_it_is_parsed(request, kernel, monkeypatch):
    from assay.plugins.sql import guard

    kernel.attach(new_db("sqlite", request))
    parsed = []
    real_check = guard._check
    monkeypatch.setattr(guard, "_check", lambda *args: parsed.append(args[0]) or real_check(*args))
    sql = in_list(200_000)  # about 1.3 MB: minutes of parsing and gigabytes before the fix
    assert len(sql) > 1 << 20
    result = kernel.call_tool("sql_query", {"sql": sql})
    assert result.error_code == "SQL_TOO_LONG" and result.metadata["limit_bytes"] == 1 << 20, (
        result.message
    )
    assert parsed == [], "the text was parsed before it was refused"
    assert (
        kernel.call_tool("sql_query", {"sql": "SELECT 1"}).success and len(parsed) == 1
    )  # the counter counts
    assert result.artifacts == []  # nothing was sent, nothing recorded


def test_max_sql_bytes_is_a_setting_and_counts_utf8_bytes(request):
    from assay.plugins.sql.errors import SQL_TOO_LONG, SqlError

    db = new_db("sqlite", request, max_sql_bytes=100)
    try:
        assert db.query("SELECT '" + "a" * 80 + "'").row_count == 1
        with pytest.raises(SqlError) as info:
            db.query("SELECT '" + "é" * 50 + "'")  # 59 characters, 109 bytes
        assert info.value.code == SQL_TOO_LONG and "max_sql_bytes" in info.value.message
    finally:
        db.close()


def test_the_guards_parse_is_stopped_at_the_calls_time_limit(request, kernel):
    kernel.attach(new_db("sqlite", request))
    sql = in_list(120_000)  # under the length limit, seconds of parsing
    assert len(sql) < 1 << 20
    started = time.monotonic()
    result = kernel.call_tool("sql_query", {"sql": sql, "timeout_s": 0.5})
    took = time.monotonic() - started
    assert result.error_code == "SQL_QUERY_TIMEOUT", result.message
    assert result.metadata["stage"] == "guard" and result.metadata["stopped"] is True
    assert "nothing was sent" in result.message
    assert took < 1.5, f"the call took {took:.2f} s for a 0.5 s limit"


def test_time_the_guard_used_is_taken_from_the_statements_limit(request):
    from assay.plugins.sql.errors import SQL_QUERY_TIMEOUT, SqlError
    from tests.sql.conftest import RUNAWAY

    db = new_db("sqlite", request)
    try:
        started = time.monotonic()
        with pytest.raises(SqlError) as info:
            db.query(RUNAWAY["sqlite"], timeout_s=1.0)
        assert info.value.code == SQL_QUERY_TIMEOUT
        assert time.monotonic() - started < 2.0
    finally:
        db.close()


def test_the_deadline_is_checked_in_the_parser_and_only_inside_the_guarded_call():
    from assay.plugins.sql.bounded import Overran, check_deadline, within
    from assay.plugins.sql.guard import check_read_only

    check_deadline()  # outside a guarded call: nothing to stop
    with pytest.raises(Overran):
        within(lambda: check_read_only(in_list(20_000), "postgresql"), 0.01)
    value, took = within(lambda: check_read_only("SELECT 1", "postgresql").sql, 30)
    assert value == "SELECT 1" and took < 30
    check_deadline()  # the deadline went with the call
