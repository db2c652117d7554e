"""Cancelling a run while its sandbox runs code closes the run's sandbox session (local runtime:
the same on every machine) and keeps the run as ``cancelled``."""

from __future__ import annotations

import asyncio
import time

import pytest

from assay.plugins.agent.ask import AskOptions, aask
from assay.plugins.models.scripted import ScriptedModel


@pytest.fixture
def local_sandbox(monkeypatch):
    monkeypatch.setenv("SANDBOX_RUNTIME", "local")
    monkeypatch.setenv("SANDBOX_ALLOW_LOCAL_RUNTIME", "1")


async def test_cancelling_a_run_closes_its_sandbox_session_and_records_cancelled(
    make_assay_kernel, local_sandbox
):
    import assay.sandbox_runtimes.plugins as runtimes
    from assay.plugins import code_interpreter, runs_plugin, sandbox_plugin
    from assay.plugins.models import scripted

    kernel = make_assay_kernel(
        code_interpreter, scripted, runs_plugin, sandbox_plugin, runtimes.local
    ).start()
    events = []
    model = ScriptedModel(
        [{"tool": "code_interpreter", "arguments": {"code": "import time\ntime.sleep(120)"}}]
    )
    task = asyncio.ensure_future(
        aask(kernel, AskOptions(question="wait"), model=model, observers=[events.append])
    )
    deadline = time.monotonic() + 60
    while not (any(e.kind == "tool_started" for e in events) and kernel.sandbox.list()):
        assert time.monotonic() < deadline and not task.done()
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # the code is running
    task.cancel()
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 30
    assert kernel.sandbox.list() == []
    [record] = kernel.runs.list()
    assert record.status == "cancelled" and record.run_id == events[0].run_id
