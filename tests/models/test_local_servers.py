"""Local model servers as they really behave (llama.cpp's servers): a streamed request with tools that the
server will not stream, a context too small, a default answer length. Against a real HTTP server on loopback;
tests/models/test_llama_server.py does the same with the real llama.cpp server."""

from __future__ import annotations

import asyncio
import json

import pytest

from assay import AssayError
from assay.kernel.messages import Message
from assay.plugins.models.openai_compatible import OpenAICompatibleModel
from tests.models.fake_openai import FakeChatServer, Reply, call, chunk, completion, error

HI = [Message(role="user", content="how many orders?")]
TOOL = {
    "type": "function",
    "function": {
        "name": "sql_query",
        "description": "Run SQL.",
        "parameters": {"type": "object", "properties": {"sql": {"type": "string"}}},
    },
}
EMPTY_STREAM = Reply(
    events=[]
)  # HTTP 200, an event stream, closed without an event: llama-cpp-python's refusal


def model_for(server: FakeChatServer, **settings) -> OpenAICompatibleModel:
    settings.setdefault("retry_backoff_s", 0.0)
    return OpenAICompatibleModel(base_url=server.url, model="local-model", **settings)


def warnings(capsys) -> list[dict]:
    return [
        json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")
    ]


def test_a_server_that_will_not_stream_with_tools_is_asked_again_unstreamed_and_told_once(capsys):
    from assay.kernel.log import configure_logging

    configure_logging("WARNING", "json")
    replies = [
        EMPTY_STREAM,
        completion(tool_calls=[call("sql_query", '{"sql": "SELECT 1"}')]),
        completion("2,000 orders [art_0f3a9c2e7b1d4e6f8a20]."),
    ]
    with FakeChatServer(replies) as server:
        model = model_for(server, max_retries=0)
        first = model.complete(HI, [TOOL], on_text=lambda _: None)
        second = model.complete(HI, [TOOL], on_text=lambda _: None)
    assert first.tool_calls[0].name == "sql_query" and second.content.startswith("2,000 orders")
    streamed = [body.get("stream", False) for body in server.bodies()]
    assert streamed == [True, False, False]  # refused once; later requests with tools go unstreamed
    said = [w for w in warnings(capsys) if w.get("event") == "model_stream_with_tools_refused"]
    assert len(said) == 1 and "unstreamed" in said[0]["detail"]


def test_a_server_error_naming_streaming_and_tools_falls_back_too():
    replies = [error(500, "Cannot use tools with stream"), completion("ok")]
    with FakeChatServer(replies) as server:
        reply = asyncio.run(model_for(server).acomplete(HI, [TOOL], on_text=lambda _: None))
    assert reply.content == "ok" and [b.get("stream", False) for b in server.bodies()] == [
        True,
        False,
    ]


def test_text_without_tools_still_streams_after_a_refusal_with_tools():
    replies = [
        EMPTY_STREAM,
        completion("ok"),
        Reply(events=[chunk({"content": "hi"}, finish="stop"), "[DONE]"]),
    ]
    with FakeChatServer(replies) as server:
        model = model_for(server)
        model.complete(HI, [TOOL], on_text=lambda _: None)
        shown = []
        assert model.complete(HI, [], on_text=shown.append).content == "hi" and shown == ["hi"]
    assert [b.get("stream", False) for b in server.bodies()] == [True, False, True]


def test_an_empty_stream_without_tools_names_the_real_cause_not_the_url():
    with FakeChatServer([EMPTY_STREAM]) as server, pytest.raises(AssayError) as caught:
        model_for(server).complete(HI, [], on_text=lambda _: None)
    assert caught.value.code == "MODEL_RESPONSE_INVALID"
    assert "failed while answering" in caught.value.message and "base URL" not in caught.value.hint
    assert "log" in caught.value.hint


def test_a_context_too_small_says_how_to_fit_it():
    with (
        FakeChatServer(
            [error(400, "Requested tokens (5300) exceed context window of 2048")]
        ) as server,
        pytest.raises(AssayError) as caught,
    ):
        model_for(server).complete(HI, [TOOL])
    assert "--n_ctx" in caught.value.hint and "ASSAY_AGENT_TOKEN_BUDGET" in caught.value.hint


def test_an_answer_is_bounded_by_default_and_zero_sends_no_bound():
    with FakeChatServer([completion("a"), completion("b")]) as server:
        model_for(server).complete(HI, [])
        model_for(server, max_tokens=0).complete(HI, [])
    first, second = server.bodies()
    assert first["max_tokens"] == 4096 and "max_tokens" not in second
