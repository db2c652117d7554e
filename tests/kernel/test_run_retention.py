"""`assay runs prune`: runs older than the retention go; what a kept run cites stays."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from assay import AssayError, Kernel
from assay.kernel.cli import build_cli
from assay.kernel.evidence import capture_python_execution, capture_sql_execution
from assay.plugins.runs.records import RunRecord
from assay.plugins.runs.retention import prune

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # SQLite files and the shared PostgreSQL database
LATER = 31 * 86_400.0  # "now" a month on: what was captured today is past a 30-day retention


def rows(run, region: str) -> str:
    return capture_sql_execution(
        run.artifacts,
        columns=["region", "n"],
        rows=iter([[region, 1]]),
        sql="select 1",
        database="db",
        dialect="sqlite",
        elapsed_ms=1.0,
    ).artifact_id


@pytest.fixture
def history(monkeypatch):
    """An old agent run (two artifacts), an old tool-call run, an old run still going, and a new run
    whose analysis cites one of the old run's artifacts."""
    monkeypatch.setenv("ASSAY_LOAD_PLUGINS", "local_store,runs")
    kernel = Kernel()
    now = time.time()
    ids = {}
    for name, started, status in (
        ("old", now, "succeeded"),
        ("going", now, "running"),
        ("new", now + LATER, "succeeded"),
    ):
        run = kernel.new_run()
        kernel.runs.start(
            RunRecord(
                run_id=run.run_id,
                question=name,
                status=status,
                started_at=started,
                ended_at=None if status == "running" else started,
                pid=None,
            )
        )
        ids[name] = run
    ids["cited"] = rows(ids["old"], "north")
    ids["uncited"] = rows(ids["old"], "south")
    tool_call = kernel.new_run()
    ids["tool_call"] = tool_call
    ids["tool_artifact"] = rows(tool_call, "east")
    capture_python_execution(
        ids["new"].artifacts,
        code="...",
        result={"source": ids["cited"]},
        result_set=True,
        stdout="",
        stderr="",
        status="succeeded",
    )
    yield kernel, ids, now
    for run in (ids["old"], ids["going"], ids["new"], tool_call):
        run.close()
    kernel.close()


def test_a_dry_prune_lists_old_runs_and_removes_nothing(history):
    kernel, ids, now = history
    report = prune(kernel.runs, kernel.evidence.catalog, 30, now=now + LATER)
    assert report.agent_runs == [ids["old"].run_id] and report.evidence_runs == [
        ids["tool_call"].run_id
    ]
    assert report.artifacts_removed == 2 and not report.applied
    assert kernel.runs.get(ids["old"].run_id) is not None
    assert kernel.evidence.catalog.get(ids["uncited"]) is not None


def test_prune_removes_old_agent_and_tool_call_runs_but_keeps_what_a_kept_run_cites(history):
    kernel, ids, now = history
    report = prune(kernel.runs, kernel.evidence.catalog, 30, apply=True, now=now + LATER, grace_s=0)
    catalog = kernel.evidence.catalog
    assert report.applied and report.artifacts_kept_cited == {ids["cited"]: [ids["new"].run_id]}
    assert (
        kernel.runs.get(ids["old"].run_id) is None
        and list(kernel.runs.events(ids["old"].run_id)) == []
    )
    assert catalog.get(ids["uncited"]) is None and catalog.get(ids["tool_artifact"]) is None
    assert report.content_removed >= 1  # the uncited rows' content is gone from the store
    from assay.kernel.evidence import read_artifact_result

    assert (
        read_artifact_result(catalog, ids["cited"], {}).total_rows == 1
    )  # still there, still hashes right
    assert kernel.runs.get(ids["going"].run_id) is not None  # a running run is never pruned
    assert kernel.runs.get(ids["new"].run_id) is not None
    assert report.removed_runs == [
        ids["tool_call"].run_id
    ]  # the old run is kept in part (its cited artifact)


def test_runs_prune_is_dry_by_default_and_applies_with_apply(history, monkeypatch):
    kernel, ids, now = history
    monkeypatch.setattr(time, "time", lambda: now + LATER)
    kernel.settings.run_retention_days = 30  # what ASSAY_RUN_RETENTION_DAYS=30 sets
    cli = build_cli(kernel)
    dry = CliRunner().invoke(cli, ["runs", "prune"], obj={"kernel": kernel})
    assert dry.exit_code == 0, dry.output
    assert "would remove 1 agent run(s), 1 tool-call/MCP run(s), 2 artifact record(s)" in dry.output
    assert (
        f"kept {ids['cited']}: cited by {ids['new'].run_id}" in dry.output
        and "--apply" in dry.output
    )
    done = CliRunner().invoke(cli, ["runs", "prune", "--apply", "--json"], obj={"kernel": kernel})
    assert json.loads(done.output)["applied"] is True and kernel.runs.get(ids["old"].run_id) is None


def test_prune_without_a_retention_fails_with_runs_retention_unset(monkeypatch):
    from assay import Settings
    from assay.plugins.runs.retention import retention_days

    monkeypatch.delenv("ASSAY_RUN_RETENTION_DAYS", raising=False)
    assert retention_days(None, Settings(run_retention_days=7)) == 7.0
    with pytest.raises(AssayError) as caught:
        retention_days(None, Settings())
    assert caught.value.code == "RUNS_RETENTION_UNSET" and "--older-than" in caught.value.hint
