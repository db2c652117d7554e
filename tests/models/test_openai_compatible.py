"""The OpenAI-compatible provider against a real HTTP server on loopback (the wire format)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import pytest

from assay import AssayError, hookimpl, tool
from assay.kernel.messages import Message
from assay.plugins.agent import arun_agent
from assay.plugins.models.openai_compatible import OpenAICompatibleModel
from tests.models.fake_openai import FakeChatServer, Reply, call, chunk, completion, error, wait_for

HI = [Message(role="user", content="hi")]


def model_for(server: FakeChatServer, **settings) -> OpenAICompatibleModel:
    """The model for ``server``; its retries' waits are recorded in ``model.waits``, never slept."""
    model = OpenAICompatibleModel(base_url=server.url, model="local-model", **settings)
    model.waits = []
    model.sleep = model.waits.append

    async def asleep(seconds: float) -> None:
        model.waits.append(seconds)

    model.asleep = asleep
    return model


def failure(server: FakeChatServer, **settings) -> AssayError:
    with pytest.raises(AssayError) as caught:
        model_for(server, **settings).complete(HI, [])
    return caught.value


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class AddPlugin:
    __name__ = "add_plugin"

    @hookimpl
    def register_tools(self, register):
        register(add)


# -- streaming ------------------------------------------------------------------
def test_streamed_text_reaches_on_text_delta_by_delta_before_the_answer_ends():
    shown, first_shown = [], threading.Event()

    def on_text(delta):
        shown.append(delta)
        first_shown.set()

    events = [
        chunk({"role": "assistant", "content": "The "}),
        wait_for(first_shown),
        chunk({"content": "answer"}),
        chunk({"content": " is 42."}, finish="stop"),
        chunk(None, usage=(20, 5)),
        "[DONE]",
    ]
    with FakeChatServer([Reply(events=events)]) as server:
        reply = model_for(server).complete(HI, [], on_text=on_text)
    assert shown == ["The ", "answer", " is 42."] and reply.content == "The answer is 42."
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (20, 5)
    body = server.bodies()[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_without_on_text_the_request_does_not_stream():
    with FakeChatServer([completion("plain")]) as server:
        reply = model_for(server).complete(HI, [])
    assert reply.content == "plain" and "stream" not in server.bodies()[0]
    assert reply.usage.prompt_tokens == 11


def test_a_server_that_ignores_stream_and_answers_json_still_works():
    shown = []
    with FakeChatServer([completion("whole")]) as server:
        reply = model_for(server).complete(HI, [], on_text=shown.append)
    assert reply.content == "whole" and shown == []


def test_streamed_tool_call_deltas_are_assembled_by_index():
    events = [
        chunk(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_x",
                        "type": "function",
                        "function": {"name": "add", "arguments": ""},
                    }
                ],
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 4'}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_y",
                        "type": "function",
                        "function": {"name": "add", "arguments": '{"a"'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '0, "b": 2}'}}]}),
        chunk(
            {"tool_calls": [{"index": 1, "function": {"arguments": ': 1, "b": 1}'}}]},
            finish="tool_calls",
        ),
        "[DONE]",
    ]
    with FakeChatServer([Reply(events=events)]) as server:
        reply = model_for(server).complete(HI, [], on_text=lambda _: None)
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_x", "add", {"a": 40, "b": 2}),
        ("call_y", "add", {"a": 1, "b": 1}),
    ]
    assert reply.content is None


async def test_async_streaming_gives_the_same_message():
    shown = []
    events = [chunk({"content": "a"}), chunk({"content": "b"}, finish="stop"), "[DONE]"]
    with FakeChatServer([Reply(events=events)]) as server:
        reply = await model_for(server).acomplete(HI, [], on_text=shown.append)
    assert reply.content == "ab" and shown == ["a", "b"]


def test_a_stream_cut_off_before_it_finished_is_a_failed_request_not_a_short_answer():
    events = [
        chunk({"content": "The total is"}),
        chunk({"content": " 1"}),
    ]  # no finish_reason, no [DONE]
    with FakeChatServer([Reply(events=events)]) as server, pytest.raises(AssayError) as caught:
        model_for(server).complete(HI, [], on_text=lambda _: None)
    assert (
        caught.value.code == "MODEL_REQUEST_FAILED"
        and "before the answer was complete" in caught.value.message
    )


def test_a_connection_reset_after_text_was_shown_is_reported_not_retried():
    events = [chunk({"content": "partial"}), chunk({"content": " more"}), "[DONE]"]
    replies = [Reply(events=events, drop_after=1), completion("never asked")]
    with FakeChatServer(replies) as server, pytest.raises(AssayError) as caught:
        model_for(server, max_retries=3).complete(HI, [], on_text=lambda _: None)
    assert (
        caught.value.code == "MODEL_REQUEST_FAILED"
        and "after part of the answer was shown" in caught.value.message
    )
    assert len(server.requests) == 1


# -- tool calls over the wire, through the agent loop ------------------------------
async def test_the_assistant_tool_call_turn_goes_back_with_string_content_never_null(
    make_assay_kernel,
):
    replies = [completion(tool_calls=[call("add", '{"a": 40, "b": 2}')]), completion("It is 42.")]
    kernel = make_assay_kernel(AddPlugin())
    with FakeChatServer(replies) as server, kernel.new_run(capture=False) as run:
        transcript = await arun_agent(kernel, model_for(server), run, "40 + 2?")
    assert transcript.answer == "It is 42."
    assistant = server.bodies()[1]["messages"][2]
    assert assistant["role"] == "assistant" and assistant["content"] == ""
    assert assistant["tool_calls"][0]["function"] == {
        "name": "add",
        "arguments": '{"a": 40, "b": 2}',
    }
    assert all(isinstance(m["content"], str) for body in server.bodies() for m in body["messages"])


async def test_malformed_tool_call_json_reaches_the_model_as_tool_arguments_invalid(
    make_assay_kernel,
):
    replies = [completion(tool_calls=[call("add", '{"a": 40, "b": ')]), completion("Sorry.")]
    kernel = make_assay_kernel(AddPlugin())
    with FakeChatServer(replies) as server, kernel.new_run(capture=False) as run:
        transcript = await arun_agent(kernel, model_for(server), run, "40 + 2?")
    assert transcript.answer == "Sorry."
    assert transcript.tool_results[0].error_code == "TOOL_ARGUMENTS_INVALID"
    tool_turn = server.bodies()[1]["messages"][3]
    assert tool_turn["role"] == "tool" and tool_turn["content"].startswith(
        "error TOOL_ARGUMENTS_INVALID"
    )
    assert (
        server.bodies()[1]["messages"][2]["tool_calls"][0]["function"]["arguments"]
        == '{"a": 40, "b": '
    )


@pytest.mark.parametrize("arguments", ["[1, 2]", "not json at all", "null"])
def test_tool_arguments_that_are_not_a_json_object_stay_the_models_text(arguments):
    with FakeChatServer([completion(tool_calls=[call("add", arguments)])]) as server:
        reply = model_for(server).complete(HI, [])
    assert reply.tool_calls[0].arguments == arguments


# -- retries ----------------------------------------------------------------------
def test_429_then_success_is_retried_and_logged(capsys):
    from assay.kernel.log import configure_logging

    configure_logging("WARNING", "json")
    with FakeChatServer([error(429, "slow down", Retry_After="0"), completion("ok")]) as server:
        reply = model_for(server, max_retries=2).complete(HI, [])
    assert reply.content == "ok" and len(server.requests) == 2
    retry = [
        json.loads(line)
        for line in capsys.readouterr().err.splitlines()
        if "model_request_retry" in line
    ]
    assert len(retry) == 1 and retry[0]["code"] == "MODEL_RATE_LIMITED" and retry[0]["wait_s"] == 0


def test_retry_waits_double_from_retry_backoff_s_with_jitter():
    with FakeChatServer([error(500, "boom")] * 3 + [completion("ok")]) as server:
        model = model_for(server, max_retries=3, retry_backoff_s=1.0)
        assert model.complete(HI, []).content == "ok"
    assert len(model.waits) == 3
    for n, wait in enumerate(model.waits):
        assert 0.5 * 2**n <= wait <= 1.5 * 2**n


def test_retry_after_is_honoured_within_the_cap():
    replies = [
        error(429, "slow down", Retry_After="7"),
        error(429, "slow down", Retry_After="600"),
        completion("ok"),
    ]
    with FakeChatServer(replies) as server:
        model = model_for(server, max_retries=2)
        assert model.complete(HI, []).content == "ok"
    assert model.waits == [7.0, 20.0]


def test_rate_limited_past_the_retries_is_model_rate_limited():
    with FakeChatServer([error(429, "slow down")] * 3) as server:
        caught = failure(server, max_retries=2)
    assert (
        caught.code == "MODEL_RATE_LIMITED"
        and "after 3 attempts" in caught.message
        and "slow down" in caught.message
    )
    assert len(server.requests) == 3


def test_an_exhausted_quota_is_not_retried():
    with FakeChatServer(
        [error(429, "You exceeded your current quota", "insufficient_quota")]
    ) as server:
        caught = failure(server, max_retries=3)
    assert (
        caught.code == "MODEL_RATE_LIMITED" and "quota" in caught.hint and len(server.requests) == 1
    )


def test_500_is_retried_then_reported_as_model_request_failed():
    with FakeChatServer([error(500, "boom")] * 2) as server:
        caught = failure(server, max_retries=1)
    assert (
        caught.code == "MODEL_REQUEST_FAILED"
        and "HTTP 500 (after 2 attempts): boom" in caught.message
    )
    assert len(server.requests) == 2


def test_503_then_success_is_retried():
    with FakeChatServer([error(503, "loading model"), completion("ready")]) as server:
        assert model_for(server).complete(HI, []).content == "ready"


def test_a_400_is_not_retried_and_carries_the_servers_reason():
    with FakeChatServer([error(400, "context length exceeded")]) as server:
        caught = failure(server, max_retries=3)
    assert caught.code == "MODEL_REQUEST_FAILED" and "context length exceeded" in caught.message
    assert len(server.requests) == 1


def test_unreachable_server_is_model_unreachable_after_the_retries():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    model = OpenAICompatibleModel(
        base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, retry_backoff_s=0
    )
    with pytest.raises(AssayError) as caught:
        model.complete(HI, [])
    assert caught.value.code == "MODEL_UNREACHABLE" and "after 2 attempts" in caught.value.message
    assert "server running" in caught.value.hint


def test_a_server_slower_than_the_timeout_is_model_timeout_not_retried():
    with FakeChatServer([Reply(body={}, delay_s=1.0)]) as server:
        caught = failure(server, timeout_s=0.2, max_retries=3)
    assert (
        caught.code == "MODEL_TIMEOUT" and "0.2 s" in caught.message and len(server.requests) == 1
    )


# -- clear errors -------------------------------------------------------------------
def test_401_is_model_auth_failed_and_not_retried():
    with FakeChatServer([error(401, "Incorrect API key provided")]) as server:
        caught = failure(server, api_key="sk-wrong", max_retries=3)
    assert caught.code == "MODEL_AUTH_FAILED" and "Incorrect API key" in caught.message
    assert "ASSAY_OPENAI_API_KEY" in caught.hint and "sk-wrong" not in caught.message + caught.hint
    assert (
        len(server.requests) == 1
        and server.requests[0]["headers"]["Authorization"] == "Bearer sk-wrong"
    )


@pytest.mark.parametrize(
    "reply",
    [
        error(404, "The model `gpt-17` does not exist", "model_not_found"),
        error(404, 'model "gpt-17" not found, try pulling it first'),
    ],
    ids=["openai", "ollama"],
)
def test_an_unknown_model_name_is_model_name_unknown(reply):
    with FakeChatServer([reply]) as server:
        caught = failure(server)
    assert (
        caught.code == "MODEL_NAME_UNKNOWN"
        and "'local-model'" in caught.message
        and "/v1/models" in caught.hint
    )


def test_a_404_without_a_model_complaint_points_at_the_base_url():
    with FakeChatServer([Reply(status=404, body=b"Not Found")]) as server:
        caught = failure(server)
    assert caught.code == "MODEL_REQUEST_FAILED" and "/v1" in caught.hint


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=b"<html>gateway</html>"),
        Reply(body={"unexpected": True}),
        Reply(body={"choices": [{"message": {"content": ["not", "text"]}}]}),
    ],
    ids=["not-json", "no-choices", "content-not-text"],
)
def test_a_garbage_body_is_model_response_invalid(reply):
    with FakeChatServer([reply]) as server:
        caught = failure(server)
    assert caught.code == "MODEL_RESPONSE_INVALID" and caught.hint


def test_a_garbage_stream_event_is_model_response_invalid():
    events = [chunk({"content": "ok"}), b"data: {not json", "[DONE]"]
    with FakeChatServer([Reply(events=events)]) as server, pytest.raises(AssayError) as caught:
        model_for(server).complete(HI, [], on_text=lambda _: None)
    assert caught.value.code == "MODEL_RESPONSE_INVALID" and "{not json" in caught.value.message


def test_an_error_event_inside_a_stream_is_reported():
    events = [{"error": {"message": "out of memory"}}]
    with FakeChatServer([Reply(events=events)]) as server, pytest.raises(AssayError) as caught:
        model_for(server).complete(HI, [], on_text=lambda _: None)
    assert caught.value.code == "MODEL_REQUEST_FAILED" and "out of memory" in caught.value.message


async def test_async_retries_like_sync():
    with FakeChatServer([error(502, "bad gateway"), completion("ok")]) as server:
        model = model_for(server, retry_backoff_s=1.0)
        reply = await model.acomplete(HI, [])
    assert reply.content == "ok" and len(server.requests) == 2
    assert len(model.waits) == 1 and 0.5 <= model.waits[0] <= 1.5


async def test_async_past_the_retries_is_the_last_attempts_error():
    with FakeChatServer([error(500, "boom")] * 2) as server:
        with pytest.raises(AssayError) as caught:
            await model_for(server, max_retries=1).acomplete(HI, [])
    assert (
        caught.value.code == "MODEL_REQUEST_FAILED" and "after 2 attempts" in caught.value.message
    )
    assert len(server.requests) == 2


async def test_cancelling_an_async_request_stops_it_promptly():
    with FakeChatServer([Reply(body={}, delay_s=3.0)]) as server:
        task = asyncio.ensure_future(model_for(server).acomplete(HI, []))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 1.0)
