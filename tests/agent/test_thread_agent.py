"""Follow-up questions: a thread of runs whose main agent starts with the earlier answers and verified evidence."""

from __future__ import annotations

import re

import pytest

from assay.plugins.agent.ask import AskOptions, ask
from assay.plugins.models.scripted import ScriptedModel

SUM_SQL = "SELECT region, SUM(amount) AS total FROM sales GROUP BY region"
NORTH_SQL = "SELECT SUM(amount) AS total FROM sales WHERE region = 'north'"
PLUGINS = (
    "artifact_stores.local",
    "sql",
    "models.scripted",
    "evidence_tools",
    "reports.markdown",
    "report_agent",
    "runs_plugin",
)


@pytest.fixture
def thread_kernel(make_assay_kernel, monkeypatch, shop_db):
    import importlib

    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"shop=sqlite:///{shop_db}")
    monkeypatch.delenv("ASSAY_REPORT_MODEL", raising=False)
    plugins = [importlib.import_module(f"assay.plugins.{name}") for name in PLUGINS]
    return make_assay_kernel(*plugins).start()


def _system(model: ScriptedModel) -> str:
    return model.seen[0][0].content


def _sql_calls(kernel, run_ids) -> list[str]:
    return [
        e.data["arguments"]["sql"]
        for rid in run_ids
        for e in kernel.runs.events(rid)
        if e.kind == "tool_finished" and e.data["tool"] == "sql_query"
    ]


def _turn1(kernel):
    model = ScriptedModel(
        [
            {"tool": "sql_query", "arguments": {"sql": SUM_SQL}},
            lambda m: {"text": f"south sells most: 32 [{_ids(m)[0]}]"},
        ]
    )
    return ask(
        kernel, AskOptions(question="Which region sells most?", databases=["shop"]), model=model
    )


def _ids(messages) -> list[str]:
    return re.findall(
        r"art_[0-9a-f]{20}", "".join(m.content or "" for m in messages if m.role == "tool")
    )


def test_a_follow_up_starts_with_the_earlier_answer_and_cites_its_artifact_without_running_its_query_again(
    thread_kernel,
):
    first = _turn1(thread_kernel)
    art1 = first.artifact_ids[0]
    model = ScriptedModel(
        [
            {"tool": "read_artifact_result", "arguments": {"artifact_id": art1}},
            {"text": f"Yes: south's total is 32 [{art1}]."},
        ]
    )
    second = ask(
        thread_kernel,
        AskOptions(question="Is that the total of south?", parent_run_id=first.run_id),
        model=model,
    )
    system = _system(model)
    assert "Which region sells most?" in system and "south sells most: 32" in system
    assert f"- {art1} sql rows=2 complete (run {first.run_id})" in system
    assert str(second.status) == "answered", (
        second.status_reason
    )  # 32 is found in the thread's evidence
    record = thread_kernel.runs.get(second.run_id)
    assert record.parent_run_id == first.run_id
    assert record.summary["thread"]["chain"] == [first.run_id] and record.summary[
        "datasources"
    ] == ["shop"]
    assert _sql_calls(thread_kernel, [first.run_id, second.run_id]) == [SUM_SQL]


def test_three_turns_end_in_a_report_citing_turn_one_and_turn_two_that_verifies(thread_kernel):
    from assay.plugins.report_agent.verify import verify_report

    first = _turn1(thread_kernel)
    second = ask(
        thread_kernel,
        AskOptions(question="and north alone?", parent_run_id=first.run_id),
        model=ScriptedModel(
            [
                {"tool": "sql_query", "arguments": {"sql": NORTH_SQL}},
                lambda m: {"text": f"north: 15 [{_ids(m)[0]}]"},
            ]
        ),
    )
    art1, art2 = first.artifact_ids[0], second.artifact_ids[0]
    document = {
        "title": "Sales by region",
        "blocks": [
            {"type": "heading", "text": "Sales per region"},
            {
                "type": "table",
                "artifact_id": art1,
                "columns": ["region", "total"],
                "caption": "Totals",
            },
            {"type": "number", "label": "North total", "artifact_id": art2, "path": [0, "total"]},
        ],
    }
    main_and_writer = ScriptedModel(
        [
            {
                "tool": "generate_report",
                "arguments": {"instructions": "sales per region, and north"},
            },
            {
                "tool": "report_evidence_manifest",
                "arguments": {},
            },  # the writer (the run's model) from here
            {"tool": "submit_report", "arguments": {"document": document}},
            {"text": f"The report is ready: north 15 [{art2}], south 32 [{art1}]."},
        ]
    )
    third = ask(
        thread_kernel,
        AskOptions(question="Write me a report of both", parent_run_id=second.run_id),
        model=main_and_writer,
    )
    assert str(third.status) == "answered", (
        third.status_reason,
        third.tool_results[0].data,
        [m.content for m in main_and_writer.seen[3]][-2:],
    )
    outcome = third.tool_results[0].data
    assert third.tool_results[0].metadata.get("report_status") == "completed", outcome
    manifest = next(m for m in main_and_writer.seen[2] if m.role == "tool").content
    assert f"artifacts in run {first.run_id} (an earlier run of this thread: citable)" in manifest
    assert art1 in manifest and art2 in manifest
    assert verify_report(thread_kernel.evidence.catalog, outcome["report_artifact_id"]).ok
    assert _sql_calls(thread_kernel, [first.run_id, second.run_id, third.run_id]) == [
        SUM_SQL,
        NORTH_SQL,
    ]
    assert thread_kernel.runs.get(third.run_id).summary["thread"]["chain"] == [
        first.run_id,
        second.run_id,
    ]


def test_a_deleted_turn_one_artifact_is_reported_with_its_code_before_the_agent_plans(
    thread_kernel,
):
    first = _turn1(thread_kernel)
    art1 = first.artifact_ids[0]
    catalog = thread_kernel.evidence.catalog
    catalog.store.local_path(catalog.get(art1).sha256).unlink()
    model = ScriptedModel(
        [{"text": "The earlier evidence is gone; I cannot say without querying again."}]
    )
    second = ask(
        thread_kernel, AskOptions(question="and again?", parent_run_id=first.run_id), model=model
    )
    system = _system(model)
    assert "Unavailable evidence of the thread (do NOT cite these" in system
    assert f"- {art1} (run {first.run_id}): ARTIFACT_FILE_MISSING:" in system
    assert f"- {art1} sql" not in system  # not in the citable manifest
    problems = thread_kernel.runs.get(second.run_id).summary["thread"]["problems"]
    assert problems == [
        {
            "artifact_id": art1,
            "run_id": first.run_id,
            "code": "ARTIFACT_FILE_MISSING",
            "message": problems[0]["message"],
        }
    ]


def test_a_report_of_a_follow_up_refuses_a_run_outside_its_thread(thread_kernel):
    from assay.kernel.errors import AssayError
    from assay.plugins.reports.resolve import resolve_report

    other = _turn1(thread_kernel)
    first = _turn1(thread_kernel)
    with thread_kernel.new_run() as run:
        run.continue_thread([first.run_id])
        doc = {
            "title": "t",
            "blocks": [
                {"type": "table", "artifact_id": a, "columns": ["region"]}
                for a in (first.artifact_ids[0],)
            ],
        }
        assert resolve_report(doc, run).citations[0]["run_id"] == first.run_id
        doc["blocks"][0]["artifact_id"] = other.artifact_ids[0]
        with pytest.raises(AssayError) as caught:
            resolve_report(doc, run)
    assert caught.value.details["cause"] == "REPORT_CITATION_OTHER_RUN"


def test_older_turns_are_summarised_and_the_record_names_them(thread_kernel, monkeypatch):
    from assay.plugins.agent.loop import agent_settings
    from assay.plugins.agent.thread import load_thread

    parent = None
    runs = []
    for i in range(5):
        t = ask(
            thread_kernel,
            AskOptions(question=f"question {i}", parent_run_id=parent),
            model=ScriptedModel([{"text": f"answer {i} " + "x" * 400}]),
        )
        parent = t.run_id
        runs.append(t.run_id)
    settings = agent_settings(thread_kernel)
    ctx = load_thread(thread_kernel, parent, settings)
    assert ctx.summarised == runs[:2] and ctx.run_ids == runs  # 5 turns, the newest 3 whole
    assert ctx.prompt.count("[summarised]") == 2 and "answer 4 " + "x" * 400 in ctx.prompt


def test_the_manifest_stays_within_the_thread_budget_and_counts_what_it_left_out(thread_kernel):
    from assay.plugins.agent.loop import agent_settings
    from assay.plugins.agent.thread import load_thread

    model = ScriptedModel(
        [
            {
                "tools": [
                    {"tool": "sql_query", "arguments": {"sql": f"{SUM_SQL} -- {i}"}}
                    for i in range(8)
                ]
            },
            {"text": "done"},
        ]
    )
    first = ask(thread_kernel, AskOptions(question="many", databases=["shop"]), model=model)
    ctx = load_thread(thread_kernel, first.run_id, agent_settings(thread_kernel), budget_chars=900)
    assert len(first.artifact_ids) == 8 and len(ctx.artifact_ids) == 8
    assert ctx.listed < 8 and ctx.omitted == {first.run_id: 8 - ctx.listed}
    assert f"{8 - ctx.listed} of run {first.run_id}" in ctx.prompt


def test_a_recorded_two_turn_thread_replays_on_a_fresh_store_without_a_second_query(
    make_assay_kernel, monkeypatch, shop_db, tmp_path
):
    import importlib

    from assay.plugins.models.cassette import RecordingModel
    from assay.plugins.models.replay import ReplayModel

    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"shop=sqlite:///{shop_db}")
    plugins = [importlib.import_module(f"assay.plugins.{name}") for name in PLUGINS]
    tapes = [tmp_path / "turn1.jsonl", tmp_path / "turn2.jsonl"]

    def thread(kernel, models):
        first = ask(
            kernel,
            AskOptions(question="Which region sells most?", databases=["shop"]),
            model=models[0],
        )
        second = ask(
            kernel,
            AskOptions(question="How much did it sell?", parent_run_id=first.run_id),
            model=models[1],
        )
        return first, second

    recorded_kernel = make_assay_kernel(*plugins, home=str(tmp_path / "rec")).start()
    recorded = thread(
        recorded_kernel,
        [
            RecordingModel(
                ScriptedModel(
                    [
                        {"tool": "sql_query", "arguments": {"sql": SUM_SQL}},
                        lambda m: {"text": f"south: 32 [{_ids(m)[0]}]"},
                    ]
                ),
                tapes[0],
            ),
            RecordingModel(
                ScriptedModel(
                    [
                        lambda m: {
                            "text": "south sold 32 ["
                            + re.search(r"- (art_\w+) sql", m[0].content)[1]
                            + "]"
                        }
                    ]
                ),
                tapes[1],
            ),
        ],
    )
    replay_kernel = make_assay_kernel(*plugins, home=str(tmp_path / "play")).start()
    replayed = thread(replay_kernel, [ReplayModel(path=tapes[0]), ReplayModel(path=tapes[1])])
    assert (
        [str(t.status) for t in replayed]
        == [str(t.status) for t in recorded]
        == ["answered", "answered"]
    )
    assert replayed[1].answer == f"south sold 32 [{replayed[0].artifact_ids[0]}]"
    assert _sql_calls(replay_kernel, [t.run_id for t in replayed]) == [SUM_SQL]


def test_a_follow_up_without_db_of_a_parent_given_a_password_url_is_refused_with_its_code(
    thread_kernel,
):
    from assay.plugins.runs import RunRecord

    thread_kernel.runs.start(
        RunRecord(
            run_id="run_pw",
            question="q",
            started_at=1,
            status="answered",
            summary={"datasources": ["postgresql://analyst:***@db/sales"]},
        )
    )
    follow = ask(
        thread_kernel,
        AskOptions(question="and then?", parent_run_id="run_pw"),
        model=ScriptedModel([{"text": "x"}]),
    )
    assert str(follow.status) == "invalid_input" and follow.error.code == "THREAD_DATASOURCE_NEEDED"
    assert (
        thread_kernel.runs.get(follow.run_id).parent_run_id == "run_pw"
    )  # a refused follow-up keeps its link


def test_a_thread_too_long_for_its_budget_leaves_its_oldest_turns_out_counted_and_recorded(
    thread_kernel,
):
    from assay.plugins.agent.loop import agent_settings
    from assay.plugins.agent.thread import load_thread

    parent, runs = None, []
    for i in range(12):
        t = ask(
            thread_kernel,
            AskOptions(question=f"question {i} " + "q" * 300, parent_run_id=parent),
            model=ScriptedModel([{"text": f"answer {i}"}]),
        )
        parent = t.run_id
        runs.append(t.run_id)
    ctx = load_thread(thread_kernel, parent, agent_settings(thread_kernel), budget_chars=4_000)
    assert ctx.not_shown and ctx.not_shown == runs[: len(ctx.not_shown)]
    assert f"({len(ctx.not_shown)} older turn(s) not shown" in ctx.prompt and runs[-1] in ctx.prompt
    assert ctx.prompt.index("Earlier turns") < ctx.prompt.index(runs[-1])
    assert ctx.record()["turns_not_shown"] == ctx.not_shown
