"""Record and replay: cassettes written by RecordingModel, played back by the replay model."""

from __future__ import annotations

import json

import pytest

from assay import AssayError, hookimpl, tool
from assay.kernel.messages import Message
from assay.plugins.agent import arun_agent
from assay.plugins.models import replay as replay_plugin
from assay.plugins.models.cassette import RecordingModel, read_cassette
from assay.plugins.models.openai_compatible import OpenAICompatibleModel
from assay.plugins.models.replay import ReplayModel
from assay.plugins.models.scripted import ScriptedModel
from tests.models.fake_openai import FakeChatServer, Reply, call, chunk, completion, error

OFFSET = {"value": 0}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b + OFFSET["value"]


class AddPlugin:
    __name__ = "add_plugin"

    @hookimpl
    def register_tools(self, register):
        register(add)


@pytest.fixture
def kernel(make_assay_kernel):
    OFFSET["value"] = 0
    return make_assay_kernel(AddPlugin(), replay_plugin)


def script():
    return ScriptedModel(
        [
            {"tool": "add", "arguments": {"a": 40, "b": 2}},
            lambda messages: {"text": f"It is {messages[-1].content}."},
        ]
    )


async def run(kernel, model, question="40 + 2?", *, capture=False):
    with kernel.new_run(capture=capture) as ctx:
        return await arun_agent(kernel, model, ctx, question)


async def test_a_recorded_run_replays_to_the_same_transcript_without_the_model(kernel, tmp_path):
    cassette = tmp_path / "run.jsonl"
    recorder = RecordingModel(script(), cassette)
    recorded = await run(kernel, recorder)
    recorder.close()
    replay = kernel.model("replay", model=str(cassette))
    replayed = await run(kernel, replay)
    assert recorded.answer == replayed.answer == "It is 42."
    assert [m.model_dump(exclude={"usage"}) for m in replayed.messages] == [
        m.model_dump(exclude={"usage"}) for m in recorded.messages
    ]
    replay.assert_finished()
    header, exchanges = read_cassette(cassette)
    assert header["cassette"] == 1 and header["model"] == "scripted" and len(exchanges) == 2
    assert exchanges[0]["response"]["tool_calls"][0]["name"] == "add"
    assert exchanges[1]["request"]["messages"][3] == {
        "role": "tool",
        "content": "42",
        "tool_call_id": "call_1",
        "name": "add",
    }


async def test_a_changed_question_diverges_at_turn_1_naming_the_place(kernel, tmp_path):
    cassette = tmp_path / "run.jsonl"
    await run(kernel, RecordingModel(script(), cassette))
    with pytest.raises(AssayError) as caught:
        ReplayModel(cassette).complete(
            [Message(role="system", content="x"), Message(role="user", content="41 + 2?")], []
        )
    err = caught.value
    assert err.code == "MODEL_REPLAY_DIVERGED" and "turn 1" in err.message
    assert err.details["turn"] == 1 and err.details["path"].startswith("messages[0].content")


async def test_a_tool_answering_differently_diverges_at_turn_2_in_the_agent_run(kernel, tmp_path):
    cassette = tmp_path / "run.jsonl"
    await run(kernel, RecordingModel(script(), cassette))
    OFFSET["value"] = 1  # the tool now answers 43: the second request differs from the recording
    transcript = await run(kernel, ReplayModel(cassette))
    assert transcript.answer is None and transcript.error.code == "MODEL_REPLAY_DIVERGED"
    assert "turn 2" in transcript.error.message
    assert (
        'at messages[3].content (character 1): recorded "42", now "43"' in transcript.error.message
    )


def test_a_long_text_divergence_shows_where_the_texts_part(tmp_path):
    cassette = tmp_path / "run.jsonl"
    recorder = RecordingModel(ScriptedModel([{"text": "ok"}]), cassette)
    recorder.complete([Message(role="user", content="a" * 500 + " total sales")], [])
    recorder.close()
    with pytest.raises(AssayError) as caught:
        ReplayModel(cassette).complete(
            [Message(role="user", content="a" * 500 + " total refunds")], []
        )
    assert "(character 507)" in caught.value.message and "sales" in caught.value.message
    assert "refunds" in caught.value.message


def test_more_turns_than_recorded_is_replay_exhausted(tmp_path):
    cassette = tmp_path / "run.jsonl"
    recorder = RecordingModel(ScriptedModel([{"text": "ok"}]), cassette)
    hi = [Message(role="user", content="hi")]
    recorder.complete(hi, [])
    replay = ReplayModel(cassette)
    assert replay.complete(hi, []).content == "ok"
    with pytest.raises(AssayError) as caught:
        replay.complete(hi, [])
    assert caught.value.code == "MODEL_REPLAY_EXHAUSTED" and "turn 2" in caught.value.message


def test_a_run_that_stops_early_fails_assert_finished(tmp_path):
    cassette = tmp_path / "run.jsonl"
    recorder = RecordingModel(ScriptedModel([{"text": "one"}, {"text": "two"}]), cassette)
    hi = [Message(role="user", content="hi")]
    recorder.complete(hi, [])
    recorder.complete(hi, [])
    replay = ReplayModel(cassette)
    replay.complete(hi, [])
    with pytest.raises(AssayError) as caught:
        replay.assert_finished()
    assert caught.value.code == "MODEL_REPLAY_DIVERGED" and "after turn 1" in caught.value.message


def test_a_recorded_provider_failure_replays_with_its_code(tmp_path):
    cassette = tmp_path / "run.jsonl"
    hi = [Message(role="user", content="hi")]
    with FakeChatServer([error(401, "Incorrect API key")]) as server:
        recorder = RecordingModel(
            OpenAICompatibleModel(base_url=server.url, max_retries=0), cassette
        )
        with pytest.raises(AssayError):
            recorder.complete(hi, [])
    with pytest.raises(AssayError) as caught:
        ReplayModel(cassette).complete(hi, [])
    assert caught.value.code == "MODEL_AUTH_FAILED" and "Incorrect API key" in caught.value.message


async def test_streamed_deltas_are_recorded_and_replayed_in_order(tmp_path):
    cassette = tmp_path / "run.jsonl"
    events = [chunk({"content": "The "}), chunk({"content": "answer."}, finish="stop"), "[DONE]"]
    hi = [Message(role="user", content="hi")]
    with FakeChatServer([Reply(events=events)]) as server:
        recorder = RecordingModel(OpenAICompatibleModel(base_url=server.url), cassette)
        live = []
        await recorder.acomplete(hi, [], on_text=live.append)
    shown = []
    reply = await ReplayModel(cassette).acomplete(hi, [], on_text=shown.append)
    assert live == shown == ["The ", "answer."] and reply.content == "The answer."


def test_each_exchange_is_on_disk_before_the_next_one(tmp_path):
    cassette = tmp_path / "run.jsonl"
    with FakeChatServer([completion(tool_calls=[call("add", "{}")])]) as server:
        recorder = RecordingModel(OpenAICompatibleModel(base_url=server.url), cassette)
        recorder.complete([Message(role="user", content="hi")], [])
        lines = cassette.read_text().splitlines()  # the recorder is still open
    assert len(lines) == 2 and json.loads(lines[1])["response"]["tool_calls"][0]["id"] == "call_a"
    assert json.loads(lines[1])["response"]["usage"] == {
        "prompt_tokens": 11,
        "completion_tokens": 7,
    }


@pytest.mark.parametrize(
    "content",
    [None, "not json\n", '{"cassette": 1}\n{"turn": 2}\n', '{"turn": 1}\n'],
    ids=["missing", "not-json", "bad-turn", "no-header"],
)
def test_a_cassette_that_cannot_be_read_is_cassette_invalid(tmp_path, content):
    cassette = tmp_path / "run.jsonl"
    if content is not None:
        cassette.write_text(content)
    with pytest.raises(AssayError) as caught:
        ReplayModel(cassette)
    assert caught.value.code == "MODEL_CASSETTE_INVALID" and str(cassette) in caught.value.message


def test_replay_is_a_registered_model_taking_the_path_as_its_name(kernel, tmp_path):
    cassette = tmp_path / "run.jsonl"
    RecordingModel(ScriptedModel([{"text": "ok"}]), cassette).complete(
        [Message(role="user", content="hi")], []
    )
    model = kernel.model("replay", model=str(cassette))
    assert isinstance(model, ReplayModel) and model.model_name == str(cassette)


async def test_a_run_over_real_tools_replays_with_the_new_runs_artifact_ids(
    retail_kernel, tmp_path
):
    cassette = tmp_path / "run.jsonl"
    steps = [
        {
            "tool": "sql_query",
            "arguments": {"datasource": "retail", "sql": "SELECT COUNT(*) AS n FROM orders"},
        },
        lambda messages: {
            "tool": "read_artifact_result",
            "arguments": {"artifact_id": messages[-1].content.rsplit("artifacts: ", 1)[1]},
        },
        {"text": "There are 2,000 orders."},
    ]
    recorded = await run(
        retail_kernel(), RecordingModel(ScriptedModel(steps), cassette), "How many?", capture=True
    )
    replay = ReplayModel(cassette)
    replayed = await run(retail_kernel(), replay, "How many?", capture=True)
    assert recorded.error is None and replayed.error is None, (recorded.error, replayed.error)
    assert recorded.status == replayed.status == "answered" and replayed.answer == recorded.answer
    assert replayed.artifact_ids and set(replayed.artifact_ids).isdisjoint(recorded.artifact_ids)
    second_call = replayed.messages[4].tool_calls[
        0
    ]  # the recorded call, carrying this run's artifact id
    assert second_call.arguments == {"artifact_id": replayed.artifact_ids[0]}
    assert replayed.tool_results[1].success
    drawn = {
        old: new for old, new in replay.ids.items() if old != new
    }  # the system prompt's example id is fixed
    assert drawn == dict(zip(recorded.artifact_ids, replayed.artifact_ids))
    replay.assert_finished()
