"""The report writer and figures written in prose: told the rule, refused once, then bound (clean) or kept flagged."""

from __future__ import annotations

import pytest

from assay.plugins.report_agent.subagent import SYSTEM_PROMPT
from examples.report_scenarios import generate, py, submit, writer

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog


def prose(rate_id: str, bound: bool) -> dict:
    text = (
        "Refunds were {rate} of promoted orders."
        if bound
        else "Refunds were 7.31% of promoted orders."
    )
    cite = (
        {"rate": {"artifact_id": rate_id, "path": "overall_refund_rate", "format": ".2%"}}
        if bound
        else {}
    )
    return {"title": "Refunds", "blocks": [{"type": "text", "text": text, "cite": cite}]}


def test_the_writer_is_told_to_cite_every_figure():
    assert (
        "Never write a figure yourself" in SYSTEM_PROMPT and "{name} placeholder" in SYSTEM_PROMPT
    )


def test_a_figure_bound_after_the_refusal_gives_a_clean_report(run):
    rate = py(run, {"overall_refund_rate": 0.0731})
    model = writer(
        submit(prose(rate.artifact_id, bound=False)), submit(prose(rate.artifact_id, bound=True))
    )
    outcome = generate(run, model)
    refusal = [m.content for m in model.seen[1] if m.role == "tool"][-1]
    assert "REPORT_FIGURE_UNBOUND" in refusal and "7.31% in block 0 (text)" in refusal
    assert outcome.status == "completed" and outcome.formal and outcome.unbound_figures == []
    assert outcome.counters["completed_clean"] and "Refunds were 7.31%" in outcome.report


def test_a_figure_left_in_the_prose_is_kept_flagged_and_not_clean(run):
    rate = py(run, {"overall_refund_rate": 0.0731})
    document = prose(rate.artifact_id, bound=False)
    outcome = generate(run, writer(submit(document), submit(document)))
    assert outcome.status == "completed" and outcome.unbound_figures == ["7.31% in block 0 (text)"]
    assert not outcome.counters["completed_clean"] and outcome.counters["delivered_with_gaps"]
    assert outcome.warnings == [
        "figure 7.31% in block 0 (text) is not a bound citation: it was not read from the evidence"
    ]
    assert "## Figures not bound to evidence" in outcome.report
