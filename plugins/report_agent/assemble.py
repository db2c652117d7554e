"""From a checked document to a stored report: assembly (with controlled degradation), render, provenance.

Assembly reads every citation. A value whose artifact can no longer be
verified (content altered or missing) is kept in the document as
``unavailable`` and shown as ``--``; a chart or table whose artifact cannot be
verified is left out; each is a :class:`~assay.kernel.reports.Gap` and a
warning. Nothing is ever replaced by another number. Any other failure
(a wrong path, an unknown column) is the sub-agent's to repair, unless this
is the fallback render (``lenient``), where the failing block becomes a gap too.
An exception that is not an :class:`~assay.AssayError` is a bug, never a gap:
it ends the assembly.

The stored report (an artifact of kind ``report``) is the Markdown, followed by
a provenance table: every value with its artifact id, selector and SHA-256.
Its record keeps the document and citations, so ``assay reports verify`` can
re-read each and re-render the whole report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assay import AssayError
from assay.kernel.evidence import capture_file, open_verified_content, read_artifact_result
from assay.kernel.reports import (
    MISSING_MARK,
    ChartBlock,
    Gap,
    ImageBlock,
    NumberBlock,
    ReportDocument,
    TableBlock,
    TextBlock,
)
from assay.plugins.reports.html import HtmlRenderer
from assay.plugins.reports.markdown import MarkdownRenderer, table_cell
from assay.plugins.reports.resolve import _ChartRows
from assay.plugins.reports.tables import resolve_table

from .precheck import check_block
from .state import Phase

UNVERIFIABLE = {"ARTIFACT_INTEGRITY_FAILED", "ARTIFACT_FILE_MISSING"}


class PhaseError(Exception):
    """A failure of one phase of the report pipeline (precheck, assembly, render)."""

    def __init__(self, phase: Phase, error: AssayError, block: int | None = None) -> None:
        super().__init__(error.message)
        self.phase, self.error, self.block = phase, error, block

    @property
    def code(self) -> str:
        return self.error.code

    def text(self) -> str:
        where = f"block {self.block}: " if self.block is not None else ""
        hint = f"\nhint: {self.error.hint}" if self.error.hint else ""
        return f"{self.phase} failed: {where}{self.error.code}: {self.error.message}{hint}"


@dataclass
class Assembled:
    document: ReportDocument
    warnings: list[str] = field(default_factory=list)
    verified_parts: int = 0  # values, tables and charts shown from verified evidence


def _code(exc: BaseException) -> str:
    return getattr(exc, "code", None) or type(exc).__name__


def assemble(
    doc: ReportDocument,
    catalog: Any,
    run_id: str | tuple[str, ...],
    *,
    lenient: bool = False,
    missing_calculations: Sequence[str] = (),
) -> Assembled:
    """The document with its gaps recorded (see the module docstring)."""
    doc = ReportDocument.coerce(doc.model_dump(mode="json"))  # a copy we may change
    gaps: list[Gap] = []
    kept: list[Any] = []
    verified = 0
    heading = ""

    def degradable(exc: BaseException) -> bool:
        # only assay's own errors: anything else is a bug here, never shown as unverifiable evidence
        return isinstance(exc, AssayError) and (lenient or exc.code in UNVERIFIABLE)

    for index, block in enumerate(doc.blocks):
        position = len(kept)
        if block.type == "heading":
            heading = block.text
            kept.append(block)
            continue
        try:
            check_block(block, catalog, run_id, heading)
        except AssayError as exc:
            if not lenient:
                raise PhaseError("precheck", exc, index) from None
            gaps.append(
                Gap(
                    block=position,
                    kind=_kind(block),
                    artifact_id=getattr(block, "artifact_id", None),
                    reason=f"left out: {exc.code}: {exc.message}",
                )
            )
            continue
        try:
            if isinstance(block, NumberBlock):
                try:
                    read_artifact_result(catalog, block.artifact_id, {"path": block.path})
                    verified += 1
                except Exception as exc:
                    if not degradable(exc):
                        raise
                    block.unavailable = _code(exc)
                    gaps.append(
                        Gap(
                            block=position,
                            kind="value",
                            artifact_id=block.artifact_id,
                            field=block.label,
                            reason=f"{block.label}: could not be verified ({_code(exc)}); shown as "
                            f"{MISSING_MARK}",
                        )
                    )
            elif isinstance(block, TextBlock):
                for name, citation in block.cite.items():
                    try:
                        read_artifact_result(catalog, citation.artifact_id, {"path": citation.path})
                        verified += 1
                    except Exception as exc:
                        if not degradable(exc):
                            raise
                        citation.unavailable = _code(exc)
                        gaps.append(
                            Gap(
                                block=position,
                                kind="value",
                                artifact_id=citation.artifact_id,
                                field=name,
                                reason=f"{{{name}}}: could not be verified ({_code(exc)}); shown as "
                                f"{MISSING_MARK}",
                            )
                        )
            elif isinstance(block, (ImageBlock, ChartBlock, TableBlock)):
                try:
                    _verify_shown(catalog, block)
                    verified += 1
                except Exception as exc:
                    if not degradable(exc):
                        raise
                    gaps.append(
                        Gap(
                            block=position,
                            kind=_kind(block),
                            artifact_id=block.artifact_id,
                            reason=f"{_what(block)} omitted: {_code(exc)}",
                        )
                    )
                    continue
        except AssayError as exc:
            raise PhaseError("assembly", exc, index) from None
        kept.append(block)
    for name in missing_calculations:
        gaps.append(
            Gap(
                block=len(kept),
                kind="value",
                reason=f"calculation {name!r} could not be computed: its attempts were spent",
            )
        )
    doc.blocks = kept
    doc.gaps = gaps
    return Assembled(doc, [g.reason for g in gaps], verified)


def _verify_shown(catalog: Any, block: Any) -> None:
    """Read what an image, chart or table block would show, through the hash check (raises on failure)."""

    if isinstance(block, ImageBlock):
        open_verified_content(catalog, block.artifact_id)
    else:
        resolve_table(catalog, _ChartRows(block) if isinstance(block, ChartBlock) else block)


def _what(block: Any) -> str:
    return (
        f"table {block.caption or ''!r}"
        if isinstance(block, TableBlock)
        else f"chart {block.caption!r}"
    )


def _kind(block: Any) -> Literal["value", "chart", "table"]:
    if block.type in ("image", "chart"):
        return "chart"
    return "table" if block.type == "table" else "value"


def render(
    doc: ReportDocument,
    catalog: Any,
    run: Any,
    *,
    status: Literal["completed", "partial", "failed"] | None = None,
    draft: bool | None = None,
) -> tuple[bytes, list[dict[str, Any]]]:
    """The Markdown with its provenance table, and the citations (render phase). ``status`` and
    ``draft`` are the pipeline's fields of the document, set here (never by the writer)."""
    if status is not None:
        doc.status = status
    if draft is not None:
        doc.draft = draft

    try:
        body, citations = MarkdownRenderer().render_cited(doc, run.artifacts or catalog)
    except AssayError as exc:
        raise PhaseError("render", exc) from None
    return body + provenance_table(citations).encode("utf-8"), citations


def provenance_table(citations: list[dict[str, Any]]) -> str:
    """Every value shown, with the artifact, selector and SHA-256 it was read from."""
    lines = [
        "",
        "## Provenance",
        "",
        "| # | block | value | artifact | selector | sha256 |",
        "|---|---|---|---|---|---|",
    ]
    for n, c in enumerate(citations, 1):
        if c.get("unavailable"):
            value = f"{MISSING_MARK} (unavailable: {c['unavailable']})"
        elif c.get("rows_shown") is not None:
            value = f"table, {c['rows_shown']} rows"
        elif c.get("rendered") is not None:
            value = str(c["rendered"])
            value += f" (exact: {c['exact']})" if c.get("exact") not in (None, value) else ""
        else:
            value = "chart"
        selector = table_cell(json.dumps(c.get("selector"), sort_keys=True, separators=(",", ":")))
        sha = c.get("sha256") or "-"
        lines.append(
            f"| {n} | {c['block']} | {table_cell(value)} | `{c['artifact_id']}` | `{selector}` | `{sha}` |"
        )
    return "\n".join(lines) + "\n"


def store_report(
    run: Any,
    data: bytes,
    citations: list[dict[str, Any]],
    doc: ReportDocument,
    *,
    status: str,
    formal: bool,
    warnings: list[str],
    unbound: Sequence[str] = (),
) -> str:
    """Keep the report as evidence; its id. ``unbound``: the figures its prose states without a citation."""
    provenance = {
        "title": doc.title,
        "renderer": "markdown",
        "missing_mark": MISSING_MARK,
        "status": status,
        "formal": formal,
        "warnings": warnings,
        "citations": citations,
        "document": doc.model_dump(mode="json"),
        "provenance_table": True,
        "unbound_figures": list(unbound),
    }
    name = "report.md" if formal else "report.partial.md"
    record = capture_file(
        run.artifacts,
        data=data,
        name=name,
        media_type="text/markdown",
        kind="report",
        provenance=provenance,
    )
    assert record is not None  # generate_report refuses a run that captures no artifacts
    _store_html(run, doc, provenance, formal)
    return record.artifact_id


def _store_html(run: Any, doc: ReportDocument, provenance: dict[str, Any], formal: bool) -> None:
    """The same report as the HTML page people open (`assay report show RUN_ID`), kept beside it."""

    page, _ = HtmlRenderer().render_cited(doc, run.artifacts)
    capture_file(
        run.artifacts,
        data=page,
        name="report.html" if formal else "report.partial.html",
        media_type="text/html",
        kind="report",
        provenance=provenance | {"renderer": "html"},
    )
