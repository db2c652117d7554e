"""Agent figures: overhead per step against the model call, and `assay ask` start-up.

Run: .venv/bin/python bench/bench_agent.py

A local fake chat-completions server (loopback HTTP, answers at once) plays
the model through the real OpenAI-compatible provider.

1. Per step: a run of STEPS turns, each a ``sql_query`` call (SQLite, one
   row, captured as an artifact), then an answer, recorded in the runs store
   as `assay ask` records it. The time inside the model call (HTTP round trip
   to the fake server, parsing) and the tool's own time (``elapsed_ms``: the
   query and its capture) are measured apart; the rest of the run's wall
   time divided by the steps is the agent's overhead per step (prompt and
   messages, dispatch, compaction check, transcript events written to
   SQLite). Target: <= 5 ms.
2. Start-up: wall time from starting `assay ask --db sqlite:///... --model
   openai_compatible:fake` in a fresh process to the fake server receiving
   its first request, beside `python -c pass` in the same kind of process
   and beside the *library floor*: a process that only imports what the
   provider is built on (asyncio, click, pydantic with one model, httpx
   without its command line, as the provider imports it) and sends one
   request, so the figure splits into what those libraries cost on this
   machine and what assay adds. Median of several runs. Target: <= 600 ms (issue 34; it was 300). Beside it, the CPU time the
   process had used when the fake server received that request (read from
   /proc, Linux; ``python -c pass`` whole, for scale), and the CPU time of
   the whole process: on a shared, busy machine the wall time mostly measures
   the wait for a core.
3. Follow-up start-up: a thread of THREAD_RUNS runs holding THREAD_ARTIFACTS
   artifacts (recorded in-process with the scripted model), then `assay ask
   --continue LAST` started as in 2 (its thread read, every artifact
   verified, its manifest written into the prompt) beside a fresh `assay ask`
   started in the same rounds. Target (issue 36): <= 1.2x the fresh start-up.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
STEPS = 40
STARTS = 7
THREAD_RUNS = 10
THREAD_ARTIFACTS = 100
# The libraries under the first request, and nothing of assay's: the start-up's floor here.
LIBRARY_FLOOR = r"""
import sys
sys.modules["httpx._main"] = None  # as assay.plugins.models.http_client imports it
import asyncio, click, httpx, pydantic
del sys.modules["httpx._main"]

class Message(pydantic.BaseModel):
    role: str
    content: str

async def ask(url):
    async with httpx.AsyncClient(timeout=30) as client:
        body = {"model": "fake", "messages": [Message(role="user", content="how much?").model_dump()]}
        await client.post(url + "/chat/completions", json=body)

@click.command()
@click.argument("url")
def main(url):
    asyncio.run(ask(url))

main()
"""


class FakeModelServer:
    """Answers every chat completion at once: a tool call until `calls` run out, then text."""

    def __init__(self, calls: int) -> None:
        self.calls_left = calls
        self.first_request_at: float | None = None
        self.client_pid: int | None = (
            None  # set: its CPU time is read when the first request arrives
        )
        self.client_cpu_ms: float | None = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                if outer.first_request_at is None:
                    outer.first_request_at = time.time()
                    if outer.client_pid is not None:
                        outer.client_cpu_ms = process_cpu_ms(outer.client_pid)
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                if outer.calls_left > 0:
                    outer.calls_left -= 1
                    message = {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": f"call_{outer.calls_left}",
                                "type": "function",
                                "function": {
                                    "name": "sql_query",
                                    "arguments": json.dumps({"sql": "SELECT 6 * 7 AS answer"}),
                                },
                            }
                        ],
                    }
                else:
                    message = {"role": "assistant", "content": "42"}
                body = json.dumps(
                    {
                        "choices": [{"message": message, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 10},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def process_cpu_ms(pid: int) -> float | None:
    """User + system CPU time of a running process so far (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") * 1e3


def make_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sales (region TEXT, amount INTEGER)")
    conn.executemany("INSERT INTO sales VALUES (?, ?)", [("north", 10), ("south", 32)])
    conn.commit()
    conn.close()
    return path


class TimedModel:
    """Wraps a model; adds up the time spent inside its calls."""

    def __init__(self, inner) -> None:
        self.inner, self.spent, self.calls = inner, 0.0, 0
        self.settings = getattr(inner, "settings", None)

    async def acomplete(self, messages, tools, *, on_text=None):
        started = time.perf_counter()
        try:
            return await self.inner.acomplete(messages, tools, on_text=on_text)
        finally:
            self.spent += time.perf_counter() - started
            self.calls += 1


def per_step(home: Path, db: Path) -> None:
    from assay import Kernel
    from assay.plugins.agent.ask import AskOptions, aask

    server = FakeModelServer(STEPS)
    os.environ["ASSAY_OPENAI_BASE_URL"] = server.url
    kernel = Kernel()
    try:
        model = TimedModel(kernel.model("openai_compatible", model="fake"))
        from assay.plugins.agent import AgentSettings

        settings = AgentSettings(max_steps=STEPS + 1)
        from assay.plugins.ask_cli import open_url

        options = AskOptions(
            question="what is 6 * 7, many times?",
            databases=[f"sqlite:///{db}"],
            settings=settings,
            open_url=open_url,
        )
        # one warm-up run: imports, the datasource's first connection and schema
        asyncio.run(aask(kernel, options, model=model))
        server.calls_left = STEPS
        model.spent, model.calls = 0.0, 0
        started = time.perf_counter()
        transcript = asyncio.run(aask(kernel, options, model=model))
        total = time.perf_counter() - started
    finally:
        kernel.close()
        server.close()
    assert transcript.steps == STEPS + 1 and str(transcript.status) == "answered", (
        transcript.summary()
    )
    steps = transcript.steps
    model_ms = model.spent / model.calls * 1e3
    tool_s = sum(r.elapsed_ms or 0.0 for r in transcript.tool_results) / 1e3
    overhead_ms = (total - model.spent - tool_s) / steps * 1e3
    counter = Kernel()
    events = sum(1 for _ in counter.runs.events(transcript.run_id))
    counter.close()
    print(
        f"per step ({steps} steps, {events} events written): agent overhead {overhead_ms:.2f} ms, "
        f"model call (fake server) {model_ms:.2f} ms, tool (query + capture) {tool_s / STEPS * 1e3:.2f} ms; "
        f"ratio overhead/model call {overhead_ms / model_ms:.2f}x "
        f"[target <= 5 ms: {'ok' if overhead_ms <= 5 else 'OVER'}]"
    )


def _first_request(argv_for, env: dict[str, str]) -> tuple[float, float | None, float]:
    """Start ``argv_for(url)`` against a fresh fake server: ms to its first request, CPU ms then, CPU ms in all."""
    server = FakeModelServer(0)
    env = dict(env, ASSAY_OPENAI_BASE_URL=server.url)
    try:
        started = time.time()
        before = os.times()
        proc = subprocess.Popen(
            argv_for(server.url), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        server.client_pid = proc.pid
        proc.wait(timeout=60)
        after = os.times()
        assert server.first_request_at is not None, "the model was never asked"
        return (
            (server.first_request_at - started) * 1e3,
            server.client_cpu_ms,
            _children_cpu_ms(before, after),
        )
    finally:
        server.close()


def start_up(home: Path, db: Path) -> None:
    env = dict(os.environ, ASSAY_HOME=str(home))
    env.pop(
        "PYTHONDONTWRITEBYTECODE", None
    )  # an installed assay has its bytecode cached: the first run writes it
    ask_argv = [
        sys.executable,
        "-m",
        "assay.kernel.cli",
        "ask",
        "--db",
        f"sqlite:///{db}",
        "--model",
        "openai_compatible:fake",
        "--quiet",
        "how much?",
    ]
    baseline, base_cpu, to_request, cpu, cpu_to_request, floor = [], [], [], [], [], []
    for attempt in range(
        STARTS + 1
    ):  # the first round (bytecode written, caches warm) is not counted
        started = time.time()
        before = os.times()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        after = os.times()
        pass_ms = (time.time() - started) * 1e3
        ask_ms, ask_cpu_then, ask_cpu = _first_request(lambda url: ask_argv, env)
        floor_ms, _, _ = _first_request(lambda url: [sys.executable, "-c", LIBRARY_FLOOR, url], env)
        if attempt:
            baseline.append(pass_ms)
            base_cpu.append(_children_cpu_ms(before, after))
            to_request.append(ask_ms)
            cpu.append(ask_cpu)
            floor.append(floor_ms)
            if ask_cpu_then is not None:
                cpu_to_request.append(ask_cpu_then)
    base, ask_ms, floor_ms = (
        statistics.median(baseline),
        statistics.median(to_request),
        statistics.median(floor),
    )
    print(
        f"start-up to the first model request: {ask_ms:.0f} ms (median of {STARTS}); `python -c pass` "
        f"{base:.0f} ms; ratio {ask_ms / base:.1f}x [target <= 600 ms: {'ok' if ask_ms <= 600 else 'OVER'}]"
    )
    print(
        f"  library floor (asyncio, click, pydantic, httpx and one request; nothing of assay's): {floor_ms:.0f} ms; "
        f"`assay ask` {ask_ms / floor_ms:.2f}x it, {ask_ms - floor_ms:.0f} ms of assay's own"
    )
    if cpu_to_request:
        print(
            f"  CPU time used by `assay ask` when its first request arrived: {statistics.median(cpu_to_request):.0f} "
            f"ms (min {min(cpu_to_request):.0f}); `python -c pass` whole: {statistics.median(base_cpu):.0f} ms"
        )
    print(
        f"  CPU time of the whole `assay ask` process (start-up, one model call, exit; less sensitive to a busy "
        f"machine than wall time): {statistics.median(cpu):.0f} ms"
    )


def make_thread(home: Path, db: Path) -> str:
    """THREAD_RUNS runs, each continuing the one before, with THREAD_ARTIFACTS artifacts in all; the last run id."""
    from assay import Kernel, Settings
    from assay.plugins.agent.ask import AskOptions, ask
    from assay.plugins.models.scripted import ScriptedModel

    kernel = Kernel(settings=Settings.from_env(home=str(home)))
    per_run = THREAD_ARTIFACTS // THREAD_RUNS
    parent = None
    try:
        for turn in range(THREAD_RUNS):
            calls = [
                {
                    "tool": "sql_query",
                    "arguments": {
                        "sql": f"SELECT region, SUM(amount) + {turn * 100 + i} AS "
                        "total FROM sales GROUP BY region"
                    },
                }
                for i in range(per_run)
            ]
            half = (
                len(calls) // 2
            )  # two model turns: at most ASSAY_AGENT_MAX_TOOL_CALLS_PER_TURN (8) calls each
            model = ScriptedModel(
                [{"tools": calls[:half]}, {"tools": calls[half:]}, {"text": f"turn {turn} done"}]
            )
            transcript = ask(
                kernel,
                AskOptions(
                    question=f"question {turn}",
                    databases=[f"sqlite:///{db}"],
                    parent_run_id=parent,
                    open_url=_open_url,
                ),
                model=model,
            )
            assert len(transcript.artifact_ids) == per_run, transcript.status_reason
            parent = transcript.run_id
    finally:
        kernel.close()
    return parent


def _open_url(kernel, url, allow_privileged):
    from assay.plugins.sql import attach_url

    return attach_url(kernel, url, allow_privileged)


def follow_up_start_up(home: Path, db: Path) -> None:
    last = make_thread(home, db)
    env = dict(os.environ, ASSAY_HOME=str(home))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    fresh_argv = [
        sys.executable,
        "-m",
        "assay.kernel.cli",
        "ask",
        "--db",
        f"sqlite:///{db}",
        "--model",
        "openai_compatible:fake",
        "--quiet",
        "how much?",
    ]
    follow_argv = [
        sys.executable,
        "-m",
        "assay.kernel.cli",
        "ask",
        "--continue",
        last,
        "--model",
        "openai_compatible:fake",
        "--quiet",
        "and by region?",
    ]
    fresh, follow = [], []
    for attempt in range(STARTS + 1):
        fresh_ms, _, _ = _first_request(lambda url: fresh_argv, env)
        follow_ms, _, _ = _first_request(lambda url: follow_argv, env)
        if attempt:
            fresh.append(fresh_ms)
            follow.append(follow_ms)
    f, c = statistics.median(fresh), statistics.median(follow)
    print(
        f"follow-up start-up (`assay ask --continue`, a thread of {THREAD_RUNS} runs and {THREAD_ARTIFACTS} "
        f"artifacts, all verified): {c:.0f} ms; a fresh `assay ask` {f:.0f} ms (medians of {STARTS}); ratio "
        f"{c / f:.2f}x [target <= 1.2x: {'ok' if c <= 1.2 * f else 'OVER'}]"
    )


def _children_cpu_ms(before: os.times_result, after: os.times_result) -> float:
    return (
        after.children_user + after.children_system - before.children_user - before.children_system
    ) * 1e3


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        os.environ["ASSAY_HOME"] = str(home)
        db = make_db(Path(tmp) / "shop.db")
        if "--follow-up-only" not in sys.argv:
            per_step(home, db)
            start_up(home, db)
        follow_up_start_up(home, db)
    return 0


if __name__ == "__main__":
    sys.exit(main())
