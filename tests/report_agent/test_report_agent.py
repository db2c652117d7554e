"""The report sub-agent: precheck, hand-back and its budgets, repair, degradation, honest status."""

from __future__ import annotations

import re

import pytest

from assay import AssayError
from assay.plugins.report_agent.handback import request_calculation
from assay.plugins.report_agent.state import ReportState, ReportStateStore
from examples.report_scenarios import (
    ask,
    boom,
    bound_artifact,
    generate,
    highest_table,
    manifest,
    number,
    py,
    refunds,
    sql,
    submit,
    writer,
)
from tests.report_agent.conftest import tamper

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog


def test_result_less_python_needs_analysis_and_starts_no_writer(run):
    py(
        run, None, result_set=False, stdout='{"overall_refund_rate": 0.07}\n'
    )  # printed JSON is not a result
    py(run, None, result_set=True)  # REPORT_RESULT = None is not one either
    model = writer(manifest())
    outcome = generate(run, model)
    assert outcome.status == "needs_analysis" and outcome.error_code == "REPORT_NEEDS_RESULT"
    assert outcome.retryable and outcome.pending_request is None
    assert "REPORT_RESULT" in outcome.message and model.seen == []


def test_an_empty_list_is_a_result(run):
    empty = py(run, [])
    model = writer(
        submit({"title": "t", "blocks": [{"type": "table", "artifact_id": empty.artifact_id}]})
    )
    outcome = generate(run, model)
    assert outcome.status == "completed", outcome
    assert "no rows: the result is empty" in outcome.report


def test_hand_back_completes_and_is_bound(store_run):
    run = store_run
    data = refunds(run)
    model = writer(
        manifest(),
        ask("overall refund rate", ["sum refunded", "divide by sum orders"], [data.artifact_id]),
        submit(
            lambda m: {
                "title": "Refunds",
                "blocks": [number("Overall", bound_artifact(m), "overall_refund_rate", ".2%")],
            }
        ),
    )
    first = generate(run, model)
    assert first.status == "needs_analysis" and first.pending_request["request_id"] == "calc_1"
    assert first.pending_request["input_summary"][0]["sha256"] == data.sha256
    assert first.counters["handbacks_used"] == 1
    printed = py(
        run, None, result_set=False, stdout="0.0731"
    )  # an attempt that only prints does not complete it
    answer = py(run, {"overall_refund_rate": 0.0731}, inputs=(data.artifact_id,))
    final = generate(run, model)
    assert final.status == "completed" and final.formal, final
    assert "**Overall:** 7.31%" in final.report
    state = ReportStateStore.for_run(run).load(run.run_id)
    request = state.requests[0]
    assert request.status == "completed" and request.result_artifact_id == answer.artifact_id
    assert (
        request.attempt_artifacts == [printed.artifact_id, answer.artifact_id]
        and request.attempts == 2
    )
    assert final.counters["recovered_by_handback"] == 1 and final.counters["completed_clean"] == 0


def test_the_same_pending_request_twice_spends_nothing(run):
    data = refunds(run)
    model = writer(ask("overall rate", ["Sum refunded", "divide"], [data.artifact_id]))
    first = generate(run, model)
    again = generate(run, model)  # nothing was computed: the same request, no sitting, no budget
    assert again.status == "needs_analysis" and again.pending_request["request_id"] == "calc_1"
    assert len(model.seen) == 1 and again.counters["handbacks_used"] == 1
    state = ReportStateStore.for_run(run).load(run.run_id)
    request, what = request_calculation(
        state,
        run.artifacts.catalog,
        run.run_id,
        "rate, again",
        ["sum   REFUNDED", "Divide"],
        [data.artifact_id],
    )
    assert what == "pending" and request.request_id == "calc_1"
    assert (
        state.handbacks_used == 1
        and state.dedup_hits == 1
        and request.names_asked == ["rate, again"]
    )
    assert first.counters["handbacks_used"] == 1


def test_a_completed_request_asked_again_is_reused_and_a_new_one_costs_budget(run):
    data = refunds(run)
    state = ReportState(run_id=run.run_id)
    catalog = run.artifacts.catalog
    request, _ = request_calculation(state, catalog, run.run_id, "rate", ["a"], [data.artifact_id])
    request.status, request.result_artifact_id = "completed", "art_x"
    again, what = request_calculation(state, catalog, run.run_id, "rate", ["A"], [data.artifact_id])
    assert what == "completed" and again is request and state.handbacks_used == 1
    request_calculation(state, catalog, run.run_id, "other", ["b"], [data.artifact_id])
    assert state.handbacks_used == 2


def test_the_fourth_hand_back_is_refused(run):
    data = refunds(run)
    state = ReportState(run_id=run.run_id)
    for n in range(3):
        request, _ = request_calculation(
            state,
            run.artifacts.catalog,
            run.run_id,
            f"figure {n}",
            [f"step {n}"],
            [data.artifact_id],
        )
        request.status = "completed"
    with pytest.raises(AssayError) as caught:
        request_calculation(
            state, run.artifacts.catalog, run.run_id, "figure 3", ["step 3"], [data.artifact_id]
        )
    assert caught.value.code == "REPORT_HANDBACK_BUDGET_SPENT" and state.handbacks_used == 3


def test_the_hand_back_budget_is_configurable_and_reported(make_assay_kernel, monkeypatch):
    from examples.report_scenarios import PLUGINS

    monkeypatch.setenv("ASSAY_REPORT_MAX_HANDBACKS", "1")
    monkeypatch.setenv("ASSAY_REPORT_MAX_ATTEMPTS", "2")
    run = make_assay_kernel(*PLUGINS).new_run()
    data = refunds(run)
    outcome = generate(run, writer(ask("x", ["s"], [data.artifact_id])))
    assert outcome.counters["handback_limit"] == 1 and outcome.counters["attempt_limit"] == 2


def test_the_fourth_attempt_on_one_request_is_refused(run):
    data = refunds(run)
    model = writer(
        ask("median rate", ["median of refund_rate"], [data.artifact_id]),
        submit({"title": "Refunds", "blocks": highest_table(data.artifact_id)}),
    )
    generate(run, model)
    failed = [py(run, status="failed", result_set=False) for _ in range(3)]
    fourth = py(run, {"median": 0.05})  # a good answer, but past the budget
    outcome = generate(run, model)
    state = ReportStateStore.for_run(run).load(run.run_id)
    request = state.requests[0]
    assert request.status == "exhausted" and request.attempts == 3
    assert request.attempt_artifacts == [f.artifact_id for f in failed]
    assert request.refused_artifacts == [fourth.artifact_id] and request.result_artifact_id is None
    assert outcome.status == "partial" and not outcome.formal
    assert any("median rate" in w for w in outcome.warnings)
    assert "could not be computed" in outcome.report
    assert any(
        "REPORT_CALC_ATTEMPTS_EXHAUSTED" not in m.get("content", "")
        and "could not be computed" in (m.get("content") or "")
        for m in state.messages
        if m["role"] == "user"
    )


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("missing", "REPORT_CALC_INPUT_NOT_FOUND"),
        ("failed", "REPORT_CALC_INPUT_FAILED"),
        ("other_run", "REPORT_CALC_INPUT_OTHER_RUN"),
        ("chart", "REPORT_CALC_INPUT_KIND"),
        ("empty", "REPORT_CALC_INVALID"),
    ],
)
def test_a_request_input_must_be_a_successful_sql_or_python_artifact_of_this_run(run, case, code):
    from assay.kernel.evidence import capture_file

    if case == "missing":
        inputs = ["art_nope"]
    elif case == "failed":
        inputs = [sql(run, ["a"], [], status="failed").artifact_id]
    elif case == "other_run":
        with run.kernel.new_run() as other:
            inputs = [refunds(other).artifact_id]
    elif case == "chart":
        inputs = [
            capture_file(
                run.artifacts, data=b"\x89PNG", name="c.png", media_type="image/png", kind="chart"
            ).artifact_id
        ]
    else:
        inputs = []
    state = ReportState(run_id=run.run_id)
    with pytest.raises(AssayError) as caught:
        request_calculation(state, run.artifacts.catalog, run.run_id, "x", ["s"], inputs)
    assert caught.value.code == code and state.handbacks_used == 0


def test_a_refused_request_goes_back_to_the_writer_as_a_tool_call_failure(run):
    data = refunds(run)
    model = writer(
        ask("x", ["s"], ["art_nope"]),
        submit({"title": "t", "blocks": highest_table(data.artifact_id)}),
    )
    outcome = generate(run, model)
    assert outcome.status == "completed"
    assert "REPORT_CALC_INPUT_NOT_FOUND" in model.seen[1][-1].content
    assert (
        outcome.counters["failures_by_phase"] == {"tool_call": 1}
        and outcome.counters["handbacks_used"] == 0
    )


def test_no_progress_stops_early_by_fingerprint(run):
    data = refunds(run)
    bad = {"title": "Refunds", "blocks": highest_table(data.artifact_id, sort=False)}
    model = writer(*[submit(bad)] * 10)
    outcome = generate(run, model)
    assert (
        outcome.status == "failed"
        and not outcome.retryable
        and outcome.error_code == "REPORT_NO_PROGRESS"
    )
    assert len(model.seen) == 2 and outcome.counters["steps"] == 2  # well before the 12-step budget
    assert outcome.counters["failures_by_phase"] == {"precheck": 2}
    assert (
        generate(run, model).counters["generate_calls"] == 2 and len(model.seen) == 2
    )  # failed stays failed


def test_the_same_error_on_different_documents_also_stops(run):
    data = refunds(run)
    docs = [
        {"title": f"v{n}", "blocks": [number("n", data.artifact_id, [500, "refund_rate"])]}
        for n in range(5)
    ]
    outcome = generate(run, writer(*map(submit, docs)))
    assert outcome.error_code == "REPORT_NO_PROGRESS" and outcome.counters["failures_by_phase"] == {
        "assembly": 2
    }


def test_a_heading_claiming_an_order_the_table_does_not_apply_is_caught_and_repaired(run):
    data = refunds(run)
    model = writer(
        submit({"title": "Refunds", "blocks": highest_table(data.artifact_id, sort=False)}),
        submit({"title": "Refunds", "blocks": highest_table(data.artifact_id)}),
    )
    outcome = generate(run, model)
    refusal = model.seen[1][-1].content
    assert "REPORT_TABLE_ORDER_UNSUPPORTED" in refusal and "precheck failed: block 1" in refusal
    assert outcome.status == "completed" and outcome.counters["completed_clean"] == 1
    assert "| store 087 | north | 0.7861 |" in outcome.report.splitlines()[6]


def test_a_sort_in_the_wrong_direction_or_on_another_column_is_caught(run):
    data = refunds(run)
    wrong_way = highest_table(data.artifact_id)
    wrong_way[1]["sort"] = [{"column": "refund_rate", "descending": False}]
    other = highest_table(data.artifact_id)
    other[1]["sort"] = [{"column": "store_id", "descending": True}]
    model = writer(
        submit({"title": "a", "blocks": wrong_way}),
        submit({"title": "b", "blocks": other}),
        submit({"title": "c", "blocks": highest_table(data.artifact_id)}),
    )
    outcome = generate(run, model)
    assert "sorts refund_rate ascending" in model.seen[1][-1].content
    assert "which the claim does not name" in model.seen[2][-1].content
    assert outcome.status == "completed"


def test_a_computed_ordered_result_satisfies_the_claim_without_sort(run):
    top = py(run, {"top": [{"store": "b", "refund_rate": 0.7}, {"store": "a", "refund_rate": 0.2}]})
    doc = {
        "title": "t",
        "blocks": [
            {"type": "heading", "text": "Highest refund rate"},
            {"type": "table", "artifact_id": top.artifact_id, "path": "top"},
        ],
    }
    assert generate(run, writer(submit(doc))).status == "completed"


def test_writer_exception_renders_the_saved_draft_deterministically(run):
    data = refunds(run)
    draft = {
        "title": "Refunds",
        "blocks": [
            number("Worst", data.artifact_id, [87, "refund_rate"]),
            *highest_table(data.artifact_id, sort=False),
        ],
    }
    outcome = generate(run, writer(submit(draft), boom))
    assert outcome.status == "partial" and not outcome.formal and not outcome.retryable
    assert outcome.execution_error.startswith("REPORT_SUBAGENT_FAILED: RuntimeError")
    assert outcome.last_render_error is None
    assert outcome.report.startswith("# Refunds\n\nPARTIAL REPORT")
    assert "**Worst:** 0.7861" in outcome.report and "## Gaps" in outcome.report
    assert outcome.counters["delivered_with_gaps"] == 1


def test_a_bug_in_the_fallback_render_fails_the_report_and_is_not_shown_as_a_gap(run, monkeypatch):
    import assay.kernel.evidence as evidence
    from assay.plugins.report_agent import assemble
    from assay.plugins.reports import resolve

    data = refunds(run)
    draft = {
        "title": "Refunds",
        "blocks": [
            number("Worst", data.artifact_id, [87, "refund_rate"]),
            *highest_table(data.artifact_id, sort=False),
        ],
    }
    real = evidence.read_artifact_result

    def read(catalog, artifact_id, selection, *args, **kwargs):
        if selection.get("path") == [87, "refund_rate"]:
            raise TypeError("a bug, not the evidence")
        return real(catalog, artifact_id, selection, *args, **kwargs)

    for module in (assemble, resolve):  # where the fallback's assembly and render read values
        monkeypatch.setattr(module, "read_artifact_result", read)
    outcome = generate(run, writer(submit(draft), boom))
    assert outcome.status == "failed" and outcome.report is None and not outcome.retryable
    assert (
        outcome.last_render_error
        == "REPORT_NOT_RENDERABLE: internal error: TypeError: a bug, not the evidence"
    )


def test_writer_timeout_is_recorded_apart_from_the_render(make_assay_kernel, monkeypatch):
    import threading
    import time

    from examples.report_scenarios import PLUGINS

    monkeypatch.setenv("ASSAY_REPORT_TIMEOUT_S", "1")
    run = make_assay_kernel(*PLUGINS).new_run()
    data = refunds(run)

    hung = threading.Event()

    def slow(messages):
        hung.wait(60)  # a model call that hangs until the test ends
        return {"text": "late"}

    draft = {
        "title": "t",
        "blocks": [number("n", data.artifact_id, [0, 5]), *highest_table(data.artifact_id, False)],
    }
    started = time.monotonic()
    try:
        outcome = generate(run, writer(submit(draft), slow))
        assert (
            time.monotonic() - started < 30
        )  # returned at the 1 s deadline, not when the hung call ends
    finally:
        hung.set()
    assert (
        outcome.execution_error.startswith("REPORT_SUBAGENT_TIMEOUT")
        and outcome.last_render_error is None
    )
    assert outcome.status == "partial" and "**n:** 0.01" in outcome.report


def test_writer_exception_with_nothing_renderable_fails_for_good_and_keeps_the_draft(run):
    refunds(run)
    draft = {"title": "Refunds", "blocks": [number("Rate", "art_does_not_exist", [0, 1])]}
    outcome = generate(run, writer(submit(draft), boom))
    assert outcome.status == "failed" and outcome.retryable is False and outcome.report is None
    assert outcome.execution_error.startswith("REPORT_SUBAGENT_FAILED")
    assert outcome.last_render_error.startswith("REPORT_NOT_RENDERABLE")
    state = ReportStateStore.for_run(run).load(run.run_id)
    assert state.draft["blocks"][0]["artifact_id"] == "art_does_not_exist" and state.messages
    from assay.plugins.report_agent.generate import outcome_result

    result = outcome_result(outcome)
    assert not result.success and result.metadata["report_status"] == "failed"
    assert "Stop calling generate_report" in result.hint


def test_unverifiable_values_degrade_to_missing_marks_and_charts_are_omitted(store_run):
    from assay.kernel.evidence import capture_file

    run = store_run
    data = refunds(run)
    rate = py(run, {"overall_refund_rate": 0.0731})
    chart = capture_file(
        run.artifacts,
        data=b"\x89PNG chart bytes",
        name="c.png",
        media_type="image/png",
        kind="chart",
    )
    tamper(run, rate)
    tamper(run, chart)
    doc = {
        "title": "Refunds",
        "blocks": [
            {
                "type": "text",
                "text": "Overall {rate} of orders.",
                "cite": {"rate": {"artifact_id": rate.artifact_id, "path": "overall_refund_rate"}},
            },
            {"type": "image", "artifact_id": chart.artifact_id, "caption": "Refund rate by store"},
            *highest_table(data.artifact_id),
        ],
    }
    outcome = generate(run, writer(submit(doc)))
    assert outcome.status == "completed" and outcome.formal
    assert "Overall -- of orders." in outcome.report and "![" not in outcome.report
    assert "0.0731" not in outcome.report and "7.31" not in outcome.report
    assert len(outcome.warnings) == 2 and all(
        "ARTIFACT_INTEGRITY_FAILED" in w for w in outcome.warnings
    )
    assert "## Gaps" in outcome.report and "| store 087 | north | 0.7861 |" in outcome.report
    assert outcome.counters["delivered_with_gaps"] == 1 and outcome.counters["completed_clean"] == 0


def test_the_writer_cannot_set_gaps_or_unavailable_itself(run):
    data = refunds(run)
    doc = {"title": "t", "blocks": [dict(number("n", data.artifact_id, [0, 5]), unavailable="x")]}
    model = writer(
        submit(doc), submit({"title": "t", "blocks": [number("n", data.artifact_id, [0, 5])]})
    )
    outcome = generate(run, model)
    assert "REPORT_RESERVED_FIELD" in model.seen[1][-1].content and outcome.status == "completed"


def test_the_writer_has_only_its_five_tools(run):
    data = refunds(run)
    model = writer(
        {"tool": "sql_query", "arguments": {"sql": "select 1"}},
        submit({"title": "t", "blocks": [number("n", data.artifact_id, [0, 5])]}),
    )
    offered = []
    complete = model.complete
    model.complete = lambda messages, tools, **kw: (
        offered.append(tools) or complete(messages, tools, **kw)
    )
    outcome = generate(run, model)
    assert "REPORT_TOOL_NOT_ALLOWED" in model.seen[1][-1].content
    assert outcome.counters["failures_by_phase"] == {"tool_call": 1}
    assert sorted(t["function"]["name"] for t in offered[0]) == [
        "artifact_details",
        "read_artifact_result",
        "report_evidence_manifest",
        "request_report_calculation",
        "submit_report",
    ]
    assert "generate_report" in run.kernel.tools and "submit_report" not in run.kernel.tools


def test_artifact_details_takes_at_most_twelve_ids(run):
    data = refunds(run)
    model = writer(
        {
            "tool": "artifact_details",
            "arguments": {
                "artifact_ids": [data.artifact_id] + [f"art_{i:020d}" for i in range(12)]
            },
        },
        submit({"title": "t", "blocks": [number("n", data.artifact_id, [0, 5])]}),
    )
    generate(run, model)
    assert "ARTIFACT_DETAILS_LIMIT" in model.seen[1][-1].content


def test_the_key_record_after_row_50_is_cited_correctly(store_run):
    run = store_run
    data = refunds(run, stores=300, key=216)
    model = writer(
        {
            "tool": "read_artifact_result",
            "arguments": {"artifact_id": data.artifact_id, "selectors": {"path": [216]}},
        },
        submit(
            {
                "title": "t",
                "blocks": [
                    number("Worst store", data.artifact_id, [216, "store"]),
                    number("Its rate", data.artifact_id, [216, "refund_rate"]),
                    *highest_table(data.artifact_id),
                ],
            }
        ),
    )
    outcome = generate(run, model)
    assert "216: [216" in model.seen[1][-1].content
    assert (
        "**Worst store:** store 216" in outcome.report and "**Its rate:** 0.8734" in outcome.report
    )
    table = outcome.report.split("| store | region | refund_rate |")[1]
    assert table.splitlines()[2] == "| store 216 | north | 0.8734 |"


def test_a_three_row_wide_table_shows_every_row_and_column(run):
    columns = [f"metric_{i:02d}" for i in range(30)]
    rows = [[f"{'x' * 200}{r}-{c}" for c in range(30)] for r in range(3)]
    wide = sql(run, columns, rows)
    outcome = generate(
        run,
        writer(
            submit(
                {
                    "title": "Wide",
                    "blocks": [
                        {
                            "type": "table",
                            "artifact_id": wide.artifact_id,
                            "caption": "Three wide rows",
                        }
                    ],
                }
            )
        ),
    )
    assert outcome.status == "completed"
    assert "| " + " | ".join(columns) + " |" in outcome.report
    for r in range(3):
        assert f"{'x' * 200}{r}-29 |" in outcome.report
    assert "(3 of 3 rows)" in outcome.report


def test_an_empty_result_is_reported_as_no_rows_never_zero(run):
    empty = sql(run, ["store", "refunds"], [])
    model = writer(
        submit({"title": "t", "blocks": [number("Refunds", empty.artifact_id, [0, "refunds"])]}),
        submit(
            {
                "title": "t",
                "blocks": [
                    {
                        "type": "table",
                        "artifact_id": empty.artifact_id,
                        "caption": "Refunds during the campaign",
                    }
                ],
            }
        ),
    )
    outcome = generate(run, model)
    assert (
        "ARTIFACT_SELECTOR_INVALID" in model.seen[1][-1].content
    )  # a number from no rows is refused
    assert outcome.status == "completed"
    assert "*Refunds during the campaign (no rows: the result is empty)*" in outcome.report
    body = outcome.report.split("## Sources")[0]
    assert "0" not in body.replace("[^1]", "")


def test_the_tool_call_cap_stops_the_writer_as_failed_and_keeps_its_draft(
    make_assay_kernel, monkeypatch
):
    from examples.report_scenarios import PLUGINS

    monkeypatch.setenv("ASSAY_REPORT_MAX_TOOL_CALLS", "3")
    run = make_assay_kernel(*PLUGINS).new_run()
    data = refunds(run)
    draft = {"title": "t", "blocks": highest_table(data.artifact_id, sort=False)}
    reads = [
        {
            "tool": "read_artifact_result",
            "arguments": {"artifact_id": data.artifact_id, "selectors": {"rows": [n, n + 1]}},
        }
        for n in range(5)
    ]
    outcome = generate(run, writer(submit(draft), *reads))
    assert (
        outcome.status == "failed"
        and outcome.error_code == "REPORT_BUDGET_SPENT"
        and not outcome.retryable
    )
    assert outcome.report is None and outcome.counters["tool_calls"] == 4  # the fourth was refused
    state = ReportStateStore.for_run(run).load(run.run_id)
    assert state.draft is not None and state.report_artifact_id is None and not state.formal


def test_the_step_budget_stops_the_writer_as_failed(make_assay_kernel, monkeypatch):
    from examples.report_scenarios import PLUGINS

    monkeypatch.setenv("ASSAY_REPORT_MAX_STEPS", "2")
    run = make_assay_kernel(*PLUGINS).new_run()
    refunds(run)
    outcome = generate(run, writer(manifest(), manifest(), manifest()))
    assert outcome.status == "failed" and outcome.error_code == "REPORT_BUDGET_SPENT"
    assert outcome.counters["steps"] == 2 and outcome.counters["stopped_failed"] == 1


def test_a_chart_claiming_an_order_is_checked_and_an_unverifiable_one_is_omitted(run):
    data = refunds(run)
    rate = py(
        run, {"by_store": [{"store": "a", "refund_rate": 0.2}, {"store": "b", "refund_rate": 0.7}]}
    )
    unsorted = {
        "type": "chart",
        "chart": "bar",
        "artifact_id": data.artifact_id,
        "x": "store",
        "y": "refund_rate",
        "caption": "Highest refund rate",
        "max_points": 5,
    }
    chart = dict(
        unsorted,
        artifact_id=rate.artifact_id,
        path="by_store",
        sort=[{"column": "refund_rate", "descending": True}],
    )
    model = writer(
        submit({"title": "t", "blocks": [unsorted]}),
        lambda m: (
            tamper(run, rate)
            or submit(
                {"title": "t", "blocks": [chart, number("n", data.artifact_id, [0, "refund_rate"])]}
            )
        ),
    )
    outcome = generate(run, model)
    assert "REPORT_TABLE_ORDER_UNSUPPORTED" in model.seen[1][-1].content
    assert outcome.status == "completed" and len(outcome.warnings) == 1
    assert "chart 'Highest refund rate' omitted: ARTIFACT_INTEGRITY_FAILED" in outcome.warnings[0]


def test_an_unknown_report_model_is_recorded_and_the_status_stays_honest(
    make_assay_kernel, monkeypatch
):
    from assay.plugins.report_agent.generate import generate as run_generate
    from examples.report_scenarios import PLUGINS

    monkeypatch.setenv("ASSAY_REPORT_MODEL", "no_such_provider")
    run = make_assay_kernel(*PLUGINS).new_run()
    refunds(run)
    outcome = run_generate(run, "")
    assert outcome.status == "failed" and not outcome.retryable
    assert outcome.execution_error.startswith("REPORT_NO_MODEL: MODEL_NOT_FOUND")
    result = run.kernel.call_tool("generate_report", {}, run=run)
    assert result.metadata["report_status"] == "failed" and not result.success


def test_a_recorded_report_writer_replays_the_hand_back_in_a_new_run(kernel, tmp_path):
    """Both sittings of the writer recorded in one run, replayed in another (new artifact ids): same outcome."""
    from assay.plugins.models.cassette import RecordingModel
    from assay.plugins.models.replay import ReplayModel

    def play(model):
        with kernel.new_run() as run:
            data = refunds(run)
            first = generate(run, model)
            py(run, {"overall_refund_rate": 0.0731}, inputs=(data.artifact_id,))
            return first, generate(run, model)

    cassette = tmp_path / "writer.jsonl"
    # arguments in sorted key order: the replay model hands back recorded tool calls with sorted keys and then
    # compares the next request key-order-sensitively (noted for the models owner)
    scripted = writer(
        manifest(),
        lambda m: {
            "tool": "request_report_calculation",
            "arguments": {
                "inputs": [re.search(r"- (art_\w+) sql", m[-1].content)[1]],
                "name": "overall refund rate",
                "steps": ["sum refunded / sum orders"],
            },
        },
        submit(
            lambda m: {
                "title": "Refunds",
                "blocks": [number("Overall", bound_artifact(m), "overall_refund_rate", ".2%")],
            }
        ),
    )
    recorded = play(RecordingModel(scripted, cassette))
    replay = ReplayModel(path=cassette)
    replayed = play(replay)
    replay.assert_finished()
    assert (
        [o.status for o in replayed]
        == [o.status for o in recorded]
        == ["needs_analysis", "completed"]
    )
    assert (
        "**Overall:** 7.31%" in replayed[1].report
        and replayed[1].counters["recovered_by_handback"] == 1
    )
