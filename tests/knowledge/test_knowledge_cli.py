"""``assay knowledge index|search|ls``."""

from __future__ import annotations

import json

from tests.conftest import run_assay


def env(docs):
    return {"ASSAY_KNOWLEDGE": f"metrics={docs}", "ASSAY_LOAD_PLUGINS": "local_store,knowledge"}


def test_index_reports_what_it_did_and_a_second_run_finds_nothing_changed(docs):
    first = run_assay("knowledge", "index", "--json", env=env(docs))
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["metrics"]["added"] == 3
    second = run_assay("knowledge", "index", env=env(docs))
    assert "3 unchanged" in second.stdout and "0 added" in second.stdout


def test_search_prints_passages_and_the_artifact(docs):
    result = run_assay("knowledge", "search", "refund rate denominator", "-k", "2", env=env(docs))
    assert result.exit_code == 0, result.output
    assert (
        "glossary.md > Metrics > Refund rate" in result.stdout and "artifact art_" in result.stdout
    )


def test_search_of_only_syntax_exits_1_with_the_empty_query_code(docs):
    result = run_assay("knowledge", "search", '"*', env=env(docs))
    assert result.exit_code == 1 and "KNOWLEDGE_QUERY_EMPTY" in result.stdout


def test_ls_lists_files_with_status_passages_and_hash(docs):
    (docs / "bad.pdf").write_bytes(b"%PDF-1.4 nonsense")
    result = run_assay("knowledge", "ls", env=env(docs))
    assert result.exit_code == 0, result.output
    assert "metrics: 4 files" in result.stdout
    assert "failed" in result.stdout and "KNOWLEDGE_FILE_UNPARSABLE" in result.stdout
    assert "indexed" in result.stdout and "glossary.md" in result.stdout


def test_path_option_indexes_a_directory_without_configuration(docs):
    result = run_assay(
        "knowledge",
        "search",
        "chargeback",
        "--path",
        str(docs),
        env={"ASSAY_LOAD_PLUGINS": "local_store,knowledge"},
    )
    assert result.exit_code == 0, result.output
    assert "sub/policy.pdf > page 2" in result.stdout


def test_index_of_an_unknown_base_exits_2(docs):
    result = run_assay("knowledge", "index", "nope", env=env(docs))
    assert result.exit_code == 2 and "KNOWLEDGE_BASE_NOT_FOUND" in result.stderr


def test_an_error_reads_as_every_other_command_s_one_line(docs):
    result = run_assay("knowledge", "index", "nope", env=env(docs))
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: KNOWLEDGE_BASE_NOT_FOUND: ") and line.endswith(
        ")"
    )  # CODE: message (hint)
