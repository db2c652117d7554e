"""``assay prompt``: exactly the system prompt the main agent starts with; and the tools' ``search`` argument."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from assay.kernel.kernel import Kernel
from assay.plugins.agent import run_agent
from assay.plugins.models.scripted import ScriptedModel
from tests.sql.warehouse import sqlite_warehouse

QUESTION = "Which support agents handled the most chat sessions?"


@pytest.fixture
def warehouse_env(tmp_path, assay_env, monkeypatch):
    path = sqlite_warehouse(tmp_path / "warehouse.db", width=10)
    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"wh=sqlite:///{path}")
    return path


def run_cli(*args: str):
    from assay.kernel.cli import build_cli, cli

    kernel = Kernel()
    group = build_cli(kernel)
    try:
        return CliRunner().invoke(group, list(args), obj={"kernel": kernel}, catch_exceptions=False)
    finally:
        kernel.close()
        for name in ("sql", "db", "prompt"):
            cli.commands.pop(name, None)  # build_cli mutates the shared root group


def test_assay_prompt_prints_exactly_the_system_prompt_the_agent_starts_with(warehouse_env):
    with Kernel() as kernel:
        kernel.start()
        with kernel.new_run() as run:
            transcript = run_agent(kernel, ScriptedModel([{"text": "done"}]), run, QUESTION)
    system = transcript.messages[0].content
    result = run_cli("prompt", QUESTION)
    assert result.exit_code == 0, result.output
    assert result.output == system + "\n"
    assert "sup_chat_sessions (" in system and "sup_agents (" in system


def test_assay_prompt_json_says_which_tables_were_shown_listed_and_left_out_and_why(warehouse_env):
    result = run_cli("prompt", "--db", "wh", "--json", QUESTION)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (db,) = data["databases"]
    assert db["mode"] == "question" and db["index"] in ("rebuilt", "fresh") and db["total"] == 440
    shown = {c["name"]: c["why"] for c in db["shown"]}
    assert shown["sup_chat_sessions"].startswith("matches the question")
    assert len(shown) + len(db["listed"]) + len(db["left_out"]) == 440
    assert data["system_prompt"].endswith(db["note"])


def test_list_tables_search_ranks_tables_by_the_index(warehouse_env):
    with Kernel() as kernel:
        kernel.start()
        result = kernel.call_tool("list_tables", {"search": "refund"})
        described = kernel.call_tool("describe_table", {"search": "chat sessions"})
    assert result.success, result.message
    names = [row["name"] for row in result.data]
    assert names[0] in ("fin_refunds", "sales_returns") and len(names) <= 20
    assert "matching 'refund', best first" in result.content
    assert described.success and described.data[0]["name"] == "sup_chat_sessions"


def test_describe_table_without_a_table_or_search_is_refused_with_a_code(warehouse_env):
    with Kernel() as kernel:
        kernel.start()
        result = kernel.call_tool("describe_table", {})
    assert not result.success and result.error_code == "SQL_TABLE_NOT_FOUND"
