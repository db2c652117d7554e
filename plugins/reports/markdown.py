"""The ``markdown_report`` plugin: the ``markdown`` report renderer and the ``render_report`` tool.

Every number and table in the output is read from a cited artifact (hash
verified, by :mod:`assay.plugins.reports.resolve`, which every renderer shares)
and marked with a footnote naming the artifact, its SHA-256 prefix and the SQL
or code that produced it. A citation that cannot be read fails the whole
render with ``REPORT_CITATION_INVALID`` (naming the block), never a report
with a made-up value.

One module (renderer, tool and hooks). The installed ``markdown_report``
entry point is the thin :data:`assay.plugins.reports.plugins.markdown`, which
registers :data:`RENDERER` and ``render_report`` lazily (this module loads
when the tool is first described or called). Hosts may still load this
module as a plugin by name.
"""

from __future__ import annotations

import re
from typing import Any

from assay import RunContext, ToolResult, hookimpl, tool
from assay.kernel.evidence import capture_file
from assay.kernel.evidence.preview import markdown_table
from assay.kernel.reports import ReportDocument

from .html import HtmlRenderer
from .resolve import (
    MISSING_MARK,
    MISSING_NOTE,
    REPORT_CITATION_INVALID,
    REPORT_CITATION_OTHER_RUN,
    resolve_report,
)
from .resolved import (
    ResolvedChart,
    ResolvedHeading,
    ResolvedImage,
    ResolvedNumber,
    ResolvedReport,
    ResolvedTableBlock,
    ResolvedText,
    Source,
    Value,
)

__all__ = [
    "MISSING_MARK",
    "REPORT_CITATION_INVALID",
    "REPORT_CITATION_OTHER_RUN",
    "MarkdownRenderer",
]


CHART_TABLE_ROWS = 20  # a chart block in Markdown: its first points as a table
ORIGIN_INLINE_CHARS = 120  # SQL or code up to this long, on one line, stays on its footnote's line


class MarkdownRenderer:
    """Renders a report document as Markdown (an :class:`assay.kernel.reports.ReportRenderer`)."""

    name = "markdown"
    media_type = "text/markdown"

    def render(self, document: Any, reader: Any) -> bytes:
        """``reader``: an artifact sink, catalog, run or kernel (what read_artifact_result takes)."""
        return self.render_cited(document, reader)[0]

    def render_cited(self, document: Any, reader: Any) -> tuple[bytes, list[dict[str, Any]]]:
        """The Markdown, and one entry per rendered value (artifact id, run, selector, SHA-256...).

        The same document over the same artifacts gives the same bytes (no set or
        hash order anywhere). When ``reader`` is a run or its sink, every cited
        artifact must belong to that run (``REPORT_CITATION_OTHER_RUN``).
        """
        report = resolve_report(document, reader)
        return format_markdown(report).encode("utf-8"), report.citations


def format_markdown(report: ResolvedReport) -> str:
    """The Markdown of a resolved report: blocks, then the sources its footnotes point to."""
    parts = [f"# {_escape_line(report.title)}"]
    parts.extend(_block(block) for block in report.blocks)
    if report.warnings:
        parts.append("## Gaps")
        parts.append(
            "These parts could not be shown from verified evidence and were left out "
            f"(a value shows `{MISSING_MARK}`):"
        )
        parts.extend(
            f"- block {w.block} ({w.kind}{', ' + w.field if w.field else ''}"
            f"{', artifact `' + w.artifact_id + '`' if w.artifact_id else ''}): {_escape_line(w.reason)}"
            for w in report.warnings
        )
    if report.unbound:
        parts.append("## Figures not bound to evidence")
        parts.append(
            "These figures are written in the text, not read from the evidence (no citation):"
        )
        parts.extend(f"- {_escape_line(f.describe())}" for f in report.unbound)
    if report.sources:
        parts.append("## Sources")
        parts.extend(_footnote(source) for source in report.sources.values())
        if report.missing_used:
            parts.append(MISSING_NOTE)
    return "\n\n".join(parts) + "\n"


def _block(block: Any) -> str:
    if isinstance(block, ResolvedHeading):
        return "#" * block.level + " " + _escape_line(block.text)
    if isinstance(block, ResolvedText):
        return "".join(part if isinstance(part, str) else _value(part) for part in block.parts)
    if isinstance(block, ResolvedNumber):
        return f"**{_escape_line(block.label)}:** {_value(block.value)}"
    if isinstance(block, ResolvedTableBlock):
        return _table(block)
    if isinstance(block, ResolvedChart):  # Markdown cannot draw: the points as a table
        return _table(block.table(CHART_TABLE_ROWS))
    if isinstance(block, ResolvedImage):
        return f"![{_escape_line(block.caption)}]({block.content_uri}){_mark(block.source)}"
    raise TypeError(f"unknown resolved block {block!r}")


def _value(value: Value) -> str:
    return value.text + _mark(value.source)


def _mark(source: Source | None) -> str:
    return f"[^{source.number}]" if source is not None else ""


def _table(table: ResolvedTableBlock) -> str:
    if table.empty:  # an empty result is "no rows", never a table of zeros
        return f"*{_escape_line(table.caption)}*{_mark(table.source)}"
    texts = ([table.text(v, c) for v, c in zip(row, table.columns)] for row in table.rows)
    text, _ = markdown_table(table.columns, texts, table_cell)
    return text + f"\n\n*{_escape_line(table.caption)}*{_mark(table.source)}"


def _footnote(source: Source) -> str:
    """The source's line, then its whole SQL or code (never cut) as a code block inside the footnote when it
    is longer than a line; a short one stays on the line."""
    code, origin = source.code(), source.origin(200).replace("`", "'")
    text = f"[^{source.number}]: artifact `{source.artifact_id}` ({source.kind}, sha256 `{source.sha256[:12]}`)"
    inline = not code or ("\n" not in code and len(code) <= ORIGIN_INLINE_CHARS)
    text += f": `{origin}`" if origin and inline else ""
    text += f" - {source.record.incomplete_note()}" if not source.complete else ""
    if inline:
        return text
    fence = "`" * max(3, _longest_backtick_run(code) + 1)
    block = [fence + source.language, *code.splitlines(), fence]
    return text + ":\n\n" + "\n".join(("    " + line).rstrip() for line in block)


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def table_cell(text: str) -> str:
    """Text as one Markdown table cell: its pipes escaped, its line breaks spaces (a break ends the row)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _escape_line(text: str) -> str:
    return " ".join(str(text).split())


@tool
def render_report(document: ReportDocument, run: RunContext) -> ToolResult:
    """Write the final report (Markdown, and the HTML page people open) from cited artifacts; keep both as evidence.

    Every number must be a citation ({"artifact_id", "path"}) of an artifact a
    previous tool call returned; tables cite an artifact id and columns.

    Args:
        document: The report: a title and blocks (heading, text with cited placeholders, number, table, image,
            chart).
    """
    if run.artifacts is None:
        return ToolResult.fail(
            "REPORT_NO_EVIDENCE",
            "this run captures no artifacts, so nothing can be cited",
            "Start the run with capture enabled.",
        )
    resolved = resolve_report(document, run.artifacts)
    markdown, citations = format_markdown(resolved).encode("utf-8"), resolved.citations
    unbound = [f.describe() for f in resolved.unbound]

    # Every rendered value's artifact id, selector and SHA-256 (and the document itself): the report can
    # be re-verified, or rendered again, later. The HTML page is the saved report (`assay report show`).
    page, _ = HtmlRenderer().render_cited(document, run.artifacts)
    refs = []
    for data, name, media_type, renderer in (
        (markdown, "report.md", "text/markdown", "markdown"),
        (page, "report.html", "text/html", "html"),
    ):
        provenance = {
            "title": document.title,
            "renderer": renderer,
            "missing_mark": MISSING_MARK,
            "citations": citations,
            "document": document.model_dump(mode="json"),
        }
        record = capture_file(
            run.artifacts,
            data=data,
            name=name,
            media_type=media_type,
            kind="report",
            provenance=provenance,
        )
        if record is not None:
            refs.append(record.ref())
    flagged = (
        (
            "warning: figures not bound to evidence (write each as a {name} citation, or remove it): "
            + "; ".join(unbound)
            + "\n\n"
        )
        if unbound
        else ""
    )
    return ToolResult.ok(
        {
            "artifact_id": refs[0].artifact_id if refs else None,
            "html_artifact_id": refs[1].artifact_id if len(refs) > 1 else None,
            "unbound_figures": unbound,
        },
        content=flagged + markdown.decode("utf-8"),
        artifacts=refs,
        metadata={"unbound_figures": unbound} if unbound else {},
    )


RENDERER = MarkdownRenderer()


@hookimpl
def register_report_renderers(register):
    register(MarkdownRenderer())


@hookimpl
def register_tools(register):
    register(render_report)
