"""`assay serve` under load and at shutdown: 50 concurrent runs, SIGTERM drains and leaves no container."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import require
from tests.service.conftest import LiveServer

pytest.importorskip("fastapi")
pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]
IMAGE = "localhost/assay-sandbox-python:bookworm"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def ask_all(server: LiveServer, n: int) -> list[httpx.Response]:
    async with httpx.AsyncClient(
        base_url=server.url, headers=server.headers(), timeout=120
    ) as client:
        return await asyncio.gather(
            *(
                client.post("/runs", json={"question": f"question {i}", "datasource": "sales"})
                for i in range(n)
            )
        )


def test_fifty_concurrent_runs_all_end_with_a_status_none_lost_memory_bounded(tmp_path):
    server = LiveServer(
        tmp_path,
        {
            "ASSAY_SERVICE_MAX_RUNS_TOTAL": "8",
            "ASSAY_SERVICE_MAX_QUEUED": "64",
            "ASSAY_SERVICE_MAX_RUNS_PER_TOKEN": "64",
            "ASSAY_SERVICE_QUESTIONS_PER_MINUTE": "1000",
        },
    )
    try:
        warm = asyncio.run(
            ask_all(server, 2)
        )  # first runs import the SQL plugin, evidence, the agent
        assert all(r.status_code == 202 for r in warm)
        _wait_idle(server)
        before = rss_kib(server.proc.pid)
        started = time.monotonic()
        answers = asyncio.run(ask_all(server, 50))
        assert [r.status_code for r in answers] == [202] * 50
        ids = {r.json()["run_id"] for r in answers}
        assert len(ids) == 50
        peak_live = _wait_idle(server)
        elapsed = time.monotonic() - started
        after = rss_kib(server.proc.pid)
        listed = httpx.get(
            f"{server.url}/runs", params={"limit": 100}, headers=server.headers(), timeout=60
        ).json()
        statuses = {r["run_id"]: r["status"] for r in listed["runs"] if r["run_id"] in ids}
        assert set(statuses) == ids  # none lost
        assert set(statuses.values()) == {"answered"}, statuses
        growth_mib = (after - before) / 1024
        print(
            json.dumps(
                {
                    "runs": 50,
                    "elapsed_s": round(elapsed, 2),
                    "rss_before_mib": round(before / 1024, 1),
                    "rss_after_mib": round(after / 1024, 1),
                    "growth_mib": round(growth_mib, 1),
                    "peak_live": peak_live,
                }
            )
        )
        assert growth_mib < 120, f"the server grew {growth_mib:.0f} MiB over 50 runs"
    finally:
        server.stop()


def _wait_idle(server: LiveServer, timeout: float = 400) -> int:
    deadline, peak = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        live = httpx.get(f"{server.url}/health", timeout=30).json()["runs_live"]
        peak = max(peak, live)
        if live == 0:
            return peak
        time.sleep(0.25)
    raise AssertionError("runs still live")


def test_sigterm_drains_running_runs_and_leaves_no_container(tmp_path):
    require(shutil.which("podman") is not None, "podman")
    require(
        subprocess.run(["podman", "image", "exists", IMAGE], check=False).returncode == 0,
        f"image {IMAGE}",
    )
    script = [
        {
            "tool": "code_interpreter",
            "arguments": {"code": "import time\ntime.sleep(120)\nprint('late')"},
        },
        {"text": "done"},
    ]
    server = LiveServer(
        tmp_path,
        {
            "SANDBOX_RUNTIME": "podman",
            "SANDBOX_ALLOW_LOCAL_RUNTIME": "0",
            "SANDBOX_IMAGE_PYTHON": IMAGE,
            "SANDBOX_TIMEOUT": "300",
            "ASSAY_SERVICE_DRAIN_S": "2",
        },
        script=script,
    )
    pid = server.proc.pid
    label = f"label=assay.sandbox.owner-pid={pid}"
    try:
        run = httpx.post(
            f"{server.url}/runs", json={"question": "slow"}, headers=server.headers(), timeout=60
        ).json()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until the code runs in its container
            found = subprocess.run(
                ["podman", "ps", "-q", "--filter", label],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.split()
            if found:
                break
            time.sleep(0.5)
        assert found, "the sandbox container never started"
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(timeout=120)
    finally:
        server.stop()
    # uvicorn shuts down gracefully, then raises SIGTERM again for the handlers it replaced (the kernel's
    # clean-up runs, and the exit status says SIGTERM)
    assert code in (0, -signal.SIGTERM)
    log = (tmp_path / "serve.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    left = subprocess.run(
        ["podman", "ps", "-a", "-q", "--filter", label], capture_output=True, text=True, check=False
    ).stdout.split()
    assert left == [], f"containers left behind: {left}"
    import sqlite3

    db = Path(server.env["ASSAY_HOME"]) / "runs" / "runs.sqlite3"
    status = (
        sqlite3.connect(db)
        .execute("SELECT status FROM runs WHERE run_id = ?", (run["run_id"],))
        .fetchone()
    )
    assert status == ("cancelled",)
