"""Fixtures for the agent's tests: a kernel with a real SQLite datasource, evidence, and test tools."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path

import pytest

from assay import ToolResult, hookimpl, tool
from assay.kernel.tools import FunctionTool


def make_shop(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sales (region TEXT, amount INTEGER)")
    conn.executemany(
        "INSERT INTO sales VALUES (?, ?)", [("north", 10), ("south", 32), ("north", 5)]
    )
    conn.commit()
    conn.close()
    return path


@tool
async def slow_parallel(label: str, seconds: float) -> str:
    """Sleep, then return the label (may run concurrently)."""
    await asyncio.sleep(seconds)
    return f"{label} at {time.monotonic():.3f}"


slow_parallel.concurrent = True

ACTIVE = {"now": 0, "peak": 0}


@tool
async def slow_serial(label: str, seconds: float) -> str:
    """Sleep, then return the label (one at a time)."""
    ACTIVE["now"] += 1
    ACTIVE["peak"] = max(ACTIVE["peak"], ACTIVE["now"])
    try:
        await asyncio.sleep(seconds)
    finally:
        ACTIVE["now"] -= 1
    return label


@tool
def big_text(size: int) -> str:
    """Return `size` characters of text."""
    return "x" * size


@tool
def fake_report(status: str) -> ToolResult:
    """Pretend to write a report with the given status."""
    from assay import ArtifactRef

    return ToolResult.ok(
        {"report": f"# Report\n\nstatus {status}"},
        content=f"report {status}",
        metadata={"report_status": status},
        artifacts=[ArtifactRef(artifact_id=f"art_report_{status}", kind="report")],
    )


fake_report_tool = FunctionTool(fake_report.func, name="generate_report")


class AgentTestTools:
    __name__ = "agent_test_tools"

    @hookimpl
    def register_tools(self, register):
        for item in (slow_parallel, slow_serial, big_text, fake_report_tool):
            register(item)


@pytest.fixture
def shop_db(tmp_path) -> Path:
    return make_shop(tmp_path / "shop.db")


@pytest.fixture
def agent_kernel(make_assay_kernel, monkeypatch, shop_db):
    """``agent_kernel(db=True)``: SQL plugin (with the shop database when ``db``), scripted model, runs, test tools."""
    from assay.plugins import evidence_tools, runs_plugin, sql
    from assay.plugins.models import scripted

    def make(db: bool = True, **settings):
        if db:
            monkeypatch.setenv("ASSAY_SQL_DATABASES", f"shop=sqlite:///{shop_db}")
        else:
            monkeypatch.delenv("ASSAY_SQL_DATABASES", raising=False)
        return make_assay_kernel(
            sql, scripted, evidence_tools, runs_plugin, AgentTestTools(), **settings
        ).start()

    return make


@pytest.fixture
def script(tmp_path):
    """``script(*steps)``: a JSON script file for the scripted model, as ``--model scripted:PATH``."""

    def write(*steps) -> str:
        path = tmp_path / f"script_{len(list(tmp_path.glob('script_*')))}.json"
        path.write_text(json.dumps(list(steps)))
        return f"scripted:{path}"

    return write


@pytest.fixture
def serial_counter():
    """How many ``slow_serial`` calls run now, and the most at once."""
    ACTIVE.update(now=0, peak=0)
    return ACTIVE
