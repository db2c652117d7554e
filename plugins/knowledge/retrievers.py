"""A second ranker beside BM25: the ``register_knowledge_retrievers`` plugin point.

A retriever is any object with a ``name`` and
``retrieve(query, passages, k) -> [(passage_id, score), ...]`` (best first),
where ``passages`` is a :class:`PassageSource`: it iterates
``(id, heading, text, sha256)`` over the base's passages (an embedding
retriever caches vectors by ``sha256``) and names the base. Its picks are
fused with BM25's by reciprocal rank fusion; a retriever that raises is
reported (``KNOWLEDGE_RETRIEVER_FAILED`` in the result's warnings) and the
BM25 ranking stands alone. No retriever ships with assay: BM25 needs no
model, and an embedding ranker is a plugin's choice of dependency.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from .index import Hit, KnowledgeIndex

RRF_K = 60  # reciprocal rank fusion: score = sum over rankers of 1 / (RRF_K + rank)


@runtime_checkable
class Retriever(Protocol):
    name: str

    def retrieve(self, query: str, passages: PassageSource, k: int) -> list[tuple[int, float]]: ...


class PassageSource:
    """What a retriever reads: the base's name and its passages."""

    def __init__(self, base: str, index: KnowledgeIndex) -> None:
        self.base = base
        self._index = index

    def __iter__(self) -> Iterator[tuple[int, str, str, str]]:
        return self._index.passages()


def fuse(rankings: dict[str, list[int]], k: int) -> list[tuple[int, float, list[str]]]:
    """Reciprocal rank fusion of several rankings (name -> passage ids, best first): the ``k`` best
    ``(id, fused score, rankers that found it)``; ties keep BM25's order (the first ranking's)."""
    scores: dict[int, float] = {}
    found: dict[int, list[str]] = {}
    order: dict[int, int] = {}
    for name, ids in rankings.items():
        for rank, pid in enumerate(ids, 1):
            scores[pid] = scores.get(pid, 0.0) + 1.0 / (RRF_K + rank)
            found.setdefault(pid, []).append(name)
            order.setdefault(pid, len(order))
    best = sorted(scores, key=lambda pid: (-scores[pid], order[pid]))[:k]
    return [(pid, scores[pid], found[pid]) for pid in best]


def run_retrievers(
    retrievers: list[Any],
    query: str,
    base: str,
    index: KnowledgeIndex,
    bm25: list[Hit],
    k: int,
) -> tuple[list[Hit], list[dict[str, str]]]:
    """BM25's hits fused with each retriever's picks; and the warnings of retrievers that failed."""
    rankings: dict[str, list[int]] = {"bm25": [h.id for h in bm25]}
    warnings: list[dict[str, str]] = []
    source = PassageSource(base, index)
    for retriever in retrievers:
        try:
            picks = retriever.retrieve(query, source, k)
            rankings[retriever.name] = [int(pid) for pid, _ in picks][: max(k, len(bm25))]
        except Exception as exc:  # noqa: BLE001 - a plugin's ranker must not take the search down
            warnings.append(
                {
                    "code": "KNOWLEDGE_RETRIEVER_FAILED",
                    "retriever": retriever.name,
                    "message": f"{type(exc).__name__}: {str(exc)[:300]}",
                }
            )
    if len(rankings) == 1:
        for hit in bm25[:k]:
            hit.score, hit.rankers = hit.bm25 or 0.0, ["bm25"]
        return bm25[:k], warnings
    by_id = {h.id: h for h in bm25}
    fused = fuse(rankings, k)
    missing = [pid for pid, _, _ in fused if pid not in by_id]
    by_id.update(index.hits(missing))
    out = []
    for pid, score, names in fused:
        found = by_id.get(pid)
        if found is None:  # a retriever named a passage the index does not hold
            continue
        found.score, found.rankers = round(score, 6), names
        out.append(found)
    return out, warnings
