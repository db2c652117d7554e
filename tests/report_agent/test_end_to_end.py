"""End to end through ``assay ask``'s code path (kernel.ask.ask, the runs store, ``assay runs show``): real SQLite,
real podman sandbox, both agents scripted (the report writer's model chosen by ASSAY_REPORT_MODEL). The main agent's first analysis only prints; the report hands the calculation back; the main agent
assigns REPORT_RESULT; the report completes and verifies."""

from __future__ import annotations

import re
import sqlite3

import pytest
from click.testing import CliRunner

from assay.plugins.report_agent.state import ReportStateStore
from assay.plugins.report_agent.verify import verify_report
from examples.report_scenarios import (
    ask,
    bound_artifact,
    highest_table,
    manifest,
    number,
    submit,
    writer,
)
from tests.code_interpreter.conftest import IMAGE, _podman_image_ready
from tests.conftest import require

REFUNDS_SQL = (
    "SELECT store, region, COUNT(*) AS promo_orders, SUM(refunded) AS refunded_orders, "
    "ROUND(1.0 * SUM(refunded) / COUNT(*), 4) AS refund_rate FROM orders GROUP BY store, region "
    "ORDER BY store"
)
PRINT_ONLY = (
    "df = load_artifact({aid!r})\n"
    "print({{'overall_refund_rate': df['refunded_orders'].sum() / df['promo_orders'].sum()}})"
)
ASSIGN = (
    "df = load_artifact({aid!r})\n"
    "REPORT_RESULT = {{'overall_refund_rate': float(df['refunded_orders'].sum() / df['promo_orders'].sum())}}"
)


def _ids(message) -> list[str]:
    line = [x for x in message.content.splitlines() if x.startswith("artifacts:")][-1]
    return [i.strip() for i in line.split(":", 1)[1].split(",")]


def _last_tool(messages, name):
    return next(m for m in reversed(messages) if m.role == "tool" and m.name == name)


@pytest.fixture
def retail(tmp_path):
    path = tmp_path / "retail.db"
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, store TEXT, region TEXT, refunded INTEGER)"
    )
    con.executemany(
        "INSERT INTO orders VALUES (?,?,?,?)",
        [
            (i, f"store {i % 60:02d}", ["north", "south"][i % 2], int(i % (7 + i % 60) == 0))
            for i in range(6000)
        ],
    )
    con.commit()
    con.close()
    return path


def _writer_turn(messages):
    """The scripted report writer, decided from its conversation (each generate_report makes a new instance)."""
    tools = {m.name: m.content for m in messages if m.role == "tool"}
    if "report_evidence_manifest" not in tools:
        return manifest()
    sql = re.search(r"- (art_\w+) sql succeeded", tools["report_evidence_manifest"])[1]
    if "is done: cite artifact" not in "".join(
        m.content or "" for m in messages if m.role == "user"
    ):
        return ask(
            "overall refund rate",
            ["sum refunded_orders", "divide by the sum of promo_orders"],
            [sql],
        )
    return submit(
        lambda m: {
            "title": "Refunds",
            "blocks": [
                number("Overall refund rate", bound_artifact(m), "overall_refund_rate", ".2%"),
                *highest_table(sql),
            ],
        }
    )(messages)


def _writer_plugin():
    from assay import hookimpl
    from assay.plugins.models.scripted import ScriptedModel

    class Writer(ScriptedModel):
        model_id = "e2e_report_writer"

        def __init__(self, **options):
            super().__init__([_writer_turn] * 10)

    class Plugin:
        @hookimpl
        def register_models(self, register):
            register(Writer)

    return Plugin()


def test_assay_ask_print_only_analysis_is_handed_back_and_the_report_completes(
    retail, tmp_path, monkeypatch
):
    ok, what = _podman_image_ready()
    require(ok, what)
    from assay import Kernel, Settings
    from assay.kernel.cli import build_cli
    from assay.plugins.agent.ask import AskOptions, ask

    for key, value in {
        "SANDBOX_RUNTIME": "podman",
        "SANDBOX_IMAGE_PYTHON": IMAGE,
        "SANDBOX_CPU_LIMIT": "1",
        "ASSAY_SQL_DATABASES": f"retail=sqlite:///{retail}",
        "ASSAY_REPORT_MODEL": "e2e_report_writer",
    }.items():  # the writer's model, by setting
        monkeypatch.setenv(key, value)
    kernel = Kernel(
        plugins=[_writer_plugin()], settings=Settings.from_env(home=str(tmp_path / "home"))
    )
    main = writer(
        {"tool": "sql_query", "arguments": {"sql": REFUNDS_SQL, "datasource": "retail"}},
        lambda m: {
            "tool": "code_interpreter",
            "arguments": {
                "code": PRINT_ONLY.format(aid=_ids(_last_tool(m, "sql_query"))[0]),
                "inputs": _ids(_last_tool(m, "sql_query"))[:1],
            },
        },
        {
            "tool": "generate_report",
            "arguments": {"instructions": "Refund rate on orders, overall and by store"},
        },
        lambda m: {
            "tool": "code_interpreter",
            "arguments": {
                "code": ASSIGN.format(
                    aid=re.search(
                        r"inputs=\['(art_\w+)'\]", _last_tool(m, "generate_report").content
                    )[1]
                ),
                "inputs": [
                    re.search(r"inputs=\['(art_\w+)'\]", _last_tool(m, "generate_report").content)[
                        1
                    ]
                ],
            },
        },
        {"tool": "generate_report", "arguments": {}},
        {"text": "The report is ready."},
    )
    try:
        transcript = ask(
            kernel,
            AskOptions(question="Which stores refund most?", databases=["retail"]),
            model=main,
        )
        statuses = [
            r.metadata.get("report_status")
            for r in transcript.tool_results
            if r.tool == "generate_report"
        ]
        assert statuses == ["needs_analysis", "completed"], transcript.tool_results
        assert str(transcript.status) == "answered", transcript.status_reason
        printed = transcript.tool_results[1]
        assert printed.success and printed.data["result_set"] is False
        state = ReportStateStore(kernel.evidence.catalog.db).load(transcript.run_id)
        request = state.requests[0]
        assigned = transcript.tool_results[3].artifacts[0].artifact_id
        assert request.status == "completed" and request.result_artifact_id == assigned
        assert (
            request.attempts == 1
            and state.handbacks_used == 1
            and state.outcome["recovered_by_handback"]
        )
        outcome = transcript.tool_results[-1].data
        assert outcome["formal"] and "**Overall refund rate:** " in outcome["report"]
        assert verify_report(kernel.evidence.catalog, outcome["report_artifact_id"]).ok
        shown = CliRunner().invoke(
            build_cli(kernel), ["runs", "show", transcript.run_id], obj={"kernel": kernel}
        )
        assert shown.exit_code == 0, shown.output
        assert "report needs_analysis: hand-backs 1/3 (attempts calc_1 0/3)" in shown.output
        assert "report completed: hand-backs 1/3 (attempts calc_1 1/3)" in shown.output
        assert "outcome recovered_by_handback" in shown.output
    finally:
        kernel.sandbox.close()
        kernel.close()
