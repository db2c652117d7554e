"""Ctrl-C stops `assay ask` cleanly: the running PostgreSQL query is cancelled on the server, the
transcript is kept with status ``cancelled``, and the exit code says so (a real subprocess)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from tests.conftest import require, sigint_default

PG = "127.0.0.1:5432/test"


def pg_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(f"postgresql://{PG}", connect_timeout=3):
            return True
    except Exception:  # noqa: BLE001
        return False


@pytest.fixture
def pg_login():
    """A login with no privileges beyond connecting (dropped afterwards)."""
    require(pg_available(), "PostgreSQL on 127.0.0.1:5432")
    import psycopg

    role = f"assay_ask_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"postgresql://{PG}", autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
    yield role
    with psycopg.connect(f"postgresql://{PG}", autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
        )
        admin.execute(f'DROP ROLE IF EXISTS "{role}"')


def active_queries(role: str) -> list[str]:
    import psycopg

    with psycopg.connect(f"postgresql://{PG}", autocommit=True) as admin:
        rows = admin.execute(
            "SELECT query FROM pg_stat_activity WHERE usename = %s AND state = 'active'", (role,)
        ).fetchall()
    return [r[0] for r in rows]


def interrupt_a_running_query(
    pg_login, tmp_path, signum: int
) -> tuple[int, str, str, dict[str, str]]:
    """`assay ask` running ``SELECT pg_sleep(120)`` on PostgreSQL, sent ``signum`` once the query is active
    on the server; its exit status, output and environment."""
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [{"tool": "sql_query", "arguments": {"sql": "SELECT pg_sleep(120)"}}, {"text": "never"}]
        )
    )
    env = dict(os.environ)
    cli = [
        sys.executable,
        "-m",
        "assay.kernel.cli",
        "ask",
        "--db",
        f"postgresql://{pg_login}@{PG}",
        "--model",
        f"scripted:{script}",
        "how long?",
    ]
    proc = subprocess.Popen(
        cli,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    try:
        deadline = time.monotonic() + 60
        while not any("pg_sleep" in q.lower() for q in active_queries(pg_login)):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the query never started"
            time.sleep(0.1)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err, env


def test_sigint_cancels_the_running_query_and_keeps_the_transcript_as_cancelled(pg_login, tmp_path):
    returncode, out, err, env = interrupt_a_running_query(pg_login, tmp_path, signal.SIGINT)
    assert returncode == 130, (out, err)
    assert "status: cancelled" in err and "Traceback" not in err
    assert not any("pg_sleep" in q.lower() for q in active_queries(pg_login)), (
        "the query still runs on the server"
    )

    listed = subprocess.run(
        [sys.executable, "-m", "assay.kernel.cli", "runs", "ls", "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    record = json.loads(listed.stdout.splitlines()[0])
    assert record["status"] == "cancelled" and record["question"] == "how long?"
    shown = subprocess.run(
        [sys.executable, "-m", "assay.kernel.cli", "runs", "show", record["run_id"]],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "assistant calls sql_query" in shown.stdout and "finished: cancelled" in shown.stdout
    assert (
        "sql_query -> error AGENT_TOOL_CALL_CANCELLED" in shown.stdout
    )  # the call in flight is in the record
    assert record["tool_calls"] == 1


def test_sigterm_cancels_the_running_query_as_ctrl_c_does_then_ends_as_killed_by_it(
    pg_login, tmp_path
):
    returncode, out, err, env = interrupt_a_running_query(pg_login, tmp_path, signal.SIGTERM)
    assert returncode == -signal.SIGTERM, (
        out,
        err,
    )  # what timeout and systemd expect of a stopped process
    assert "status: cancelled" in err and "Traceback" not in err
    assert not any("pg_sleep" in q for q in active_queries(pg_login)), (
        "the query still runs on the server"
    )
    listed = subprocess.run(
        [sys.executable, "-m", "assay.kernel.cli", "runs", "ls", "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(listed.stdout.splitlines()[0])["status"] == "cancelled"
