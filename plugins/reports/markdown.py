"""The ``markdown_report`` plugin: the ``markdown`` report renderer and the ``render_report`` tool.

Every number and table in the output is read from a cited artifact (hash
verified) and marked with a footnote naming the artifact, its SHA-256 prefix
and the SQL or code that produced it. A citation that cannot be read fails
the whole render with ``REPORT_CITATION_INVALID`` (naming the block), never
a report with a made-up value.

One module (renderer, tool and hooks): split in a thin and a heavy half it
saved about 2 ms of start-up. The document models (:mod:`assay.kernel.reports`)
are built on first validation, so importing them here costs about 3 ms.
"""

from __future__ import annotations

import string
from typing import Any

from assay import AssayError, RunContext, ToolResult, hookimpl, tool
from assay.kernel.reports import (
    Citation,
    HeadingBlock,
    ImageBlock,
    NumberBlock,
    ReportDocument,
    TableBlock,
    TextBlock,
)


REPORT_CITATION_INVALID = "REPORT_CITATION_INVALID"


class MarkdownRenderer:
    """Renders a report document as Markdown (an :class:`assay.kernel.reports.ReportRenderer`)."""

    name = "markdown"
    media_type = "text/markdown"

    def render(self, document: Any, reader: Any) -> bytes:
        """``reader``: an artifact sink, catalog, run or kernel (what read_artifact_result takes)."""
        return _Render(ReportDocument.coerce(document), reader).run().encode("utf-8")


class _Render:
    def __init__(self, doc: Any, reader: Any) -> None:
        self.doc, self.reader = doc, reader
        self.sources: dict[str, int] = {}  # artifact id -> footnote number
        self.records: dict[str, Any] = {}

    def run(self) -> str:
        parts = [f"# {_escape_line(self.doc.title)}"]
        for index, block in enumerate(self.doc.blocks):
            try:
                parts.append(self.block(block))
            except AssayError as exc:
                raise AssayError(
                    REPORT_CITATION_INVALID,
                    f"block {index} ({block.type}): {exc.code}: {exc.message}",
                    exc.hint or "Cite an artifact id and selector that a tool call of this run returned.",
                ) from exc
        if self.sources:
            parts.append("## Sources")
            parts.extend(self.footnote(aid, n) for aid, n in self.sources.items())
        return "\n\n".join(parts) + "\n"

    def block(self, block: Any) -> str:
        if isinstance(block, HeadingBlock):
            return "#" * block.level + " " + _escape_line(block.text)
        if isinstance(block, TextBlock):
            return self.text(block)
        if isinstance(block, NumberBlock):
            value = self.value(Citation(artifact_id=block.artifact_id, path=block.path, format=block.format))
            return f"**{_escape_line(block.label)}:** {value}"
        if isinstance(block, TableBlock):
            return self.table(block)
        if isinstance(block, ImageBlock):
            record = self.citable(block.artifact_id)
            return f"![{_escape_line(block.caption)}]({record.content_uri}){self.mark(block.artifact_id)}"
        raise AssayError(REPORT_CITATION_INVALID, f"unknown block {block!r}")

    def text(self, block: Any) -> str:
        names = {field for _, field, _, _ in string.Formatter().parse(block.text) if field}
        missing = names - set(block.cite)
        if missing:
            raise AssayError(REPORT_CITATION_INVALID, f"placeholders without a citation: {sorted(missing)}",
                             "Every {name} in the text needs a cite entry.")
        values = {name: self.value(block.cite[name]) for name in names}
        return block.text.format(**values)

    def citable(self, artifact_id: str) -> Any:
        """The record, if it may be cited: a failed execution or a Python run that
        assigned no REPORT_RESULT holds no figures, so citing it is refused."""
        record = self.record(artifact_id)
        if record.status != "succeeded":
            raise AssayError(
                REPORT_CITATION_INVALID,
                f"artifact {artifact_id} records a {record.status} {record.kind} execution; it holds no figures",
                "Cite the artifact of a successful execution; if the analysis failed, fix and re-run it first.",
            )
        if record.kind == "python" and record.provenance.get("result_set") is False:
            raise AssayError(
                REPORT_CITATION_INVALID,
                f"artifact {artifact_id} is a Python run that assigned no REPORT_RESULT",
                "Re-run the calculation assigning its answer to REPORT_RESULT, then cite that artifact.",
            )
        return record

    def value(self, citation: Any) -> str:
        from assay.kernel.evidence import read_artifact_result

        self.citable(citation.artifact_id)
        selected = read_artifact_result(self.reader, citation.artifact_id, {"path": citation.path})
        value = selected.value
        text = format(value, citation.format) if citation.format and value is not None else _plain(value)
        return f"{text}{self.mark(citation.artifact_id)}"

    def table(self, block: Any) -> str:
        from assay.kernel.evidence import read_artifact_result

        record = self.citable(block.artifact_id)
        selected = read_artifact_result(self.reader, block.artifact_id, {"rows": [0, block.max_rows]},
                                        max_rows=block.max_rows)
        columns = block.columns or list(selected.columns)
        unknown = [c for c in columns if c not in selected.columns]
        if unknown:
            raise AssayError(REPORT_CITATION_INVALID, f"no column(s) {unknown}; the artifact has {selected.columns}")
        index = [selected.columns.index(c) for c in columns]
        lines = ["| " + " | ".join(_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
        for row in selected.rows or []:
            lines.append("| " + " | ".join(_cell(_plain(row[i])) for i in index) + " |")
        shown = len(selected.rows or [])
        total = selected.total_rows if selected.total_rows is not None else shown
        caption = (block.caption + " " if block.caption else "") + f"({shown} of {total} rows)"
        if not record.complete:
            caption += " (the artifact is incomplete: its capture stopped at the size limit)"
        return "\n".join(lines) + f"\n\n*{_escape_line(caption)}*{self.mark(block.artifact_id)}"

    def record(self, artifact_id: str) -> Any:
        if artifact_id not in self.records:
            from assay.kernel.evidence import get_record

            self.records[artifact_id] = get_record(self.reader, artifact_id)
        return self.records[artifact_id]

    def mark(self, artifact_id: str) -> str:
        number = self.sources.setdefault(artifact_id, len(self.sources) + 1)
        return f"[^{number}]"

    def footnote(self, artifact_id: str, number: int) -> str:
        record = self.record(artifact_id)
        origin = record.summary(200) if hasattr(record, "summary") else ""
        text = f"[^{number}]: artifact `{artifact_id}` ({record.kind}, sha256 `{record.sha256[:12]}`)"
        origin = origin.replace("`", "'")
        return text + (f": `{origin}`" if origin else "")


def _plain(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float):
        return repr(value) if value != int(value) or abs(value) >= 1e16 else f"{value:.1f}"
    return str(value)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _escape_line(text: str) -> str:
    return " ".join(str(text).split())


@tool
def render_report(document: ReportDocument, run: RunContext) -> ToolResult:
    """Write the final report as Markdown from cited artifacts, and keep it as evidence.

    Every number must be a citation ({"artifact_id", "path"}) of an artifact a
    previous tool call returned; tables cite an artifact id and columns.

    Args:
        document: The report: a title and blocks (heading, text with cited placeholders, number, table, image).
    """
    if run.artifacts is None:
        return ToolResult.fail("REPORT_NO_EVIDENCE", "this run captures no artifacts, so nothing can be cited",
                               "Start the run with capture enabled.")
    markdown = MarkdownRenderer().render(document, run.artifacts)
    from assay.kernel.evidence import capture_file

    record = capture_file(run.artifacts, data=markdown, name="report.md", media_type="text/markdown",
                          kind="report", provenance={"title": document.title})
    refs = [record.ref()] if record is not None else []
    return ToolResult.ok({"artifact_id": refs[0].artifact_id if refs else None},
                         content=markdown.decode("utf-8"), artifacts=refs)


@hookimpl
def register_report_renderers(register):
    register(MarkdownRenderer())


@hookimpl
def register_tools(register):
    register(render_report)
