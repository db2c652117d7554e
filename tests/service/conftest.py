"""Fixtures of the service tests: a sample SQLite database, tokens, live servers on loopback."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def make_sales(path: Path, rows: int = 120) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sales (id INTEGER PRIMARY KEY, region TEXT, amount INTEGER)")
    regions = ["north", "south", "east", "west"]
    conn.executemany(
        "INSERT INTO sales VALUES (?, ?, ?)", [(i, regions[i % 4], i * 3) for i in range(rows)]
    )
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def sales_db(tmp_path) -> Path:
    return make_sales(tmp_path / "sales.db")


@pytest.fixture
def service_env(assay_home, sales_db, monkeypatch) -> dict[str, str]:
    """The environment of a service process: its own ASSAY_HOME, the sample datasource, local sandbox."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env.update(
        {
            "ASSAY_HOME": str(assay_home),
            "ASSAY_SQL_DATABASES": f"sales=sqlite:///{sales_db}",
            "SANDBOX_RUNTIME": "local",
            "SANDBOX_ALLOW_LOCAL_RUNTIME": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    for key, value in env.items():
        if key.startswith(("ASSAY_", "SANDBOX_")):
            monkeypatch.setenv(key, value)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_token(env: dict[str, str], owner: str = "alice") -> str:
    out = subprocess.run(
        [sys.executable, "-m", "assay.kernel.cli", "tokens", "create", "--owner", owner],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout.strip()


def wait_port(
    port: int, proc: subprocess.Popen, timeout: float = 60, host: str = "127.0.0.1"
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"server exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}"
            )
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {port}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


SCRIPT = [
    {
        "tool": "sql_query",
        "arguments": {
            "sql": "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region"
        },
    },
    {"text": "East sold the most."},
]


class LiveServer:
    """An `assay serve` process on loopback with its own ASSAY_HOME, sample database and scripted model."""

    def __init__(
        self, root: Path, settings: dict[str, str] | None = None, script: list | None = None
    ) -> None:
        import json

        root.mkdir(parents=True, exist_ok=True)
        db = root / "sales.db"
        if not db.exists():
            make_sales(db)
        script_path = root / "script.json"
        script_path.write_text(json.dumps(script or SCRIPT))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "SANDBOX_"))}
        self.env.update(
            {
                "ASSAY_HOME": str(root / "home"),
                "ASSAY_SQL_DATABASES": f"sales=sqlite:///{db}",
                "ASSAY_SERVICE_MODEL": f"scripted:{script_path}",
                "SANDBOX_RUNTIME": "local",
                "SANDBOX_ALLOW_LOCAL_RUNTIME": "1",
                "PYTHONUNBUFFERED": "1",
                **(settings or {}),
            }
        )
        self.alice = make_token(self.env, "alice")
        self.bob = make_token(self.env, "bob")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(root / "serve.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "assay.kernel.cli", "serve", "--port", str(self.port)],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_port(self.port, self.proc, timeout=90)
        except Exception:
            self.stop()
            raise

    def headers(self, who: str = "alice") -> dict[str, str]:
        return {"Authorization": f"Bearer {getattr(self, who)}"}

    def stop(self) -> None:
        stop(self.proc)
        self.log.close()


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    server = LiveServer(tmp_path_factory.mktemp("serve"))
    yield server
    server.stop()


REPORT_SQL = "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY total DESC"


def report_step(messages):
    """The scripted model's second step: a report citing the artifact its first step's query captured."""
    import re

    text = next(m.content for m in reversed(messages) if m.role == "tool")
    aid = re.search(r"art_[0-9a-f]{20}", text).group(0)
    document = {
        "title": "Sales by region",
        "blocks": [
            {"type": "heading", "text": "The best region"},
            {
                "type": "number",
                "label": "Top region's total",
                "artifact_id": aid,
                "path": [0, "total"],
                "format": ",",
            },
            {
                "type": "table",
                "artifact_id": aid,
                "columns": ["region", "total"],
                "sort": [{"column": "total", "descending": True}],
                "caption": "Totals, highest first",
            },
        ],
    }
    return {"tool": "render_report", "arguments": {"document": document}}


@pytest.fixture
def in_process_server(tmp_path, monkeypatch):
    """``start(**service_settings) -> (url, alice's token, bob's token)``: `assay serve`'s app in this
    process (uvicorn in a thread), so its scripted model can be Python: a query, a report citing the
    query's artifact, an answer (``start.answer``, a dict a test may change before it asks; given twice,
    for the figure check's correction turn)."""
    import threading

    import uvicorn

    from assay import Kernel, hookimpl
    from assay.plugins.models.scripted import ScriptedModel
    from assay.plugins.service.server import build
    from assay.plugins.service.settings import ServiceSettings
    from assay.plugins.service.tokens import TokenStore, store_path

    class WebScripted(ScriptedModel):
        model_id = "web_scripted"

        def __init__(self, **_: object) -> None:
            super().__init__(
                [
                    {"tool": "sql_query", "arguments": {"sql": REPORT_SQL}},
                    report_step,
                    answer,
                    answer,
                ]
            )

    class Models:
        __name__ = "web_models"

        @hookimpl
        def register_models(self, register):
            register(WebScripted)

    started: list = []
    answer = {"text": "West sold the most: 5,490."}

    def start(**settings):
        db = make_sales(tmp_path / "sales.db")
        monkeypatch.setenv("ASSAY_SQL_DATABASES", f"sales=sqlite:///{db}")
        kernel = Kernel(plugins=[Models()])
        tokens = TokenStore(store_path(kernel.settings.home))
        alice, _ = tokens.create("alice")
        bob, _ = tokens.create("bob")
        app, _ = build(kernel, ServiceSettings(model="web_scripted", **settings), tokens)
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        started.append((server, thread, kernel))
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        return f"http://127.0.0.1:{port}", alice, bob

    start.answer = answer  # type: ignore[attr-defined]
    yield start
    for server, thread, kernel in started:
        server.should_exit = True
        thread.join(timeout=60)
        kernel.close()
