"""The runs store: every event written as the run goes, read back; a killed run stays readable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from assay.plugins.agent import run_agent
from assay.plugins.models.scripted import ScriptedModel
from assay.plugins.runs import RunRecorder

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog

SUM_SQL = "SELECT region, SUM(amount) AS total FROM sales GROUP BY region"


def test_a_finished_run_keeps_every_message_call_result_artifact_and_status(agent_kernel):
    kernel = agent_kernel()
    model = ScriptedModel([{"tool": "sql_query", "arguments": {"sql": SUM_SQL}}, {"text": "south"}])
    with kernel.new_run() as run:
        transcript = run_agent(
            kernel, model, run, "who sells most?", observers=[RunRecorder(kernel.runs)]
        )
    record = kernel.runs.get(run.run_id)
    assert (record.status, record.answer, record.model, record.tool_calls) == (
        "answered",
        "south",
        "scripted",
        1,
    )
    assert record.artifact_ids == transcript.artifact_ids and record.ended_at >= record.started_at
    events = list(kernel.runs.events(run.run_id))
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    roles = [e.data["message"]["role"] for e in events if e.kind == "message"]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    finished = next(e for e in events if e.kind == "tool_finished")
    assert (
        finished.data["artifact_ids"] == transcript.artifact_ids and finished.data["row_count"] == 2
    )
    assert "| south |" in finished.data["preview"] and finished.data["elapsed_ms"] > 0
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


def test_runs_are_listed_newest_first_and_filtered_by_status(tmp_path):
    from assay import Settings
    from assay.plugins.runs import RunRecord, open_store

    store = open_store(
        Settings.from_env(home=tmp_path)
    )  # SQLite under tmp_path, or ASSAY_CATALOG_URL's
    for i, status in enumerate(["answered", "failed", "answered"]):
        store.start(RunRecord(run_id=f"run_{i}", question="q", started_at=1000 + i))
        store.update(f"run_{i}", status=status)
    assert [r.run_id for r in store.list()] == ["run_2", "run_1", "run_0"]
    assert [r.run_id for r in store.list(status="failed")] == ["run_1"]


def test_a_killed_process_leaves_a_readable_transcript_shown_as_interrupted(
    agent_kernel, tmp_path, shop_db
):
    home = os.environ["ASSAY_HOME"]
    code = textwrap.dedent(f"""
        import asyncio, sys
        from assay import Kernel, tool, hookimpl
        from assay.plugins.agent import run_agent
        from assay.plugins.runs import RunRecorder
        from assay.plugins.models.scripted import ScriptedModel

        @tool
        async def wait_forever() -> str:
            '''Never returns.'''
            print("WAITING", flush=True)
            await asyncio.sleep(3600)
            return "never"

        class P:
            @hookimpl
            def register_tools(self, register):
                register(wait_forever)

        kernel = Kernel(plugins=[P()])
        model = ScriptedModel([{{"tool": "sql_query", "arguments": {{"sql": {SUM_SQL!r}}}}},
                               {{"tool": "wait_forever", "arguments": {{}}}}])
        run = kernel.new_run(run_id="run_killed_0001")
        run_agent(kernel, model, run, "q", observers=[RunRecorder(kernel.runs)])
    """)
    env = dict(os.environ, ASSAY_HOME=home, ASSAY_SQL_DATABASES=f"shop=sqlite:///{shop_db}")
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "WAITING"
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    kernel = agent_kernel()
    record = kernel.runs.get("run_killed_0001")
    assert record.status == "running" and record.shown_status == "interrupted"
    assert (
        record.status_reason == "" and f"pid {proc.pid}" in record.shown_reason
    )  # the reason is said
    events = list(kernel.runs.events("run_killed_0001"))
    assert [e.data["tool"] for e in events if e.kind == "tool_finished"] == ["sql_query"]
    assert events[-1].kind == "tool_started" and events[-1].data["tool"] == "wait_forever"
    assert record.artifact_ids and record.tool_calls == 1
