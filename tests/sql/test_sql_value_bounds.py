"""What one huge value or row costs: refused before it reaches the client, measured in a fresh process.

Each case runs one ``sql_query`` in a subprocess (a fresh interpreter, so its
peak RSS, ``ru_maxrss``, is this query's) after a small query that opened the
datasource (the baseline). A value over ``max_value_bytes`` is refused by the
engine before it is sent (PostgreSQL: the checking projection; DuckDB: the
same, with ``error()``; SQLite: its own length limit, the value is never
made), a row over ``max_row_bytes`` likewise; the process grows by a small
part of the value instead of several times it (issue 30: one 900 MB value
cost 4.3-6.1 GB; a SQLite row of six 300 MB blobs 10.9 GB).

Also: DuckDB's ``memory_limit`` and ``threads`` are set on the datasource's
instance, and a DuckDB statement stopped at its time limit has stopped
(no CPU spent after the tool returned); PostgreSQL's ``temp_file_limit`` is
set where the login may set it (server ``temp_bytes`` of the test's own
database stay under it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.sql.conftest import pg_admin, unique, url_for

MB = 1_000_000
CHILD = r"""
import json, os, resource, sys, time
from assay import Kernel
from assay.plugins.sql.resource import DatabaseResource
from assay.plugins.sql.settings import DatasourceConfig
url, sql, allow = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
kernel = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False)
kernel.start()
kernel.attach(DatabaseResource("big", url, config=DatasourceConfig(url=url, allow_privileged=allow)))
warm = kernel.call_tool("sql_query", {"sql": "SELECT 1 AS one"}, run=kernel.new_run())
assert warm.success, warm.message
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.monotonic()
result = kernel.call_tool("sql_query", {"sql": sql, "timeout_s": 120}, run=kernel.new_run())
print(json.dumps({"code": result.error_code, "message": result.message, "metadata": result.metadata,
                  "seconds": time.monotonic() - started, "baseline_kb": before,
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
kernel.close()
"""


def run_child(url: str, sql: str, *, allow: bool = False, **env: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, url, sql, "1" if allow else "0"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["growth_mb"] = (out["peak_kb"] - out["baseline_kb"]) * 1024 / MB
    return out


# One value of 200 MB: over max_value_bytes (64 MiB), under the artifact cap (1 GiB) - captured before.
VALUE = {
    "sqlite": f"SELECT zeroblob({200 * MB}) AS big",
    "duckdb": f"SELECT repeat('x', {200 * MB}) AS big",
    "postgresql": f"SELECT repeat('x', {200 * MB}) AS big",
}
# The engine holds its own copy of the value (DuckDB is in the process); the client holds none.
VALUE_GROWTH_MB = {"sqlite": 40, "duckdb": 500, "postgresql": 40}  # before: 1,000-1,400


@pytest.mark.parametrize("engine", ["sqlite", "duckdb", "postgresql"])
def test_a_value_over_max_value_bytes_is_refused_before_the_client_holds_it(engine, request):
    out = run_child(url_for(engine, request), VALUE[engine])
    assert out["code"] == "SQL_VALUE_TOO_LARGE", out["message"]
    if engine != "sqlite":  # SQLite never made it, so it cannot say which column
        assert out["metadata"]["column"] == "big" and out["metadata"]["value_size"] == 200 * MB
    assert out["growth_mb"] < VALUE_GROWTH_MB[engine], out


# Six values of 60 MB each: every one under max_value_bytes, the row (360 MB) over max_row_bytes (256 MiB).
ROW = {
    "duckdb": "SELECT " + ", ".join(f"repeat('x', {60 * MB}) AS c{i}" for i in range(6)),
    "postgresql": "SELECT " + ", ".join(f"repeat('x', {60 * MB}) AS c{i}" for i in range(6)),
    "sqlite": "SELECT " + ", ".join(f"zeroblob({60 * MB}) AS c{i}" for i in range(6)),
}
ROW_GROWTH_MB = {"duckdb": 1100, "postgresql": 60, "sqlite": 1100}  # before: 2,250-2,520


@pytest.mark.parametrize("engine", ["sqlite", "duckdb", "postgresql"])
def test_a_row_over_max_row_bytes_is_refused_with_its_own_code(engine, request):
    out = run_child(url_for(engine, request), ROW[engine])
    assert out["code"] == "SQL_ROW_TOO_LARGE", out["message"]
    assert (
        out["metadata"]["row_size"] == 360 * MB and out["metadata"]["max_row_bytes"] == 256 * 2**20
    )
    # PostgreSQL refuses it on the server; DuckDB and SQLite hold it once (their own vectors, the fetched row),
    # never the capture's encoded copies (several times the row).
    assert out["growth_mb"] < ROW_GROWTH_MB[engine], out


def test_values_under_the_bounds_are_captured_as_before(request):
    out = run_child(url_for("postgresql", request), f"SELECT repeat('x', {5 * MB}) AS a, 'b' AS b")
    assert out["code"] is None, out["message"]


# --- DuckDB: the instance's memory and threads, a stop that is a stop -------------------------------------


def test_duckdb_instance_gets_memory_limit_and_threads_from_the_settings(tmp_path):
    # a file of its own: DuckDB keeps one configuration per file open in a process, and the shared
    # sample file may be open already, with the default settings, from another test of this session
    import duckdb

    from assay.plugins.sql.resource import DatabaseResource
    from assay.plugins.sql.settings import SqlSettings

    path = tmp_path / "own.duckdb"
    duckdb.connect(str(path)).close()
    db = DatabaseResource(
        "own",
        f"duckdb:///{path}",
        settings=SqlSettings(duckdb_memory_limit_mb=300, duckdb_threads=1),
    )
    try:
        limit, threads = db.query(
            "SELECT current_setting('memory_limit'), current_setting('threads')"
        ).rows[0]
        assert limit == "286.1 MiB" and threads == 1  # 300 MB, as DuckDB prints it
    finally:
        db.close()


def test_duckdb_aggregate_stays_under_the_memory_limit(request):
    # 8,000,000 distinct strings: ~820 MB peak with DuckDB's default limit (80% of RAM); under a 200 MB
    # memory_limit DuckDB spills the hash table instead, and the process stays near the limit.
    sql = "SELECT count(*) AS n FROM (SELECT DISTINCT a::VARCHAR || repeat('y', 40) FROM range(8000000) t(a))"
    out = run_child(url_for("duckdb", request), sql, ASSAY_SQL_DUCKDB_MEMORY_LIMIT_MB="200")
    assert out["code"] is None, out["message"]
    assert out["growth_mb"] < 350, out


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def test_duckdb_statement_stopped_at_the_time_limit_spends_nothing_after_the_tool_returns(request):
    from assay.plugins.sql.errors import SqlError
    from tests.sql.conftest import new_db

    db = new_db("duckdb", request, duckdb_threads=2, cancel_grace_s=5)
    try:
        with pytest.raises(SqlError) as caught:
            db.query(
                "SELECT count(DISTINCT (a * 7919) % 300000000) FROM range(3000000000) t(a)",
                timeout_s=1.5,
            )
        assert caught.value.code == "SQL_QUERY_TIMEOUT" and caught.value.details["stopped"] is True
        spent = _cpu_s()
        time.sleep(1.0)
        assert _cpu_s() - spent < 0.2  # 2 threads running on would spend ~2 s of CPU in that second
    finally:
        db.close()


# --- PostgreSQL: temp_file_limit where the login may set it ----------------------------------------------


@pytest.fixture
def pg_temp_database(request):
    """A database of the test's own (its temp_bytes are this test's), and a login granted SET on
    temp_file_limit (PostgreSQL 15+: GRANT SET ON PARAMETER), not a superuser; dropped afterwards."""
    if request.getfixturevalue("pg_schema") is None:
        url_for("postgresql", request)
    database, role = unique("assay_tmpdb"), unique("assay_tmp")
    with pg_admin() as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'GRANT SET ON PARAMETER temp_file_limit TO "{role}"')
    yield database, role
    with pg_admin() as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (database,)
        )
        conn.execute(f'DROP DATABASE IF EXISTS "{database}"')
        conn.execute(f'REVOKE SET ON PARAMETER temp_file_limit FROM "{role}"')
        conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def _temp_bytes(database: str) -> int:
    with pg_admin() as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        return int(
            conn.execute(
                "SELECT temp_bytes FROM pg_stat_database WHERE datname = %s", (database,)
            ).fetchone()[0]
        )


def test_postgres_temp_file_limit_is_set_where_the_login_may_and_bounds_the_temp_bytes(
    pg_temp_database,
):
    database, role = pg_temp_database
    url = f"postgresql://{role}@127.0.0.1:5432/{database}"
    before = _temp_bytes(database)
    sort = (
        "SELECT count(*) FROM (SELECT g FROM generate_series(1, 3000000) g ORDER BY md5(g::text)) s"
    )
    out = run_child(url, sort, ASSAY_SQL_PG_TEMP_FILE_LIMIT_MB="8")
    assert out["code"] == "SQL_QUERY_FAILED" and "temp_file_limit" in out["message"], out["message"]
    deadline = time.monotonic() + 5
    written = 0
    while time.monotonic() < deadline:  # the backend's statistics arrive within a second or so
        written = _temp_bytes(database) - before
        if written:
            break
        time.sleep(0.2)
    assert 0 < written <= 9 * 2**20, (
        written
    )  # the sort alone writes over 100 MB when nothing bounds it


def test_duckdb_interrupt_sent_before_the_statement_started_still_stops_it(request, monkeypatch):
    # The deadline passes while the worker is between two steps (here: binding takes long); the first
    # interrupt reaches no statement, and the one that runs next would run on in the process after the tool
    # returned ("not confirmed stopped"). It is sent again until the worker is back.
    from assay.plugins.sql.engines import duckdb as duck
    from assay.plugins.sql.errors import SqlError
    from tests.sql.conftest import new_db

    real = duck.decimal_projection

    def slow_binding(*args, **kwargs):
        time.sleep(1.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(duck, "decimal_projection", slow_binding)
    db = new_db("duckdb", request, duckdb_threads=2, cancel_grace_s=3)
    try:
        attempt = db.new_attempt(
            1.0, consume=lambda stream: sum(1 for _ in stream.rows), decimal_text=True
        )
        with pytest.raises(SqlError) as caught:
            db.query(
                "SELECT count(DISTINCT (a * 7919) % 300000000) AS n FROM range(3000000000) t(a)",
                attempt=attempt,
            )
        assert (
            caught.value.code == "SQL_QUERY_TIMEOUT" and caught.value.details["stopped"] is True
        ), caught.value
        spent = _cpu_s()
        time.sleep(1.0)
        assert _cpu_s() - spent < 0.2
    finally:
        db.close()


def test_mariadb_value_the_server_cut_to_null_is_refused_not_kept(request, kernel):
    # Over max_allowed_packet (16 MB here) MariaDB returns NULL with a warning: kept, it would be a silent cut.
    from tests.sql.conftest import new_db

    kernel.attach(new_db("mariadb", request))
    run = kernel.new_run()
    result = kernel.call_tool(
        "sql_query", {"sql": "SELECT repeat('x', 20000000) AS big, 1 AS n"}, run=run
    )
    assert result.error_code == "SQL_VALUE_TOO_LARGE", result.message
    assert "max_allowed_packet" in result.message
    assert [r.status for r in run.artifacts.records() if r.kind == "sql"] == ["failed"]
    ok = kernel.call_tool("sql_query", {"sql": "SELECT repeat('x', 1000) AS fine"}, run=run)
    assert ok.success, ok.message  # the connection is fine for the next statement
    run.close()
