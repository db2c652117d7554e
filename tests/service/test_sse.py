"""One SSE framer: a run's events are framed the same whether the run executed in the API's process
or on a worker (read back from the catalog)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from assay.plugins.service.sse import END, KEEPALIVE, event_frame, frame, run_event


def test_an_event_is_its_id_kind_and_json_data_ended_by_a_blank_line():
    item = run_event("tool_finished", "run_1", 2, 1.5, {"tool": "sql_query", "rows": 3})
    text = event_frame(7, item)
    assert text.endswith("\n\n") and text.count("\n") == 4
    lines = text.splitlines()
    assert lines[:2] == ["id: 7", "event: tool_finished"]
    assert json.loads(lines[2].removeprefix("data: ")) == item
    assert frame("error", {"code": "X"}) == 'event: error\ndata: {"code": "X"}\n\n'  # no id line
    assert END == "event: end\ndata: {}\n\n" and KEEPALIVE.startswith(":")


def test_a_value_json_cannot_hold_is_sent_as_its_text_on_one_line():
    from decimal import Decimal

    text = frame("message", {"text": "two\nlines", "amount": Decimal("1.10")})
    assert text.count("\n") == 3  # the newline inside the data is escaped in its JSON
    assert json.loads(text.splitlines()[1].removeprefix("data: ")) == {
        "text": "two\nlines",
        "amount": "1.10",
    }


async def test_the_api_and_the_workers_stream_frame_a_run_the_same(make_assay_kernel):
    from assay.plugins import runs_plugin
    from assay.plugins.agent.transcript import AgentEvent
    from assay.plugins.runs import RunRecorder
    from assay.plugins.service.event_stream import run_stream
    from assay.plugins.worker.dispatch import RemoteRuns

    kernel = make_assay_kernel(runs_plugin).start()
    recorder = RunRecorder(kernel.runs)
    for step, kind, data in [
        (0, "run_started", {"question": "q", "model": "m"}),
        (1, "tool_finished", {"tool": "sql_query", "success": True}),
        (1, "run_finished", {"summary": {"status": "answered"}}),
    ]:
        recorder(AgentEvent(kind, "run_sse", step, data))  # type: ignore[arg-type]
    history = [
        run_event(e.kind, "run_sse", e.step, e.at, e.data) for e in kernel.runs.events("run_sse")
    ]
    here = [text async for text in run_stream(SimpleNamespace(), "run_sse", history, None)]

    remote = RemoteRuns.__new__(
        RemoteRuns
    )  # its stream reads the runs store only: no broker needed
    remote.kernel, remote.settings = kernel, SimpleNamespace(poll_s=0.01)
    on_worker = [text async for text in remote.stream("run_sse", 5.0)]

    assert here == on_worker
    kinds = [line for t in here for line in t.splitlines() if line.startswith("event: ")]
    assert kinds == [
        "event: run_started",
        "event: tool_finished",
        "event: run_finished",
        "event: end",
    ]
