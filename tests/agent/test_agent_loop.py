"""The main agent loop: statuses from what happened, dispatch, limits, errors back to the model."""

from __future__ import annotations

import asyncio
import time

import pytest

from assay import AssayError
from assay.plugins.agent import RunStatus, arun_agent, run_agent
from assay.plugins.models.scripted import ScriptedModel

SUM_SQL = "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region"
LONG_SQL = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500) "
    "SELECT x, 'a line of padding text' AS padding FROM c"
)


def ask(kernel, steps, question="which region sells most?", **options):
    model = ScriptedModel(steps)
    with kernel.new_run() as run:
        transcript = run_agent(kernel, model, run, question, **options)
    return transcript, model, run


def test_answer_after_a_successful_query_is_answered_and_the_run_carries_its_model(agent_kernel):
    kernel = agent_kernel()
    transcript, model, run = ask(
        kernel, [{"tool": "sql_query", "arguments": {"sql": SUM_SQL}}, {"text": "south sells most"}]
    )
    assert transcript.status == RunStatus.ANSWERED and transcript.answer == "south sells most"
    assert run.model is model
    assert len(transcript.artifact_ids) == 1 and transcript.calls[0].row_count == 2
    tool_message = transcript.messages[3]
    assert (
        transcript.artifact_ids[0] in tool_message.content and "| south |" in tool_message.content
    )


def test_answer_without_any_evidence_on_a_database_needs_analysis(agent_kernel):
    transcript, _, _ = ask(agent_kernel(), [{"text": "south, surely"}])
    assert transcript.status == RunStatus.NEEDS_ANALYSIS and transcript.answer == "south, surely"


def test_answer_needing_no_evidence_is_answered(agent_kernel):
    transcript, _, _ = ask(agent_kernel(db=False), [{"text": "hello"}], question="say hello")
    assert (
        transcript.status == RunStatus.ANSWERED and transcript.status_reason == "no evidence needed"
    )


def test_a_run_whose_every_sql_failed_cannot_be_answered(agent_kernel):
    transcript, _, _ = ask(
        agent_kernel(),
        [
            {"tool": "sql_query", "arguments": {"sql": "SELECT nope FROM missing_table"}},
            {"tool": "sql_query", "arguments": {"sql": "DELETE FROM sales"}},
            {"text": "south sells 32"},
        ],
    )
    assert [c.error_code for c in transcript.calls] == [
        "SQL_QUERY_FAILED",
        "SQL_READ_ONLY_REQUIRED",
    ] or all(not c.success for c in transcript.calls)
    assert (
        transcript.status == RunStatus.FAILED
        and "every SQL query failed" in transcript.status_reason
    )


@pytest.mark.parametrize(
    "report, expected",
    [
        ("completed", RunStatus.ANSWERED),
        ("partial", RunStatus.PARTIAL),
        ("needs_analysis", RunStatus.NEEDS_ANALYSIS),
        ("failed", RunStatus.FAILED),
    ],
)
def test_the_last_report_status_folds_into_the_run_status(agent_kernel, report, expected):
    transcript, _, _ = ask(
        agent_kernel(),
        [
            {"tool": "sql_query", "arguments": {"sql": SUM_SQL}},
            {"tool": "generate_report", "arguments": {"status": "failed"}},
            {"tool": "generate_report", "arguments": {"status": report}},
            {"text": "see the report"},
        ],
    )
    assert transcript.status == expected


def test_parallel_calls_of_concurrent_tools_run_at_once_with_results_in_the_models_order(
    agent_kernel,
):
    calls = [
        {"tool": "slow_parallel", "arguments": {"label": "first", "seconds": 0.6}},
        {"tool": "slow_parallel", "arguments": {"label": "second", "seconds": 0.1}},
    ]
    transcript, _, _ = ask(agent_kernel(db=False), [{"tools": calls}, {"text": "done"}])
    assert [c.call_id for c in transcript.calls] == [
        "call_1",
        "call_2",
    ]  # the model's order, not finishing order
    first, second = transcript.messages[3], transcript.messages[4]
    assert first.content.startswith('"first') and second.content.startswith('"second')
    # the second call, started after the first in the model's order, finished first: they ran at once
    assert float(second.content.split(" at ")[1].rstrip('"')) < float(
        first.content.split(" at ")[1].rstrip('"')
    )


def test_calls_of_tools_that_do_not_allow_it_run_one_at_a_time(agent_kernel, serial_counter):
    calls = [
        {"tool": "slow_serial", "arguments": {"label": str(i), "seconds": 0.1}} for i in range(3)
    ]
    transcript, _, _ = ask(agent_kernel(db=False), [{"tools": calls}, {"text": "done"}])
    assert serial_counter["peak"] == 1 and [m.content for m in transcript.messages[3:6]] == [
        '"0"',
        '"1"',
        '"2"',
    ]


def test_calls_past_the_per_turn_limit_are_answered_not_run_and_reported(agent_kernel):
    calls = [{"tool": "big_text", "arguments": {"size": 3}} for _ in range(3)]
    transcript, _, _ = ask(
        agent_kernel(
            db=False,
        ),
        [{"tools": calls}, {"text": "done"}],
        settings=_settings(max_tool_calls_per_turn=2),
    )
    assert [c.error_code for c in transcript.calls] == [None, None, "AGENT_TOOL_CALLS_LIMIT"]
    assert transcript.limits_hit[0]["limit"] == "max_tool_calls_per_turn"
    assert transcript.messages[-2].content.startswith("error AGENT_TOOL_CALLS_LIMIT")


def _settings(**values):
    from assay.plugins.agent import AgentSettings

    return AgentSettings(**values)


def test_max_steps_ends_the_run_with_its_status_and_is_reported(agent_kernel):
    transcript, _, _ = ask(
        agent_kernel(), [{"tool": "sql_query", "arguments": {"sql": SUM_SQL}}] * 5, max_steps=2
    )
    assert transcript.status == RunStatus.MAX_STEPS and transcript.stopped == "max_steps"
    assert transcript.limits_hit == [{"limit": "max_steps", "value": 2, "step": 2}]


def test_max_wall_time_ends_a_running_tool_call_and_the_run(agent_kernel):
    started = time.monotonic()
    transcript, _, _ = ask(
        agent_kernel(db=False),
        [{"tool": "slow_parallel", "arguments": {"label": "x", "seconds": 30}}],
        settings=_settings(max_wall_s=0.5),
    )
    assert time.monotonic() - started < 10
    assert (
        transcript.status == RunStatus.MAX_TIME
        and transcript.limits_hit[0]["limit"] == "max_wall_s"
    )


def test_older_tool_results_are_compacted_to_stubs_naming_their_artifacts(agent_kernel):
    kernel = agent_kernel()
    steps = [
        {"tool": "sql_query", "arguments": {"sql": LONG_SQL}},
        {"tool": "big_text", "arguments": {"size": 1200}},
        {"tool": "big_text", "arguments": {"size": 1200}},
        {"text": "north and south"},
    ]
    transcript, model, _ = ask(
        kernel,
        steps,
        settings=_settings(
            token_budget=1000, compact_at=0.9, keep_recent_results=1, prompt_tokens=100
        ),
    )
    assert transcript.compactions, "no compaction recorded"
    stubbed = [
        m for m in model.seen[-1] if m.role == "tool" and m.content.startswith("[compacted]")
    ]
    assert stubbed and any(transcript.artifact_ids[0] in m.content for m in stubbed)
    first = transcript.compactions[0]
    assert first.tokens_after < first.tokens_before and "call_1" in first.call_ids
    assert transcript.artifact_ids[0] in first.artifact_ids
    assert transcript.status == RunStatus.ANSWERED


def test_a_conversation_over_the_budget_after_compaction_ends_with_max_tokens(agent_kernel):
    transcript, _, _ = ask(
        agent_kernel(db=False),
        [{"tool": "big_text", "arguments": {"size": 20_000}}] * 3,
        settings=_settings(token_budget=1000, keep_recent_results=5, tool_result_chars=20_000),
    )
    assert (
        transcript.status == RunStatus.MAX_TOKENS
        and transcript.limits_hit[-1]["limit"] == "token_budget"
    )


def test_a_tool_result_is_bounded_and_keeps_its_artifact_ids(agent_kernel):
    transcript, _, _ = ask(
        agent_kernel(),
        [{"tool": "sql_query", "arguments": {"sql": LONG_SQL}}, {"text": "ok"}],
        settings=_settings(tool_result_chars=600),
    )
    content = transcript.messages[3].content
    assert (
        len(content) <= 600 and "[cut:" in content and content.endswith(transcript.artifact_ids[0])
    )


def test_a_tool_that_does_not_exist_goes_back_to_the_model(agent_kernel):
    transcript, model, _ = ask(
        agent_kernel(), [{"tool": "drop_everything", "arguments": {}}, {"text": "sorry"}]
    )
    assert transcript.calls[0].error_code == "TOOL_NOT_FOUND"
    assert model.seen[1][-1].content.startswith("error TOOL_NOT_FOUND")
    assert transcript.status == RunStatus.NEEDS_ANALYSIS


def test_a_tool_outside_the_runs_tool_list_is_not_found(agent_kernel):
    transcript, model, _ = ask(
        agent_kernel(),
        [{"tool": "sql_query", "arguments": {"sql": SUM_SQL}}, {"text": "no"}],
        tools=["list_tables"],
    )
    assert transcript.calls[0].error_code == "TOOL_NOT_FOUND" and not transcript.artifact_ids
    assert "Available tools: list_tables" in model.seen[1][-1].content


def test_malformed_tool_arguments_go_back_to_the_model_as_arguments_invalid(agent_kernel):
    transcript, model, _ = ask(
        agent_kernel(), [{"tool": "sql_query", "arguments": '{"sql": "SELECT 1"'}, {"text": "oops"}]
    )
    assert transcript.calls[0].error_code == "TOOL_ARGUMENTS_INVALID"
    assert model.seen[1][-1].content.startswith(
        "error TOOL_ARGUMENTS_INVALID: arguments are not valid JSON"
    )


class FailingModel:
    model_id = "failing"

    def __init__(self, error):
        self.error = error

    async def acomplete(self, messages, tools, *, on_text=None):
        raise self.error


@pytest.mark.parametrize(
    "error, status, code",
    [
        (
            AssayError("MODEL_UNREACHABLE", "cannot reach http://127.0.0.1:9/v1"),
            RunStatus.MODEL_UNREACHABLE,
            "MODEL_UNREACHABLE",
        ),
        (AssayError("MODEL_AUTH_FAILED", "401"), RunStatus.MODEL_FAILED, "MODEL_AUTH_FAILED"),
        (RuntimeError("provider bug"), RunStatus.MODEL_FAILED, "MODEL_ERROR"),
    ],
)
def test_a_model_error_ends_the_run_with_its_status_and_code(agent_kernel, error, status, code):
    kernel = agent_kernel()
    with kernel.new_run() as run:
        transcript = run_agent(kernel, FailingModel(error), run, "q")
    assert transcript.status == status and transcript.error.code == code


def test_an_empty_question_is_invalid_input(agent_kernel):
    transcript, model, _ = ask(agent_kernel(), [{"text": "?"}], question="   ")
    assert (
        transcript.status == RunStatus.INVALID_INPUT
        and transcript.error.code == "AGENT_QUESTION_EMPTY"
    )
    assert model.seen == []


async def test_cancelling_the_run_records_cancelled_and_reraises(agent_kernel):
    kernel = agent_kernel(db=False)
    events = []
    model = ScriptedModel([{"tool": "slow_parallel", "arguments": {"label": "x", "seconds": 30}}])
    with kernel.new_run() as run:
        task = asyncio.ensure_future(arun_agent(kernel, model, run, "q", observers=[events.append]))
        while not any(e.kind == "tool_started" for e in events):
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert events[-1].kind == "run_finished" and events[-1].data["summary"]["status"] == "cancelled"


def test_the_system_prompt_carries_the_evidence_rules_and_a_bounded_schema(
    agent_kernel, tmp_path, monkeypatch
):
    import sqlite3

    wide = tmp_path / "wide.db"
    conn = sqlite3.connect(wide)
    for t in range(40):
        cols = ", ".join(f"column_number_{c} INTEGER" for c in range(30 if t % 5 == 0 else 3))
        conn.execute(f"CREATE TABLE table_{t} ({cols})")
    conn.close()
    kernel = agent_kernel(db=False)
    from assay.plugins.sql import open_datasource

    kernel.attach(open_datasource("wide", f"sqlite:///{wide}", kernel=kernel))
    transcript, _, _ = ask(kernel, [{"text": "x"}], settings=_settings(prompt_tokens=500))
    system = transcript.messages[0].content
    resources = system.split("You can use these resources:", 1)[1]
    assert len(resources) <= 500 * 4 and "describe_table" in resources
    assert "Rules of evidence" in system and "preview" in system and "REPORT_RESULT" in system
