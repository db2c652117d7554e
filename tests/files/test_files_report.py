"""A report over a registered file, end to end through ``assay ask``'s code path: SQL over the file, Python
over the same file (``load_file`` in the real podman sandbox), a report written by the report sub-agent
whose numbers are read from those artifacts, and each cited artifact tracing to the file's ``source``
artifact (its SHA-256 the file's bytes). Both agents are scripted; the writer's model is chosen by
ASSAY_REPORT_MODEL."""

from __future__ import annotations

import hashlib
import re

from assay.plugins.report_agent.verify import verify_report
from tests.code_interpreter.conftest import IMAGE, _podman_image_ready
from tests.conftest import require
from tests.files.conftest import write_csv

GROUP_BY = "SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY total DESC"
PYTHON = (
    "df = load_file('sales')\n"
    "REPORT_RESULT = {'north_mean': float(df[df.region == 'north'].amount.mean())}"
)


def _manifest_ids(messages) -> tuple[str, str]:
    text = next(
        m.content for m in messages if m.role == "tool" and m.name == "report_evidence_manifest"
    )
    return (
        re.search(r"- (art_\w+) sql succeeded", text)[1],
        re.search(r"- (art_\w+) python succeeded", text)[1],
    )


def _writer_turn(messages):
    """The report writer: read the evidence manifest, then submit a report citing both artifacts."""
    if not any(m.role == "tool" and m.name == "report_evidence_manifest" for m in messages):
        return {"tool": "report_evidence_manifest", "arguments": {}}
    sql_id, python_id = _manifest_ids(messages)
    document = {
        "title": "Sales by region",
        "blocks": [
            {
                "type": "text",
                "text": "North sold {mean} a month on average.",
                "cite": {"mean": {"artifact_id": python_id, "path": "north_mean"}},
            },
            {"type": "table", "artifact_id": sql_id},
        ],
    }
    return {"tool": "submit_report", "arguments": {"document": document}}


def _writer_plugin():
    from assay import hookimpl
    from assay.plugins.models.scripted import ScriptedModel

    class Writer(ScriptedModel):
        model_id = "files_report_writer"

        def __init__(self, **options):
            super().__init__([_writer_turn] * 6)

    class Plugin:
        @hookimpl
        def register_models(self, register):
            register(Writer)

    return Plugin()


def test_a_report_over_a_file_reads_its_numbers_from_artifacts_that_trace_to_the_files_bytes(
    files_dir, tmp_path, monkeypatch
):
    ok, what = _podman_image_ready()
    require(ok, what)
    from assay import Kernel, Settings
    from assay.plugins.agent.ask import AskOptions, ask
    from assay.plugins.ask_cli import open_files
    from assay.plugins.models.scripted import ScriptedModel

    path = write_csv(files_dir / "sales.csv")
    for key, value in {
        "SANDBOX_RUNTIME": "podman",
        "SANDBOX_IMAGE_PYTHON": IMAGE,
        "SANDBOX_CPU_LIMIT": "1",
        "ASSAY_REPORT_MODEL": "files_report_writer",
    }.items():
        monkeypatch.setenv(key, value)
    kernel = Kernel(
        plugins=[_writer_plugin()], settings=Settings.from_env(home=str(tmp_path / "home"))
    )
    main = ScriptedModel(
        [
            {"tool": "sql_query", "arguments": {"sql": GROUP_BY}},
            {"tool": "code_interpreter", "arguments": {"code": PYTHON}},
            {"tool": "generate_report", "arguments": {"instructions": "Sales by region"}},
            {"text": "The report is ready."},
        ]
    )
    try:
        transcript = ask(
            kernel,
            AskOptions(
                question="How did the regions sell?", files=[str(path)], open_files=open_files
            ),
            model=main,
        )
        report = transcript.tool_results[-1]
        assert report.tool == "generate_report" and report.success, report.for_model()
        outcome = report.data
        assert outcome["status"] == "completed" and outcome["formal"], outcome
        assert (
            "North sold 125.25[^1] a month on average." in outcome["report"]
        )  # a footnote to its artifact
        catalog = kernel.evidence.catalog
        assert verify_report(catalog, outcome["report_artifact_id"]).ok
        sql_art, python_art = (
            transcript.tool_results[0].artifacts[0],
            transcript.tool_results[1].artifacts[0],
        )
        (source_id,) = catalog.get(sql_art.artifact_id).provenance["sources"]
        assert catalog.get(python_art.artifact_id).provenance["sources"] == [source_id]
        source = catalog.get(source_id)
        assert source.provenance["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    finally:
        kernel.sandbox.close()
        kernel.close()
