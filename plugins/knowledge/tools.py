"""The ``knowledge_search`` tool: passages with their source, captured as a ``knowledge`` artifact.

Every search (an empty one too) is kept as evidence: one row per passage
with its base, file, heading, line range, text and the SHA-256 of the file
it came from. A report cites a definition exactly as it cites a number:
``{"artifact_id": ID, "path": [ROW, "text"]}``, read back hash-verified.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from assay import FunctionTool, RunContext, ToolResult
from assay.kernel.evidence import capture_rows

from . import knowledge_settings
from .errors import ARTIFACT_CAPTURE_FAILED, KNOWLEDGE_BASE_NOT_FOUND, KnowledgeError
from .index import Hit
from .resource import KnowledgeBase, SearchResult
from .settings import KnowledgeSettings

COLUMNS = [
    "rank",
    "base",
    "file",
    "heading",
    "line_start",
    "line_end",
    "page",
    "text",
    "score",
    "bm25",
    "rankers",
    "file_sha256",
    "passage_sha256",
]
CAPTURE_HINT = (
    "The search ran, but no snapshot was saved, so its passages cannot be cited; search again."
)


def knowledge_bases(kernel: Any) -> dict[str, KnowledgeBase]:
    return {n: r for n, r in kernel.resources.items() if isinstance(r, KnowledgeBase)}


def resolve(kernel: Any, base: str | None) -> list[KnowledgeBase]:
    found = knowledge_bases(kernel) if kernel is not None else {}
    if base:
        if base in found:
            return [found[base]]
        raise KnowledgeError(
            KNOWLEDGE_BASE_NOT_FOUND,
            f"no knowledge base named {base!r}",
            f"Available knowledge bases: {', '.join(sorted(found)) or 'none'}.",
        )
    if not found:
        raise KnowledgeError(
            KNOWLEDGE_BASE_NOT_FOUND,
            "no knowledge base is configured",
            "Set ASSAY_KNOWLEDGE=name=./path or add [knowledge.bases.NAME] to the config file.",
        )
    return [found[name] for name in sorted(found)]


def interleave(results: list[SearchResult], k: int) -> list[tuple[str, Hit]]:
    """Several bases' rankings as one: their first hits, then their second ones... (scores of different
    bases are not comparable, ranks are)."""
    out: list[tuple[str, Hit]] = []
    depth = max((len(r.hits) for r in results), default=0)
    for i in range(depth):
        for result in results:
            if i < len(result.hits):
                out.append((result.base, result.hits[i]))
    return out[:k]


def search_result(
    results: list[SearchResult], k: int, sink: Any, settings: KnowledgeSettings
) -> ToolResult:
    hits = interleave(results, k)
    query = results[0].query
    rows = [
        [
            i,
            base,
            h.file,
            h.heading,
            h.line_start,
            h.line_end,
            h.page,
            h.text,
            h.score,
            h.bm25,
            ",".join(h.rankers),
            h.file_sha256,
            h.passage_sha256,
        ]
        for i, (base, h) in enumerate(hits)
    ]
    warnings = [w for r in results for w in r.warnings]
    record = None
    if sink is not None:
        provenance = {
            "query": query,
            "match": results[0].match,
            "bases": [r.base for r in results],
            "k": k,
            "rankers": sorted({n for r in results for n in r.rankers}),
            "warnings": warnings,
        }
        try:
            record = capture_rows(
                sink,
                kind="knowledge",
                columns=COLUMNS,
                rows=rows,
                provenance=provenance,
                column_types=[
                    "int",
                    "text",
                    "text",
                    "text",
                    "int",
                    "int",
                    "int",
                    "text",
                    "real",
                    "real",
                    "text",
                    "text",
                    "text",
                ],
            )
        except Exception as exc:  # noqa: BLE001 - any failure here is a capture failure
            return ToolResult.fail(
                ARTIFACT_CAPTURE_FAILED,
                f"the knowledge search ran but its capture failed: {type(exc).__name__}: {exc}",
                CAPTURE_HINT,
            )
    artifact_id = record.artifact_id if record is not None else None
    evidence = (
        f"artifact {artifact_id}" if artifact_id else "no artifact (this run keeps no evidence)"
    )
    bases = ", ".join(r.base for r in results)
    if not hits:
        content = f"no passage in {bases} matched {query!r} ({evidence})."
    else:
        content = render_hits(hits, query, bases, evidence, artifact_id, settings.result_chars)
    for w in warnings:
        content += f"\nWARNING {w['code']}: retriever {w['retriever']} failed ({w['message']}); BM25 ranking only."
    data = {
        "artifact_id": artifact_id,
        "row_count": len(rows),
        "bases": [r.base for r in results],
        "passages": [{c: row[i] for i, c in enumerate(COLUMNS) if c != "text"} for row in rows],
        "warnings": warnings,
    }
    return ToolResult.ok(
        data, content=content, artifacts=[record.ref()] if record is not None else []
    )


def render_hits(
    hits: list[tuple[str, Hit]],
    query: str,
    bases: str,
    evidence: str,
    artifact_id: str | None,
    budget: int,
) -> str:
    head = f"{len(hits)} passage{'s' if len(hits) != 1 else ''} from {bases} for {query!r}; {evidence}."
    parts = [head]
    used = len(head)
    per = max(200, budget // max(1, len(hits)))
    for i, (base, h) in enumerate(hits):
        where = f"lines {h.line_start}-{h.line_end}" + (f", page {h.page}" if h.page else "")
        text = (
            h.text if len(h.text) <= per else h.text[: per - 30] + f" ... ({len(h.text):,} chars)"
        )
        block = (
            f"[row {i}] {base}: {h.file}"
            + (f" > {h.heading}" if h.heading else "")
            + f" ({where})\n{text}"
        )
        if used + len(block) > budget:
            parts.append(
                f"... {len(hits) - i} more passage(s) in the artifact (the result's text budget is spent)"
            )
            break
        parts.append(block)
        used += len(block) + 2
    if artifact_id:
        parts.append(
            f'Cite a passage in a report as {{"artifact_id": "{artifact_id}", "path": [ROW, "text"]}} '
            '(its source: [ROW, "file"], [ROW, "heading"]).'
        )
    return "\n\n".join(parts)


def build_tool(kernel: Any, settings: KnowledgeSettings) -> FunctionTool:
    def knowledge_search(
        query: Annotated[
            str, Field(description="Words to look for, such as 'refund rate denominator'.")
        ],
        k: Annotated[int, Field(ge=1, le=50, description="How many passages to return.")] = 5,
        base: Annotated[
            str | None, Field(description="A knowledge base name; default: every base.")
        ] = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        """Search the knowledge bases (business definitions, data dictionaries, policies) for passages.

        Returns the best passages with their file, heading and line range; the
        result is saved as an artifact, so a report can cite a definition with
        its hash. Look a metric up here before computing it.
        """
        try:
            bases = resolve(kernel or (run.kernel if run is not None else None), base)
            k = min(k, settings.max_k)
            results = [b.search(query, k) for b in bases]
        except KnowledgeError as exc:
            return ToolResult.from_error(exc)
        return search_result(results, k, getattr(run, "artifacts", None), settings)

    return FunctionTool(knowledge_search)


def knowledge_search_tool(kernel: Any) -> FunctionTool:
    """The tool bound to ``kernel`` (registered as ``Lazy(..., factory=True)``)."""
    return build_tool(kernel, knowledge_settings(kernel.settings))
