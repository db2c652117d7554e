"""Models (scripted, OpenAI-compatible over real HTTP) and the agent loop."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from assay import AssayError, Resource, hookimpl, tool
from assay.kernel.messages import Message
from assay.plugins.agent import arun_agent, run_agent
from assay.plugins.models.openai_compatible import OpenAICompatibleModel
from assay.plugins.models.scripted import ScriptedModel


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Glossary(Resource):
    name = "glossary"

    def get_prompt(self, budget=None):
        return "revenue means net sales"


class AgentPlugin:
    __name__ = "agent_test"

    @hookimpl
    def register_tools(self, register):
        register(add)

    @hookimpl
    def register_resources(self, register):
        register(Glossary())


@pytest.fixture
def agent_kernel(make_assay_kernel):
    """``agent_kernel()``: a fresh kernel with the agent test plugin and both model plugins."""
    import assay.plugins.models.openai_compatible as openai_plugin
    import assay.plugins.models.scripted as scripted_plugin

    return lambda: make_assay_kernel(AgentPlugin(), scripted_plugin, openai_plugin)


def test_register_models_scripted_and_openai_compatible_are_registered(agent_kernel):
    kernel = agent_kernel()
    assert sorted(kernel.registry("models")) == ["openai_compatible", "scripted"]
    assert isinstance(kernel.model("scripted", steps=[{"text": "hi"}]), ScriptedModel)
    with pytest.raises(AssayError) as caught:
        kernel.model("gpt-17")
    assert caught.value.code == "MODEL_NOT_FOUND"


def test_scripted_model_drives_the_agent_loop_to_a_final_answer(agent_kernel):
    kernel = agent_kernel()
    model = ScriptedModel(
        [
            {"tool": "add", "arguments": {"a": 2, "b": 3}},
            lambda messages: {"text": f"the sum is {messages[-1].content}"},
        ]
    )
    with kernel.new_run(capture=False) as run:
        transcript = run_agent(kernel, model, run, "what is 2 + 3?")
    assert (
        transcript.answer == "the sum is 5"
        and transcript.stopped == "final"
        and transcript.steps == 2
    )
    system, user = transcript.messages[:2]
    assert (
        "[knowledge:glossary]\nrevenue means net sales" in system.content
        and user.content == "what is 2 + 3?"
    )
    tool_message = transcript.messages[3]
    assert (tool_message.role, tool_message.name, tool_message.tool_call_id) == (
        "tool",
        "add",
        "call_1",
    )
    assert transcript.tool_results[0].data == 5


def test_a_scripted_step_with_delay_s_answers_after_that_long():
    import time

    model = ScriptedModel([{"text": "late", "delay_s": 0.2}])
    started = time.perf_counter()
    assert model.complete([], []).content == "late" and time.perf_counter() - started >= 0.2


def test_agent_loop_feeds_tool_errors_back_to_the_model(agent_kernel):
    kernel = agent_kernel()
    model = ScriptedModel([{"tool": "add", "arguments": {"a": "two"}}, {"text": "sorry"}])
    with kernel.new_run(capture=False) as run:
        transcript = run_agent(kernel, model, run, "q")
    error_text = transcript.messages[3].content
    assert (
        error_text.startswith("error TOOL_ARGUMENTS_INVALID")
        and "- a:" in error_text
        and "- b:" in error_text
    )


def test_agent_loop_is_bounded_by_max_steps(agent_kernel):
    kernel = agent_kernel()
    model = ScriptedModel([{"tool": "add", "arguments": {"a": 1, "b": 1}}] * 10)
    with kernel.new_run(capture=False) as run:
        transcript = run_agent(kernel, model, run, "loop", max_steps=3)
    assert transcript.stopped == "max_steps" and transcript.answer is None and transcript.steps == 3
    assert len(transcript.tool_results) == 3


class ChatServer:
    """A local chat-completions server: records requests, answers from a queue."""

    def __init__(self, replies):
        self.replies, self.requests = list(replies), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                status, payload = outer.replies.pop(0)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def completion(content=None, tool_calls=None):
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return 200, {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7},
    }


async def test_openai_compatible_model_runs_tool_calls_over_http(agent_kernel, monkeypatch):
    replies = [
        completion(
            tool_calls=[
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 40, "b": 2}'},
                }
            ]
        ),
        completion(content="The answer is 42."),
    ]
    with ChatServer(replies) as server:
        monkeypatch.setenv("ASSAY_OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("ASSAY_OPENAI_API_KEY", "sk-test-key")
        monkeypatch.setenv("ASSAY_OPENAI_MODEL", "local-model")
        kernel = agent_kernel()
        model = kernel.model("openai_compatible")
        with kernel.new_run(capture=False) as run:
            transcript = await arun_agent(kernel, model, run, "what is 40 + 2?")
    assert transcript.answer == "The answer is 42." and transcript.tool_results[0].data == 42
    first, second = server.requests
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sk-test-key"
    assert first["body"]["model"] == "local-model"
    assert first["body"]["tools"][0]["function"]["name"] == "add"
    assert first["body"]["tools"][0]["function"]["parameters"]["additionalProperties"] is False
    assert [m["role"] for m in first["body"]["messages"]] == ["system", "user"]
    assert [m["role"] for m in second["body"]["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]
    assistant, tool_msg = second["body"]["messages"][2:]
    assert assistant["tool_calls"][0]["function"] == {
        "name": "add",
        "arguments": '{"a": 40, "b": 2}',
    }
    assert tool_msg == {"role": "tool", "content": "42", "tool_call_id": "call_a", "name": "add"}
    assert model.last_usage.prompt_tokens == 11


def test_openai_compatible_model_reports_http_errors_clearly():
    with ChatServer([(401, {"error": {"message": "invalid api key"}})]) as server:
        model = OpenAICompatibleModel(base_url=server.url, api_key="bad")
        with pytest.raises(AssayError) as caught:
            model.complete([Message(role="user", content="hi")], [])
    assert (
        caught.value.code == "MODEL_AUTH_FAILED"
        and "HTTP 401: invalid api key" in caught.value.message
    )


def test_openai_compatible_model_reports_unreachable_server():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    model = OpenAICompatibleModel(
        base_url=f"http://127.0.0.1:{port}/v1", timeout_s=5, retry_backoff_s=0
    )
    with pytest.raises(AssayError) as caught:
        model.complete([Message(role="user", content="hi")], [])
    assert caught.value.code == "MODEL_UNREACHABLE" and "cannot reach" in caught.value.message


def test_openai_compatible_model_rejects_a_non_completion_body():
    with ChatServer([(200, {"unexpected": True})]) as server:
        model = OpenAICompatibleModel(base_url=server.url)
        with pytest.raises(AssayError) as caught:
            model.complete([Message(role="user", content="hi")], [])
    assert caught.value.code == "MODEL_RESPONSE_INVALID"


def test_openai_api_key_is_masked_in_config(agent_kernel, monkeypatch):
    monkeypatch.setenv("ASSAY_OPENAI_API_KEY", "sk-very-secret")
    kernel = agent_kernel()
    kernel.start()
    assert kernel.settings.masked()["openai"]["api_key"] == "***"
