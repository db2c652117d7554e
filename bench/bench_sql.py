"""SQL figures (issue 4), each beside a baseline measured in the same run.

1. Cancellation: time from the deadline to the query being gone, p50/p95 per
   engine. "Gone" is the server's own activity view (pg_stat_activity,
   information_schema.processlist) for the servers, and the statement
   returning for SQLite/DuckDB. Baseline: the engine's own mechanism driven
   directly (server-side statement_timeout / max_statement_time, a timer
   calling interrupt()). Targets: SQLite p95 <= 100 ms, servers <= 500 ms.
2. ``sql_query`` (through the kernel, evidence captured to the local store)
   on a 100,000-row table against the raw driver fetching the same rows, in
   interleaved pairs; the ratio is the median of the per-pair ratios.
   Target: <= 1.5x.
3. Memory (``--memory``, issue 12): peak RSS of a fresh process running one
   ``sql_query`` (evidence captured) per engine, for ``--rows`` rows (default
   10,000,000) and for one value of ``--value-mb`` MB (default 500), the
   latter both under the artifact cap (captured) and over it
   (``SQL_VALUE_TOO_LARGE``). MariaDB's value is bounded by the server's
   ``max_allowed_packet`` (a larger one comes back NULL).

4. Regeneration (``--regenerate``, issue 30): what writing the SQL to run from
   the checked tree costs per call - the generator plus the round trip that
   proves it (parse again, compare the trees) - beside the check itself
   (parse and allow-list walk), per dialect, for the analyst queries of
   ``tests/sql/test_sql_false_positives.py`` and for two queries of about
   10 KB (a wide CASE report, a long IN list). Target: <= 2 ms per call for
   queries under 10 KB.

    .venv/bin/python bench/bench_sql.py [--runs 12]
    .venv/bin/python bench/bench_sql.py --memory [--rows 10000000] [--value-mb 500]
    .venv/bin/python bench/bench_sql.py --regenerate [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PG = "postgresql://127.0.0.1:5432/test"
TIMEOUT_S = 0.3
RUNAWAY = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "duckdb": "SELECT count(*) FROM range(1000000000000) t(a), range(100) u(b) WHERE (a * b) % 7 = 3",
    "postgresql": "SELECT count(*) FROM generate_series(1, 1000000000000::bigint) g, generate_series(1, 10) h",
    "mariadb": "SELECT count(*) FROM seq_1_to_1000000 a, seq_1_to_1000000 b, seq_1_to_1000 c",
}
TARGET_MS = {"sqlite": 100, "duckdb": 500, "postgresql": 500, "mariadb": 500}


def bench_config(url: str):
    """The bench connects as the servers' superuser/root (it made the tables): accepted knowingly."""
    from assay.plugins.sql.settings import DatasourceConfig

    return DatasourceConfig(url=url, allow_privileged=True)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


# --- servers' activity views -------------------------------------------------


class Activity:
    """Polls the server's own view until a session stops running a statement."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        if engine == "postgresql":
            import psycopg

            self.conn = psycopg.connect(PG, autocommit=True)
        else:
            import pymysql

            self.conn = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)

    def running(self, session_id) -> bool:
        if self.engine == "postgresql":
            return (
                self.conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND state = 'active'",
                    (session_id,),
                ).fetchone()[0]
                > 0
            )
        with self.conn.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM information_schema.processlist WHERE id = %s AND command = 'Query'",
                (session_id,),
            )
            return cur.fetchone()[0] > 0

    def gone_after(self, session_id, deadline: float) -> float:
        """Seconds from ``deadline`` until the session is no longer running (polls every ~2 ms)."""
        while time.monotonic() < deadline:
            time.sleep(0.001)
        while self.running(session_id):
            time.sleep(0.002)
        return time.monotonic() - deadline

    def close(self) -> None:
        self.conn.close()


# --- cancellation -------------------------------------------------------------


def ours_once(db, engine: str, activity: Activity | None) -> float:
    from assay.plugins.sql.errors import SqlError

    attempt = db.new_attempt(TIMEOUT_S)
    gone: list[float] = []
    watcher = None
    if activity is not None:

        def watch() -> None:
            while attempt.deadline is None or attempt.session_id is None:
                time.sleep(0.0005)
            gone.append(activity.gone_after(attempt.session_id, attempt.deadline))

        watcher = threading.Thread(target=watch)
        watcher.start()
    try:
        db.query(RUNAWAY[engine], attempt=attempt)
        raise RuntimeError("the runaway query finished")
    except SqlError as exc:
        assert exc.code == "SQL_QUERY_TIMEOUT" and exc.details["stopped"], exc.message
    if watcher is not None:
        watcher.join()
        return gone[0]
    return attempt.finished_at - attempt.deadline


def baseline_once(engine: str, ctx: dict, activity: Activity | None) -> float:
    if engine == "sqlite":
        conn = sqlite3.connect(f"file:{ctx['sqlite']}?mode=ro", uri=True, check_same_thread=False)
        deadline = time.monotonic() + TIMEOUT_S
        timer = threading.Timer(TIMEOUT_S, conn.interrupt)
        timer.start()
        try:
            conn.execute(RUNAWAY[engine]).fetchall()
        except sqlite3.OperationalError:
            pass
        gone = time.monotonic() - deadline
        conn.close()
        return gone
    if engine == "duckdb":
        conn = ctx["duckdb_raw"]
        deadline = time.monotonic() + TIMEOUT_S
        timer = threading.Timer(TIMEOUT_S, conn.interrupt)
        timer.start()
        try:
            conn.execute(RUNAWAY[engine]).fetchall()
        except Exception:  # noqa: BLE001 - InterruptException
            pass
        return time.monotonic() - deadline
    if engine == "postgresql":
        import psycopg

        conn = psycopg.connect(PG, autocommit=True)
        conn.execute(f"SET statement_timeout = {int(TIMEOUT_S * 1000)}")
        pid = conn.info.backend_pid
        deadline = time.monotonic() + TIMEOUT_S
        result: list[float] = []
        watcher = threading.Thread(target=lambda: result.append(activity.gone_after(pid, deadline)))
        watcher.start()
        try:
            conn.execute(RUNAWAY[engine])
        except psycopg.errors.QueryCanceled:
            pass
        watcher.join()
        conn.close()
        return result[0]
    import pymysql

    conn = pymysql.connect(host="127.0.0.1", user="root")
    tid = conn.thread_id()
    deadline = time.monotonic() + TIMEOUT_S
    result = []
    watcher = threading.Thread(target=lambda: result.append(activity.gone_after(tid, deadline)))
    watcher.start()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SET STATEMENT max_statement_time = {TIMEOUT_S} FOR {RUNAWAY[engine]}")
    except pymysql.MySQLError:
        pass
    watcher.join()
    conn.close()
    return result[0]


def bench_cancellation(ctx: dict, runs: int) -> None:
    from assay.plugins.sql.resource import DatabaseResource

    print(
        f"\n== cancellation: deadline -> query gone ({runs} runs per engine, limit {TIMEOUT_S * 1000:.0f} ms) =="
    )
    print(
        f"{'engine':<11} {'assay p50':>10} {'assay p95':>10} {'baseline p50':>13} {'baseline p95':>13} "
        f"{'p95 ratio':>10} {'target p95':>11}  met"
    )
    for engine in ("sqlite", "duckdb", "postgresql", "mariadb"):
        if engine not in ctx["urls"]:
            print(f"{engine:<11} (not available)")
            continue
        activity = Activity(engine) if engine in ("postgresql", "mariadb") else None
        db = DatabaseResource(
            "bench", ctx["urls"][engine], config=bench_config(ctx["urls"][engine])
        )
        ours, base = [], []
        try:
            db.query("SELECT 1")  # open the pool (and MariaDB's kill connection) first
            time.sleep(0.3)
            for _ in range(runs):
                ours.append(ours_once(db, engine, activity) * 1000)
                base.append(baseline_once(engine, ctx, activity) * 1000)
        finally:
            db.close()
            if activity is not None:
                activity.close()
        o50, o95, b50, b95 = pct(ours, 0.5), pct(ours, 0.95), pct(base, 0.5), pct(base, 0.95)
        ratio = o95 / b95 if b95 > 0 else float("inf")
        met = "yes" if o95 <= TARGET_MS[engine] else "NO"
        print(
            f"{engine:<11} {o50:>8.1f}ms {o95:>8.1f}ms {b50:>11.1f}ms {b95:>11.1f}ms {ratio:>9.2f}x "
            f"{TARGET_MS[engine]:>8} ms  {met}"
        )


# --- 100,000-row results -------------------------------------------------------


def raw_fetch(engine: str, ctx: dict, sql: str) -> float:
    if engine == "sqlite":
        conn = sqlite3.connect(f"file:{ctx['sqlite']}?mode=ro", uri=True)
        started = time.perf_counter()
        rows = conn.execute(sql).fetchall()
    elif engine == "duckdb":
        conn = ctx["duckdb_raw"]
        started = time.perf_counter()
        rows = conn.execute(sql).fetchall()
    elif engine == "postgresql":
        import psycopg

        conn = psycopg.connect(PG)
        started = time.perf_counter()
        rows = conn.execute(sql).fetchall()
    else:
        import pymysql

        conn = pymysql.connect(host="127.0.0.1", user="root", database=ctx["mariadb_db"])
        started = time.perf_counter()
        with conn.cursor() as cur:
            cur.execute(sql)
            rows = cur.fetchall()
    took = time.perf_counter() - started
    assert len(rows) == 100_000, len(rows)
    if engine != "duckdb":
        conn.close()
    return took


def bench_results(ctx: dict, runs: int) -> None:
    from assay import Kernel
    from assay.plugins.sql import open_datasource

    print(
        "\n== sql_query on a 100,000-row result vs the raw driver (%d interleaved pairs) ==" % runs
    )
    print(
        "   ratio = median of the per-pair ratios (each pair runs back to back, in alternating order,"
    )
    print("   so the machine's drift hits both alike); the medians are shown beside it")
    print(
        f"{'engine':<11} {'raw driver':>11} {'sql_query':>10} {'ratio':>7} {'no capture':>11} {'ratio':>6} "
        f"{'capture':>9}  target  met"
    )
    kernel = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False)
    kernel.start()
    for engine in ("sqlite", "duckdb", "postgresql", "mariadb"):
        if engine not in ctx["urls"]:
            print(f"{engine:<11} (not available)")
            continue
        sql = ctx["big_sql"][engine]
        kernel.attach(
            open_datasource(
                engine, ctx["urls"][engine], kernel=kernel, config=bench_config(ctx["urls"][engine])
            )
        )
        raw, tool, bare = [], [], []

        def through_tool(capture: bool) -> float:
            run = kernel.new_run(capture=capture)
            started = time.perf_counter()
            result = kernel.call_tool("sql_query", {"sql": sql, "datasource": engine}, run=run)
            took = time.perf_counter() - started
            assert result.success and result.data["row_count"] == 100_000, result
            assert result.data["artifact_id"] or not capture, result
            run.close()
            return took

        through_tool(True)  # warm the pool
        for i in range(runs):
            if i % 2 == 0:
                raw.append(raw_fetch(engine, ctx, sql))
                tool.append(through_tool(True))
            else:
                tool.append(through_tool(True))
                raw.append(raw_fetch(engine, ctx, sql))
            bare.append(through_tool(False))
        r, t, b = (statistics.median(x) * 1000 for x in (raw, tool, bare))
        ratio = statistics.median(a / c for a, c in zip(tool, raw))
        bare_ratio = statistics.median(a / c for a, c in zip(bare, raw))
        print(
            f"{engine:<11} {r:>9.1f}ms {t:>8.1f}ms {ratio:>6.2f}x {b:>9.1f}ms {bare_ratio:>5.2f}x {t - b:>7.1f}ms"
            f"  1.5x   {'yes' if ratio <= 1.5 else 'NO'}"
        )
    kernel.close()


# --- set-up -------------------------------------------------------------------


def setup(tmp: Path) -> dict:
    from examples.retail.generate import write_sqlite

    ctx: dict = {"urls": {}, "big_sql": {}, "cleanup": []}
    started = time.perf_counter()
    counts = write_sqlite(tmp / "retail.db", orders=200_000)
    took = time.perf_counter() - started
    print(
        f"retail sample data: {counts['orders']:,} orders, {counts['order_items']:,} order items "
        f"-> SQLite in {took:.1f} s"
    )
    ctx["sqlite"] = tmp / "retail.db"
    ctx["urls"]["sqlite"] = f"sqlite:///{tmp / 'retail.db'}"
    ctx["big_sql"]["sqlite"] = "SELECT * FROM order_items WHERE order_item_id <= 100000"

    import duckdb

    path = tmp / "bench.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute(
            "CREATE TABLE t AS SELECT i AS id, i % 97 AS k, md5(i::varchar) AS s, "
            "(i * 1.25)::DECIMAL(12,2) AS amount, TIMESTAMP '2024-01-01' + i * INTERVAL 1 MINUTE AS ts "
            "FROM range(1, 100001) r(i)"
        )
    ctx["urls"]["duckdb"] = f"duckdb:///{path}"

    # the datasource's own configuration (DuckDB refuses a second one for the same file in a process)
    from assay.plugins.sql.engines.duckdb import instance_config
    from assay.plugins.sql.resource import DatabaseResource

    limits = DatabaseResource("bench", f"duckdb:///{path}").limits
    ctx["duckdb_raw"] = duckdb.connect(
        str(path), read_only=True, config=instance_config(limits)
    ).cursor()
    ctx["big_sql"]["duckdb"] = "SELECT * FROM t"

    name = "bench_sql_" + uuid.uuid4().hex[:8]
    try:
        import psycopg

        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
            ctx["cleanup"].append(
                lambda: psycopg.connect(PG, autocommit=True).execute(
                    f"DROP SCHEMA IF EXISTS {name} CASCADE"
                )
            )
            conn.execute(
                f"CREATE TABLE {name}.t AS SELECT g AS id, g % 97 AS k, md5(g::text) AS s, "
                "(g * 1.25)::numeric(12,2) AS amount, timestamp '2024-01-01' + g * interval '1 minute' AS ts "
                "FROM generate_series(1, 100000) g"
            )
        ctx["urls"]["postgresql"] = PG
        ctx["big_sql"]["postgresql"] = f"SELECT * FROM {name}.t"
    except Exception as exc:  # noqa: BLE001
        print(f"PostgreSQL not available: {exc}")
    try:
        import pymysql

        def drop() -> None:
            c = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)
            c.cursor().execute(f"DROP DATABASE IF EXISTS {name}")
            c.close()

        conn = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE {name}")
            ctx["cleanup"].append(drop)
            cur.execute(f"USE {name}")
            cur.execute(
                f"CREATE TABLE {name}.t AS SELECT seq AS id, seq % 97 AS k, md5(seq) AS s, "
                "CAST(seq * 1.25 AS DECIMAL(12,2)) AS amount, "
                "TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq MINUTE AS ts FROM seq_1_to_100000"
            )
        conn.close()
        ctx["urls"]["mariadb"] = f"mariadb://root@127.0.0.1:3306/{name}"
        ctx["mariadb_db"] = name
        ctx["big_sql"]["mariadb"] = "SELECT * FROM t"
    except Exception as exc:  # noqa: BLE001
        print(f"MariaDB not available: {exc}")
    return ctx


# --- memory on huge results (issue 12) ----------------------------------------------

MEMORY_ROWS_SQL = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {n}) SELECT x AS n, 'row' AS label FROM c",
    "duckdb": "SELECT range AS n, 'row' AS label FROM range({n})",
    "postgresql": "SELECT g AS n, 'row' AS label FROM generate_series(1, {n}) g",
    "mariadb": "SELECT seq AS n, 'row' AS label FROM seq_1_to_{n}",
}
MEMORY_VALUE_SQL = {
    "sqlite": "SELECT printf('%.*c', {n}, 'x') AS big",  # one allocation of n characters in SQLite
    "duckdb": "SELECT repeat('x', {n}) AS big",
    "postgresql": "SELECT repeat('x', {n}) AS big",
    "mariadb": "SELECT repeat('x', {n}) AS big",
}


def memory_child(engine: str, sql: str, tmp: str) -> None:
    """In a fresh process: one sql_query with evidence; prints outcome, seconds and peak RSS (MiB)."""
    import resource

    from assay import Kernel
    from assay.plugins.sql.resource import DatabaseResource
    from assay.plugins.sql.settings import SqlSettings

    if engine == "sqlite":
        url = f"sqlite:///{tmp}/m.db"
        sqlite3.connect(f"{tmp}/m.db").execute(
            "CREATE TABLE IF NOT EXISTS t (a int)"
        ).connection.close()
    elif engine == "duckdb":
        import duckdb

        duckdb.connect(f"{tmp}/m.duckdb").close()
        url = f"duckdb:///{tmp}/m.duckdb"
    elif engine == "postgresql":
        url = PG
    else:
        url = "mariadb://root@127.0.0.1:3306/test"
    kernel = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False)
    kernel.start()
    settings = SqlSettings(max_result_rows=10**9, max_timeout_s=3600, default_timeout_s=3600)
    kernel.attach(DatabaseResource(engine, url, settings=settings, config=bench_config(url)))
    run = kernel.new_run()
    started = time.perf_counter()
    result = kernel.call_tool("sql_query", {"sql": sql, "timeout_s": 3600}, run=run)
    took = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    what = (
        f"{result.data['row_count']:,} rows, artifact {result.data.get('artifact_row_count', result.data['row_count']):,}"
        if result.success
        else result.error_code
    )
    print(f"RESULT\t{what}\t{took:.1f}\t{peak:.0f}")
    run.close()
    kernel.close()


def bench_memory(rows: int, value_mb: int) -> None:
    import subprocess

    value = value_mb * 1_000_000
    cases = [
        ("rows", f"{rows:,} rows", MEMORY_ROWS_SQL, {}),
        ("value", f"one {value_mb} MB value, cap 1 GiB", MEMORY_VALUE_SQL, {}),
        (
            "value",
            f"one {value_mb} MB value, cap {value_mb // 2} MB",
            MEMORY_VALUE_SQL,
            {"ASSAY_ARTIFACT_MAX_BYTES": str(value // 2)},
        ),
    ]
    print("\nMemory: peak RSS of one sql_query with evidence, in a fresh process")
    print(f"{'engine':<11} {'case':<34} {'outcome':<34} {'seconds':>8} {'peak MiB':>9}")
    for engine in ("sqlite", "duckdb", "postgresql", "mariadb"):
        for _kind, label, table, env in cases:
            sql = table[engine].format(
                n=rows if table is MEMORY_ROWS_SQL else value, half=value // 2
            )
            with tempfile.TemporaryDirectory() as tmp:
                child_env = {
                    **os.environ,
                    "ASSAY_HOME": f"{tmp}/home",
                    "ASSAY_LOG_LEVEL": "ERROR",
                    **env,
                }
                proc = subprocess.run(
                    [sys.executable, __file__, "--memory-child", engine, sql, tmp],
                    capture_output=True,
                    text=True,
                    env=child_env,
                )
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT\t")), None)
            if line is None:
                print(
                    f"{engine:<11} {label:<34} failed: {(proc.stderr or proc.stdout).strip()[-200:]}"
                )
                continue
            _, what, took, peak = line.split("\t")
            print(f"{engine:<11} {label:<34} {what:<34} {took:>8} {peak:>9}", flush=True)


def ten_kb_queries() -> dict[str, str]:
    """Two analyst-shaped queries of about 10 KB each."""
    cases = " ".join(
        f"WHEN total BETWEEN {i} AND {i + 0.99} THEN 'band {i:03d}'" for i in range(200)
    )
    report = f"SELECT store_id, CASE {cases} ELSE 'other' END AS band, count(*) AS n FROM orders GROUP BY 1, 2"
    ids = (
        "SELECT order_id, total FROM orders WHERE order_id IN ("
        + ", ".join(str(i) for i in range(1700))
        + ")"
    )
    return {
        f"CASE report ({len(report) / 1000:.1f} KB)": report,
        f"IN list ({len(ids) / 1000:.1f} KB)": ids,
    }


def bench_regenerate(repeat: int) -> None:
    from assay.plugins.sql.guard import check_read_only
    from assay.plugins.sql.lexical import resolve_postgres_escapes
    from assay.plugins.sql.regenerate import regenerate
    from assay.plugins.sql.statement import parse_one
    from assay.plugins.sql.tree_check import Checker
    from tests.sql.test_sql_false_positives import queries_for

    def parse_and_walk(sql: str, dialect: str) -> None:
        text, root = parse_one(sql, dialect)
        Checker(text, dialect, frozenset()).check(root)

    def per_call(fn, fresh=lambda: None) -> float:
        """The median time of ``fn(fresh())``; ``fresh`` (not timed) makes its argument anew each call."""
        fn(fresh())
        took = []
        for _ in range(repeat):
            arg = fresh()
            started = time.perf_counter()
            fn(arg)
            took.append(time.perf_counter() - started)
        return statistics.median(took) * 1000

    print(
        f"\n== regeneration: the SQL to run written from the checked tree (median of {repeat} calls each) =="
    )
    print(
        f"{'dialect':<11} {'queries':>7} {'check p50':>10} {'regen p50':>10} {'regen p95':>10} {'regen max':>10}"
        "  target 2 ms  met"
    )
    for dialect in ("sqlite", "duckdb", "postgresql", "mariadb"):
        check_ms, regen_ms = [], []
        for sql in queries_for(dialect):
            if sql.upper().startswith("EXPLAIN"):
                continue
            if dialect == "postgresql":
                sql = resolve_postgres_escapes(sql)
            check_ms.append(per_call(lambda _: parse_and_walk(sql, dialect)))
            # the generator writes the tree in place: each call gets a fresh parse (not timed)
            regen_ms.append(
                per_call(
                    lambda parsed: regenerate(parsed[1], dialect, parsed[0]),
                    lambda: parse_one(sql, dialect),
                )
            )
        regen_ms.sort()
        p95 = regen_ms[min(len(regen_ms) - 1, int(len(regen_ms) * 0.95))]
        print(
            f"{dialect:<11} {len(regen_ms):>7} {statistics.median(check_ms):>8.2f}ms "
            f"{statistics.median(regen_ms):>8.2f}ms {p95:>8.2f}ms {regen_ms[-1]:>8.2f}ms"
            f"  {'':>11} {'yes' if regen_ms[-1] <= 2 else 'NO'}"
        )
    for name, sql in ten_kb_queries().items():
        check = per_call(lambda _: check_read_only(sql, "postgresql"))
        regen = per_call(
            lambda parsed: regenerate(parsed[1], "postgresql", parsed[0]),
            lambda: parse_one(sql, "postgresql"),
        )
        print(
            f"{'postgresql':<11} {name:>30}: whole check {check:.2f} ms, of which regeneration {regen:.2f} ms"
            f"  {'yes' if regen <= 2 else 'NO'}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=12, help="cancellations per engine")
    parser.add_argument(
        "--result-runs", type=int, default=15, help="100,000-row fetch pairs per engine"
    )
    parser.add_argument("--memory", action="store_true", help="only the memory figures (issue 12)")
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the memory figure")
    parser.add_argument(
        "--value-mb", type=int, default=500, help="size of the one large value (MB)"
    )
    parser.add_argument(
        "--memory-child", nargs=3, metavar=("ENGINE", "SQL", "TMP"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--regenerate", action="store_true", help="only the regeneration cost (issue 30)"
    )
    parser.add_argument(
        "--repeat", type=int, default=20, help="calls per query of the regeneration figure"
    )
    args = parser.parse_args()
    os.environ.setdefault("ASSAY_LOG_LEVEL", "ERROR")
    if args.memory_child:
        memory_child(*args.memory_child)
        return
    if args.memory:
        bench_memory(args.rows, args.value_mb)
        return
    if args.regenerate:
        bench_regenerate(args.repeat)
        return
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ASSAY_HOME"] = str(Path(tmp) / "home")
        ctx = setup(Path(tmp))
        try:
            bench_cancellation(ctx, args.runs)
            bench_results(ctx, args.result_runs)
        finally:
            for clean in ctx["cleanup"]:
                clean()
            ctx["duckdb_raw"].close()


if __name__ == "__main__":
    main()
