"""``assay report show|render`` and the HTML page ``render_report`` keeps as the saved report."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_assay
from tests.reports.conftest import RENDERER_PLUGINS, sales


def saved_run(run):
    record = sales(run)
    doc = {
        "title": "Saved",
        "blocks": [
            {
                "type": "number",
                "label": "North",
                "artifact_id": record.artifact_id,
                "path": [0, "revenue"],
            }
        ],
    }
    result = run.kernel.call_tool("render_report", {"document": doc}, run=run)
    assert result.success, result.message
    return result, record


def test_render_report_keeps_the_html_page_beside_the_markdown(run):
    result, record = saved_run(run)
    kinds = [(a.kind, a.media_type) for a in result.artifacts]
    assert kinds == [("report", "text/markdown"), ("report", "text/html")]
    from assay.kernel.evidence import open_verified_content

    _, content = open_verified_content(run.artifacts, result.data["html_artifact_id"])
    page = Path(content).read_text() if not isinstance(content, bytes) else content.decode()
    assert "Status: completed" in page and f"artifact {record.artifact_id}" in page


def test_report_show_prints_the_saved_page_path_when_no_browser_is_there(run, monkeypatch):
    saved_run(run)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("BROWSER", raising=False)
    done = run_assay("report", "show", run.run_id, env={"ASSAY_LOAD_PLUGINS": RENDERER_PLUGINS})
    assert done.exit_code == 0, done.stderr
    path = Path(done.stdout.strip())
    assert path.name == "report.html" and run.run_id in str(path)
    assert "<h1>Saved</h1>" in path.read_text()


def test_report_render_gives_the_kept_document_in_another_format(run, tmp_path):
    _, record = saved_run(run)
    done = run_assay(
        "report",
        "render",
        run.run_id,
        "--format",
        "json",
        env={"ASSAY_LOAD_PLUGINS": RENDERER_PLUGINS},
    )
    assert done.exit_code == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["blocks"][0]["value"]["citation"]["sha256"] == record.sha256


def test_report_show_of_a_run_without_a_report_fails_with_report_not_found(run):
    done = run_assay("report", "show", run.run_id, env={"ASSAY_LOAD_PLUGINS": RENDERER_PLUGINS})
    assert done.exit_code != 0 and "REPORT_NOT_FOUND" in done.stderr
