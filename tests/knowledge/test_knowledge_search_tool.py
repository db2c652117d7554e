"""``knowledge_search``: passages with their source, each result a ``knowledge`` artifact a report can cite."""

from __future__ import annotations

import pytest

from assay import PromptBudget
from assay.kernel.evidence import get_record, read_artifact_result


def test_configured_by_assay_knowledge_as_a_knowledge_resource(kernel, docs):
    base = kernel.resources["metrics"]
    assert str(base.type) == "knowledge"
    assert base.config.paths == [str(docs)]


def test_search_returns_passages_with_file_heading_and_lines_and_captures_them(kernel):
    with kernel.new_run() as run:
        result = kernel.call_tool(
            "knowledge_search", {"query": "refund rate denominator", "k": 3}, run=run
        )
        assert result.success, result.for_model()
        artifact_id = result.data["artifact_id"]
        assert result.artifacts[0].kind == "knowledge"
        first = result.data["passages"][0]
        assert first["file"] == "glossary.md" and first["heading"].startswith(
            "Metrics > Refund rate"
        )
        assert (
            "glossary.md > Metrics > Refund rate" in result.content and "lines " in result.content
        )
        record = get_record(run.artifacts, artifact_id)
        assert (record.kind, record.row_count) == ("knowledge", 3)
        assert record.provenance["query"] == "refund rate denominator"
        text = read_artifact_result(run.artifacts, artifact_id, {"path": [0, "text"]})
        assert text.verified and "denominator" in text.value


def test_an_empty_result_is_a_success_and_still_evidence(kernel):
    with kernel.new_run() as run:
        result = kernel.call_tool("knowledge_search", {"query": "photosynthesis"}, run=run)
        assert result.success and result.data["row_count"] == 0
        assert "no passage in metrics matched" in result.content
        assert get_record(run.artifacts, result.data["artifact_id"]).row_count == 0


@pytest.mark.parametrize("query", ['"', "*", "NEAR", '"unbalanced', "(", "AND OR NOT"])
def test_fts_syntax_in_the_tool_is_never_an_fts_error(kernel, query):
    result = kernel.call_tool("knowledge_search", {"query": query})
    assert result.success or result.error_code == "KNOWLEDGE_QUERY_EMPTY", result.for_model()
    assert (
        "fts5" not in result.for_model().lower()
        and "syntax error" not in result.for_model().lower()
    )


def test_an_unknown_base_is_named_with_the_available_ones(kernel):
    result = kernel.call_tool("knowledge_search", {"query": "refund", "base": "nope"})
    assert result.error_code == "KNOWLEDGE_BASE_NOT_FOUND" and "metrics" in result.hint


def test_no_configured_base_says_how_to_configure_one(make_assay_kernel):
    from tests.knowledge.files import PLUGINS

    kernel = make_assay_kernel(*PLUGINS)
    result = kernel.call_tool("knowledge_search", {"query": "refund"})
    assert result.error_code == "KNOWLEDGE_BASE_NOT_FOUND" and "ASSAY_KNOWLEDGE" in result.hint


def test_a_report_cites_a_definition_with_its_artifact_hash(kernel):
    with kernel.new_run() as run:
        found = kernel.call_tool(
            "knowledge_search", {"query": "refund rate denominator", "k": 3}, run=run
        )
        aid = found.data["artifact_id"]
        row = next(
            i
            for i, p in enumerate(found.data["passages"])
            if p["heading"] == "Metrics > Refund rate"
        )
        document = {
            "title": "Refunds",
            "blocks": [
                {
                    "type": "text",
                    "text": "Definition ({source}): {definition}",
                    "cite": {
                        "source": {"artifact_id": aid, "path": [row, "file"]},
                        "definition": {"artifact_id": aid, "path": [row, "text"]},
                    },
                }
            ],
        }
        report = kernel.call_tool("render_report", {"document": document}, run=run)
        assert report.success, report.for_model()
        sha = get_record(run.artifacts, aid).sha256
        assert "The denominator counts every order" in report.content
        assert (
            f"(knowledge, sha256 `{sha[:12]}`): `knowledge_search: refund rate denominator`"
            in report.content
        )


def test_get_prompt_lists_the_sections_within_its_budget(base):
    prompt = base.get_prompt()
    assert "knowledge base 'metrics'" in prompt and "knowledge_search" in prompt
    assert "- glossary.md: Metrics" in prompt and "Refund rate" in prompt
    small = base.get_prompt(PromptBudget(max_chars=300))
    assert len(small) <= 300


def test_get_prompt_of_a_missing_base_says_it_is_unavailable(
    make_assay_kernel, monkeypatch, tmp_path
):
    from tests.knowledge.files import PLUGINS

    monkeypatch.setenv("ASSAY_KNOWLEDGE", f"gone={tmp_path / 'missing'}")
    kernel = make_assay_kernel(*PLUGINS)
    assert "unavailable: KNOWLEDGE_BASE_NOT_FOUND" in kernel.system_prompt()


def test_the_tool_caps_k_at_max_k(kernel, monkeypatch):
    result = kernel.call_tool("knowledge_search", {"query": "order refund promotion", "k": 50})
    assert result.success and result.data["row_count"] <= 20
