"""Runs on workers: throughput of 1 against 3 `assay worker` processes, in the same run.

    python bench/bench_workers.py [--broker redis://127.0.0.1:6379/0] [--pg postgresql://postgres@127.0.0.1:5432/test]
                                  [--runs 60]

Each run is the scripted model calling ``sql_query`` once on a SQLite file,
then answering. Two workloads: with a model latency of 0.1 s per turn
(``delay_s``: what an agent run mostly does is wait for its model), and
with none (the run is all CPU: assay's own work). For each, ``runs`` runs
are enqueued through one `assay serve` before any worker starts; then 1 (or
3) workers start together, and the clock runs from the first run's
``run_started`` to the last run's ``run_finished`` (the events' own times).
The processes share one ASSAY_HOME (one host: the local artifact store),
the catalog is a fresh PostgreSQL schema (dropped at the end), each phase
has a queue of its own. Prints runs/s and the 3-to-1 ratio. Without
PostgreSQL or the broker answering it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx


def script(delay_s: float) -> list[dict]:
    return [
        {
            "tool": "sql_query",
            "arguments": {"sql": "SELECT region, SUM(amount) FROM sales GROUP BY region"},
            "delay_s": delay_s,
        },
        {"text": "East sold the most.", "delay_s": delay_s},
    ]


def answers(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or default_port), timeout=1
        ):
            return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "assay.kernel.cli", *args]


def wait_for(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"error: {what} within {timeout:.0f} s")
        time.sleep(0.05)


def phase(env: dict[str, str], root: Path, workers: int, runs: int, pg_url: str) -> float:
    import psycopg

    token = subprocess.run(
        cli("tokens", "create", "--owner", "bench"),
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    port = free_port()
    procs = [
        subprocess.Popen(
            cli("serve", "--port", str(port)),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(root / "serve.log", "a"),
        )
    ]  # noqa: SIM115
    try:
        url, headers = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
        wait_for(lambda: _up(url), 60, "assay serve did not start")
        with httpx.Client(headers=headers, timeout=30) as http:
            ids = []
            for _ in range(runs):  # all queued before a worker runs
                r = http.post(
                    f"{url}/runs",
                    json={"question": "Which region sold the most?", "datasource": "sales"},
                )
                assert r.status_code == 202, r.text
                ids.append(r.json()["run_id"])
        logs = [root / f"worker-{env['ASSAY_BROKER_QUEUE']}-{i}.log" for i in range(workers)]
        for log in logs:
            procs.append(
                subprocess.Popen(
                    cli("worker"), env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w")
                )
            )  # noqa: SIM115
        with psycopg.connect(pg_url, autocommit=True) as conn:
            wait_for(
                lambda: (
                    conn.execute(
                        "SELECT count(*) FROM run_leases WHERE state = 'ended' "
                        "AND run_id = ANY(%s)",
                        (ids,),
                    ).fetchone()[0]
                    >= runs
                ),
                600,
                "the runs did not end",
            )
            first, last = conn.execute(
                "SELECT min(at) FILTER (WHERE kind = 'run_started'), "
                "max(at) FILTER (WHERE kind = 'run_finished') FROM run_events "
                "WHERE run_id = ANY(%s)",
                (ids,),
            ).fetchone()
            bad = conn.execute(
                "SELECT count(*) FROM runs WHERE status <> 'answered' AND run_id = ANY(%s)", (ids,)
            ).fetchone()[0]
            assert bad == 0, f"{bad} runs did not end answered"
            used = conn.execute(
                "SELECT count(DISTINCT worker) FROM run_leases WHERE run_id = ANY(%s)", (ids,)
            ).fetchone()[0]
            assert used == workers, f"{used} of {workers} workers took runs"
        return runs / (last - first)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=60)


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    default_port = 6379 if args.broker.startswith("redis") else 5672
    if not answers(args.pg, 5432) or not answers(args.broker, default_port):
        print(
            f"bench_workers: PostgreSQL ({args.pg}) or the broker ({args.broker}) does not answer: skipped"
        )
        return 0
    import psycopg

    schema = "assay_bench_" + uuid.uuid4().hex[:10]
    with psycopg.connect(args.pg, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    pg_url = f"{args.pg}?options=-csearch_path%3D{schema}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            db = root / "sales.db"
            conn = sqlite3.connect(db)
            conn.execute("CREATE TABLE sales (id INTEGER PRIMARY KEY, region TEXT, amount INTEGER)")
            conn.executemany(
                "INSERT INTO sales VALUES (?, ?, ?)",
                [(i, ["north", "south", "east", "west"][i % 4], i * 3) for i in range(120)],
            )
            conn.commit()
            conn.close()
            for label, delay_s in (
                ("model latency 0.1 s a turn", 0.1),
                ("no model latency (all CPU)", 0.0),
            ):
                (root / "script.json").write_text(json.dumps(script(delay_s)))
                rates = {}
                for workers in (1, 3):
                    env = {
                        k: v
                        for k, v in os.environ.items()
                        if not k.startswith(("ASSAY_", "SANDBOX_"))
                    }
                    env.update(
                        {
                            "ASSAY_HOME": str(root / "home"),
                            "ASSAY_CATALOG_URL": pg_url,
                            "ASSAY_BROKER_URL": args.broker,
                            "ASSAY_BROKER_QUEUE": f"{schema}_{int(delay_s * 1000)}_{workers}",
                            "ASSAY_SQL_DATABASES": f"sales=sqlite:///{db}",
                            "ASSAY_SERVICE_MODEL": f"scripted:{root / 'script.json'}",
                            "ASSAY_SERVICE_QUESTIONS_PER_MINUTE": "100000",
                            "SANDBOX_RUNTIME": "local",
                            "SANDBOX_ALLOW_LOCAL_RUNTIME": "1",
                        }
                    )
                    rates[workers] = phase(env, root, workers, args.runs, pg_url)
                print(
                    f"{label}: 1 worker {rates[1]:.1f} runs/s, 3 workers {rates[3]:.1f} runs/s, "
                    f"ratio {rates[3] / rates[1]:.2f}x  ({args.runs} runs, {os.cpu_count()} cores, "
                    f"{urlsplit(args.broker).scheme})",
                    flush=True,
                )
    finally:
        with psycopg.connect(args.pg, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
