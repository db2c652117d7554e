"""A run's writes through a catalog outage: kept in order, and named in the summary when they could not be
written before the run's end (PostgreSQL stopped with `pg_ctl -m immediate` under the recorder)."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("dramatiq")


@pytest.fixture
def kernel(private_pg, monkeypatch):
    from assay import Kernel, Settings

    monkeypatch.setenv("ASSAY_CATALOG_URL", private_pg.url)
    k = Kernel(
        load_entrypoints=False, plugins=["assay.plugins.runs_plugin"], settings=Settings.from_env()
    )
    k.start()
    yield k
    k.close()


def test_events_the_catalog_could_not_take_before_the_end_are_named_in_the_final_summary(
    kernel, private_pg
):
    from assay.plugins.agent import AgentEvent
    from assay.plugins.runs import RunRecord, RunRecorder
    from assay.plugins.worker.dispatch import open_leases
    from assay.plugins.worker.recording import FencedRecorder

    leases = open_leases(kernel.settings)
    kernel.runs.start(
        RunRecord(run_id="run_t1", question="q", status="queued", started_at=time.time())
    )
    leases.create("run_t1")
    assert leases.claim("run_t1", "w1", 60) is not None
    recorder = RunRecorder(kernel.runs)
    recorder.started.add("run_t1")
    fenced = FencedRecorder(recorder, leases, "run_t1", "w1", write_retry_s=2.0)
    fenced(AgentEvent("run_started", "run_t1", 0, {"question": "q", "model": "scripted"}))
    private_pg.stop()
    fenced(AgentEvent("message", "run_t1", 1, {"role": "assistant"}))  # kept, the run goes on
    assert len(fenced.pending) == 1
    back = threading.Timer(3.0, private_pg.start)  # after the events' 2 s, within the end's own 2 s
    back.start()
    summary = {
        "run_id": "run_t1",
        "status": "answered",
        "status_reason": "answer follows evidence",
        "answer": "East.",
        "steps": 1,
        "artifact_ids": [],
        "tool_calls": [],
    }
    fenced(AgentEvent("run_finished", "run_t1", 1, {"summary": summary}))
    back.join()
    record = kernel.runs.get("run_t1")
    assert record.status == "answered" and fenced.ended
    assert record.summary["transcript_incomplete"] == {"missing_events": 1, "kinds": ["message"]}
    assert "transcript incomplete" in record.status_reason
    assert [e.kind for e in kernel.runs.events("run_t1")] == ["run_started", "run_finished"]
    assert leases.get("run_t1").state == "ended"
