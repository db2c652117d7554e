"""A second ranker plugs in through ``register_knowledge_retrievers`` and is fused with BM25."""

from __future__ import annotations

from assay import hookimpl


class TrigramRetriever:
    """A tiny second ranker: passages sharing the most character trigrams with the query (finds typos)."""

    name = "trigram"

    def __init__(self) -> None:
        self.seen_base = None

    def retrieve(self, query, passages, k):
        self.seen_base = passages.base

        def grams(text):
            text = text.lower()
            return {text[i : i + 3] for i in range(len(text) - 2)}

        wanted = grams(query)
        scored = [
            (pid, len(wanted & grams(heading + " " + text))) for pid, heading, text, _ in passages
        ]
        return sorted((s for s in scored if s[1]), key=lambda s: -s[1])[:k]


class BrokenRetriever:
    name = "broken"

    def retrieve(self, query, passages, k):
        raise RuntimeError("the embedding server is down")


class RetrieverPlugin:
    def __init__(self, *retrievers) -> None:
        self.retrievers = retrievers

    @hookimpl
    def register_knowledge_retrievers(self, register):
        for retriever in self.retrievers:
            register(retriever)


def kernel_with(make_assay_kernel, monkeypatch, docs, *retrievers):
    from tests.knowledge.files import PLUGINS

    monkeypatch.setenv("ASSAY_KNOWLEDGE", f"metrics={docs}")
    return make_assay_kernel(*PLUGINS, RetrieverPlugin(*retrievers))


def test_register_knowledge_retrievers_fuses_a_second_ranker_with_bm25(
    make_assay_kernel, monkeypatch, docs
):
    trigram = TrigramRetriever()
    kernel = kernel_with(make_assay_kernel, monkeypatch, docs, trigram)
    result = kernel.call_tool("knowledge_search", {"query": "denominatr", "k": 3})
    assert result.success, result.for_model()
    first = result.data["passages"][0]
    assert first["rankers"] == "trigram" and "Refund rate" in first["heading"]
    assert trigram.seen_base == "metrics"


def test_bm25_alone_misses_the_typo_the_second_ranker_finds(make_assay_kernel, monkeypatch, docs):
    kernel = kernel_with(make_assay_kernel, monkeypatch, docs)
    result = kernel.call_tool("knowledge_search", {"query": "denominatr", "k": 3})
    assert result.success and result.data["row_count"] == 0


def test_a_passage_both_rankers_find_is_marked_with_both(make_assay_kernel, monkeypatch, docs):
    kernel = kernel_with(make_assay_kernel, monkeypatch, docs, TrigramRetriever())
    result = kernel.call_tool("knowledge_search", {"query": "denominator", "k": 3})
    assert result.data["passages"][0]["rankers"] == "bm25,trigram"


def test_a_failing_retriever_is_reported_and_bm25_results_stand(
    make_assay_kernel, monkeypatch, docs
):
    kernel = kernel_with(make_assay_kernel, monkeypatch, docs, BrokenRetriever())
    result = kernel.call_tool("knowledge_search", {"query": "denominator", "k": 3})
    assert result.success and result.data["row_count"] >= 1
    assert result.data["warnings"][0]["code"] == "KNOWLEDGE_RETRIEVER_FAILED"
    assert "WARNING KNOWLEDGE_RETRIEVER_FAILED" in result.content


def test_assay_knowledge_retrievers_chooses_which_rankers_run(make_assay_kernel, monkeypatch, docs):
    monkeypatch.setenv("ASSAY_KNOWLEDGE_RETRIEVERS", '["trigram"]')
    kernel = kernel_with(
        make_assay_kernel, monkeypatch, docs, TrigramRetriever(), BrokenRetriever()
    )
    result = kernel.call_tool("knowledge_search", {"query": "denominator"})
    assert result.data["warnings"] == []
