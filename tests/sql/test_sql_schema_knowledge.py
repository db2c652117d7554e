"""The knowledge base's definitions that name a table go into the schema index (issue 37).

A question worded in a business term found only in a knowledge base ("glimmer ratio") ranks the
table the knowledge base's definition names (``bill_credit_notes``), though no word of the table's
name or columns is in the question.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay import PromptBudget
from assay.plugins.knowledge.resource import KnowledgeBase
from assay.plugins.knowledge.settings import KnowledgeBaseConfig, KnowledgeSettings
from assay.plugins.sql.resource import DatabaseResource
from assay.plugins.sql.settings import DatasourceConfig
from tests.sql.warehouse import sqlite_warehouse

QUESTION = "What was the glimmer ratio last quarter?"
TABLE = "bill_credit_notes"
DEFINITION = """# Finance glossary

## Glimmer ratio
The glimmer ratio is the share of invoiced revenue given back as credit: the sum of
bill_credit_notes.amount over the quarter divided by the revenue invoiced in that quarter.
"""


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    return sqlite_warehouse(tmp_path_factory.mktemp("kwarehouse") / "warehouse.db", width=8)


def knowledge(tmp_path: Path, text: str) -> KnowledgeBase:
    root = tmp_path / "glossary"
    root.mkdir(exist_ok=True)
    (root / "finance.md").write_text(text)
    return KnowledgeBase(
        "glossary",
        KnowledgeBaseConfig(paths=[str(root)]),
        home=tmp_path / "home",
        settings=KnowledgeSettings(refresh_s=0),
    )


def database(warehouse: Path, tmp_path: Path, bases: list) -> DatabaseResource:
    url = f"sqlite:///{warehouse}"
    return DatabaseResource(
        "wh",
        url,
        config=DatasourceConfig(url=url, sample_values=False),
        home=tmp_path / "home",
        knowledge=lambda: bases,
    )


def shown(resource: DatabaseResource) -> set[str]:
    resource.get_prompt(PromptBudget(max_chars=16_000, question=QUESTION))
    return {c.name for c in resource.last_layout.shown}


def test_a_table_named_by_a_knowledge_definition_is_shown_for_its_business_term(
    warehouse, tmp_path
):
    resource = database(warehouse, tmp_path, [knowledge(tmp_path, DEFINITION)])
    try:
        assert TABLE in shown(resource)
    finally:
        resource.close()


def test_without_the_knowledge_base_the_table_is_not_shown(warehouse, tmp_path):
    resource = database(warehouse, tmp_path, [])
    try:
        assert TABLE not in shown(resource)
    finally:
        resource.close()


def test_a_changed_knowledge_base_refreshes_the_notes_of_an_index_whose_schema_is_fresh(
    warehouse, tmp_path
):
    first = database(warehouse, tmp_path, [knowledge(tmp_path, "# Finance\n\nNothing yet.\n")])
    try:
        assert TABLE not in shown(first)
    finally:
        first.close()
    second = database(warehouse, tmp_path, [knowledge(tmp_path, DEFINITION)])
    try:
        assert TABLE in shown(second)
        assert second.index_state == "fresh"  # the schema was read from the index, not introspected
    finally:
        second.close()


def test_a_plain_word_names_a_table_only_when_written_as_code(tmp_path):
    text = (
        "# Orders\n\nOrders are counted once.\n\n# Refunds\n\nRead `orders` and payments.amount.\n"
    )
    notes = knowledge(tmp_path, text).definitions_naming(["orders", "payments", "refunds"])
    assert [n.startswith("Refunds") for n in notes["orders"]] == [True]
    assert list(notes["payments"]) and "refunds" not in notes


def test_assay_prompt_ranks_the_table_a_configured_knowledge_base_defines(
    warehouse, tmp_path, assay_env, monkeypatch
):
    from tests.sql.test_sql_schema_prompt_cli import run_cli

    knowledge(tmp_path, DEFINITION)
    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"wh=sqlite:///{warehouse}")
    monkeypatch.setenv("ASSAY_KNOWLEDGE", f"glossary={tmp_path / 'glossary'}")
    result = run_cli("prompt", "--db", "wh", "--json", QUESTION)
    assert result.exit_code == 0, result.output
    (db,) = json.loads(result.output)["databases"]
    assert TABLE in {c["name"] for c in db["shown"]}


def test_registered_files_take_the_definitions_naming_their_tables(
    make_assay_kernel, tmp_path, monkeypatch
):
    from assay.plugins.files import open_files
    from tests.files.conftest import write_csv

    knowledge(tmp_path, "## Glimmer\nThe glimmer ratio reads credit_adjustments.amount.\n")
    monkeypatch.setenv("ASSAY_KNOWLEDGE", f"glossary={tmp_path / 'glossary'}")
    kernel = make_assay_kernel(load_entrypoints=True).start()
    data = tmp_path / "data"
    data.mkdir()
    files = open_files("files", [str(write_csv(data / "credit_adjustments.csv"))], kernel=kernel)
    try:
        notes = files.knowledge_notes(files.tables())
        assert [n.startswith("Glimmer") for n in notes["credit_adjustments"]] == [True]
    finally:
        files.close()
