"""Memory on huge results: MariaDB streams, a value over the artifact cap is refused, a cut capture says so.

- MariaDB/MySQL rows come through an unbuffered cursor: consuming a large
  result holds about one batch, not the whole result (traced allocations).
- A single text value longer than ``ASSAY_ARTIFACT_MAX_BYTES`` is refused with
  ``SQL_VALUE_TOO_LARGE`` as it arrives, on every engine.
- When the capture stops at the cap, the tool's text, ``truncated`` and
  ``artifact_row_count`` say the artifact holds only the first rows.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from assay import Kernel
from assay.plugins.sql.errors import SQL_VALUE_TOO_LARGE
from tests.sql.conftest import new_db

BIG = {  # one value of 50,000 characters
    "sqlite": "SELECT replace(hex(zeroblob(25000)), '0', 'x') AS big",
    "duckdb": "SELECT repeat('x', 50000) AS big",
    "postgresql": "SELECT repeat('x', 50000) AS big",
    "mariadb": "SELECT repeat('x', 50000) AS big",
}
QUOTES = {  # 15,000 characters that are 30,000 bytes once escaped in the artifact
    "sqlite": "SELECT replace(hex(zeroblob(7500)), '0', '\"') AS q",
    "duckdb": "SELECT repeat('\"', 15000) AS q",
    "postgresql": "SELECT repeat('\"', 15000) AS q",
    "mariadb": "SELECT repeat('\"', 15000) AS q",
}


@pytest.fixture
def capped_kernel(monkeypatch):
    monkeypatch.setenv("ASSAY_ARTIFACT_MAX_BYTES", "20000")
    kernel = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False)
    kernel.start()
    yield kernel
    kernel.close()


def test_a_value_above_the_artifact_cap_is_refused_with_its_own_code(
    engine, request, capped_kernel
):
    capped_kernel.attach(new_db(engine, request))
    run = capped_kernel.new_run()
    result = capped_kernel.call_tool("sql_query", {"sql": BIG[engine]}, run=run)
    assert not result.success and result.error_code == SQL_VALUE_TOO_LARGE, result.message
    assert result.metadata["column"] == "big" and result.metadata["value_size"] == 50000
    assert result.metadata["max_bytes"] == 20000 and "left(col" in result.hint
    assert [r.status for r in run.artifacts.records() if r.kind == "sql"] == ["failed"]
    run.close()


def test_sqlite_long_value_after_numbers_in_the_same_column_is_refused(request, capped_kernel):
    capped_kernel.attach(new_db("sqlite", request))
    sql = (
        "SELECT v FROM (SELECT 1 AS k, 7 AS v UNION ALL SELECT 2, NULL "
        "UNION ALL SELECT 3, replace(hex(zeroblob(25000)), '0', 'x')) ORDER BY k"
    )
    result = capped_kernel.call_tool("sql_query", {"sql": sql}, run=capped_kernel.new_run())
    assert result.error_code == SQL_VALUE_TOO_LARGE, result.message
    assert result.metadata["row"] == 3


def test_sqlite_values_are_not_measured_when_its_own_length_limit_is_under_the_cap(
    request, monkeypatch
):
    # SQLITE_LIMIT_LENGTH (1e9 bytes) is under the default cap (1 GiB): no value can be over it, so sql_query
    # skips measuring each one (on SQLite that costs as much as the capture); under a lower cap it measures.
    import assay.plugins.sql.results as results

    measured = []
    original = results.check_value_sizes
    monkeypatch.setattr(
        results, "check_value_sizes", lambda *a: measured.append(a[2]) or original(*a)
    )
    for cap, expected in ((None, []), ("20000", [20000])):
        if cap:
            monkeypatch.setenv("ASSAY_ARTIFACT_MAX_BYTES", cap)
        kernel = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False)
        kernel.attach(new_db("sqlite", request))
        result = kernel.call_tool(
            "sql_query", {"sql": "SELECT order_id, total FROM orders LIMIT 5"}, run=kernel.new_run()
        )
        kernel.close()
        assert result.success, result.message
        assert measured == expected
        measured.clear()


def test_a_capture_cut_at_the_cap_says_so_in_text_row_count_and_truncated(
    engine, request, capped_kernel
):
    capped_kernel.attach(new_db(engine, request))
    run = capped_kernel.new_run()
    result = capped_kernel.call_tool(
        "sql_query", {"sql": "SELECT order_id, total FROM orders ORDER BY order_id"}, run=run
    )
    assert result.success, result.message
    assert result.data["row_count"] == 2000  # what the query returned
    assert result.data["truncated"] is True and result.data["artifact_complete"] is False
    assert 0 < result.data["artifact_row_count"] < 2000
    assert "TRUNCATED EVIDENCE" in result.content and "ASSAY_ARTIFACT_MAX_BYTES" in result.content
    # One value under the cap whose stored form is over it: the artifact keeps no row, and the tool says so.
    single = capped_kernel.call_tool("sql_query", {"sql": QUOTES[engine]}, run=run)
    assert single.success, single.message
    assert single.data["row_count"] == 1 and single.data["artifact_row_count"] == 0
    assert single.data["truncated"] is True
    assert "keeps only the first 0" in single.content
    run.close()


def test_mariadb_streams_a_large_result_instead_of_holding_it(request):
    db = new_db("mariadb", request, max_result_rows=10**9)
    try:
        attempt = db.new_attempt(60)
        counted = []
        peak = []

        def consume(stream):
            n = 0
            for batch in stream.rows.batches:
                n += len(batch)
            counted.append(n)
            peak.append(tracemalloc.get_traced_memory()[1])
            return "captured"

        attempt.consume = consume
        tracemalloc.start()
        try:
            db.query("SELECT seq, repeat('x', 100) AS pad FROM seq_1_to_300000", attempt=attempt)
        finally:
            tracemalloc.stop()
        assert counted == [300_000]
        # 300,000 rows of ~100 characters are over 50 MB as Python objects; a batch is ~1 MB.
        assert peak[0] < 15 * 2**20, f"peak {peak[0] / 2**20:.1f} MiB"
    finally:
        db.close()


def test_mariadb_row_limit_mid_stream_stops_the_statement_and_the_connection_is_reused(request):
    from assay.plugins.sql.errors import SQL_RESULT_TOO_LARGE, SqlError

    db = new_db("mariadb", request, max_result_rows=5_000, pool_size=1)
    try:
        sid = db.query("SELECT CONNECTION_ID()").rows[0][0]
        attempt = db.new_attempt(30)
        attempt.consume = lambda stream: sum(1 for _ in stream.rows)
        started = time.monotonic()
        with pytest.raises(SqlError) as info:
            db.query("SELECT seq FROM seq_1_to_2000000000", attempt=attempt)
        assert info.value.code == SQL_RESULT_TOO_LARGE
        assert time.monotonic() - started < 10
        assert db.query("SELECT CONNECTION_ID()").rows[0][0] == sid  # drained, reset and reused
    finally:
        db.close()
