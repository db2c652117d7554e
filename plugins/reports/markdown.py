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

from assay.kernel.reports import (
    MISSING_MARK,
    Citation,
    HeadingBlock,
    ImageBlock,
    NumberBlock,
    ReportDocument,
    TableBlock,
    TextBlock,
)

from assay import AssayError, RunContext, ToolResult, hookimpl, tool

REPORT_CITATION_INVALID = "REPORT_CITATION_INVALID"
REPORT_CITATION_OTHER_RUN = "REPORT_CITATION_OTHER_RUN"

# MISSING_MARK (from assay.kernel.reports): how a cited NULL or an unverifiable value is shown, never a number


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
        render = _Render(ReportDocument.coerce(document), reader)
        return render.run().encode("utf-8"), render.citations


def _reader_run(reader: Any) -> str | None:
    """The run a report is written in: a run or a run's sink has one; a kernel or catalog has none."""
    from assay.kernel.evidence import ArtifactSink

    if isinstance(reader, (ArtifactSink, RunContext)):
        return reader.run_id
    return None


class _Render:
    def __init__(self, doc: Any, reader: Any) -> None:
        self.doc, self.reader = doc, reader
        self.run_id = _reader_run(reader)
        self.sources: dict[str, int] = {}  # artifact id -> footnote number, in order of first citation
        self.records: dict[str, Any] = {}
        self.citations: list[dict[str, Any]] = []
        self.missing_used = False
        self.index = 0

    def run(self) -> str:
        parts = [f"# {_escape_line(self.doc.title)}"]
        for index, block in enumerate(self.doc.blocks):
            self.index = index
            try:
                parts.append(self.block(block))
            except AssayError as exc:
                raise AssayError(
                    REPORT_CITATION_INVALID,
                    f"block {index} ({block.type}): {exc.code}: {exc.message}",
                    exc.hint or "Cite an artifact id and selector that a tool call of this run returned.",
                    details={"block": index, "cause": exc.code},
                ) from exc
        if self.doc.gaps:
            parts.append("## Gaps")
            parts.append("These parts could not be shown from verified evidence and were left out "
                         f"(a value shows `{MISSING_MARK}`):")
            parts.extend(f"- block {g.block} ({g.kind}{', ' + g.field if g.field else ''}"
                         f"{', artifact `' + g.artifact_id + '`' if g.artifact_id else ''}): {_escape_line(g.reason)}"
                         for g in self.doc.gaps)
        if self.sources:
            parts.append("## Sources")
            parts.extend(self.footnote(aid, n) for aid, n in self.sources.items())
            if self.missing_used:
                parts.append(f"`{MISSING_MARK}` marks a missing value: the cited artifact holds NULL there "
                             "(no value; not zero, not empty text).")
        return "\n\n".join(parts) + "\n"

    def block(self, block: Any) -> str:
        if isinstance(block, HeadingBlock):
            return "#" * block.level + " " + _escape_line(block.text)
        if isinstance(block, TextBlock):
            return self.text(block)
        if isinstance(block, NumberBlock):
            value = self.value(Citation(artifact_id=block.artifact_id, path=block.path, format=block.format,
                                        unavailable=block.unavailable), "number")
            return f"**{_escape_line(block.label)}:** {value}"
        if isinstance(block, TableBlock):
            return self.table(block)
        if isinstance(block, ImageBlock):
            record = self.citable(block.artifact_id)
            self.cite(record, None, None)
            return f"![{_escape_line(block.caption)}]({record.content_uri}){self.mark(block.artifact_id)}"
        raise AssayError(REPORT_CITATION_INVALID, f"unknown block {block!r}")

    def text(self, block: Any) -> str:
        """The text with each ``{name}`` filled, in the order they appear (so footnotes number the same way
        every time); ``{{`` and ``}}`` are literal braces."""
        try:
            pieces = list(string.Formatter().parse(block.text))
        except ValueError as exc:
            raise AssayError(REPORT_CITATION_INVALID, f"the text is not a valid template: {exc}",
                             "Write placeholders as {name}; a literal brace as {{ or }}.") from None
        names = [field for _, field, _, _ in pieces if field is not None]
        bad = [n for n in names if not n.isidentifier()]
        if bad:
            raise AssayError(REPORT_CITATION_INVALID, f"placeholders must be names, not {bad}",
                             "Write {north} and put its artifact_id and path in cite['north'].")
        missing = [n for n in dict.fromkeys(names) if n not in block.cite]
        if missing:
            raise AssayError(REPORT_CITATION_INVALID, f"placeholders without a citation: {missing}",
                             "Every {name} in the text needs a cite entry.")
        out: list[str] = []
        for literal, field, spec, conversion in pieces:
            out.append(literal)
            if field is None:
                continue
            if conversion:
                raise AssayError(REPORT_CITATION_INVALID, f"placeholder {{{field}!{conversion}}}: no conversions",
                                 "Give a format in cite[name].format instead.")
            citation = block.cite[field]
            if spec:
                citation = citation.model_copy(update={"format": spec})
            out.append(self.value(citation, field))
        return "".join(out)

    def citable(self, artifact_id: str) -> Any:
        """The record, if it may be cited: a failed execution or a Python run that
        assigned no REPORT_RESULT holds no figures, so citing it is refused; so is
        another run's artifact when the report is written in a run."""
        record = self.record(artifact_id)
        if self.run_id is not None and record.run_id != self.run_id:
            raise AssayError(
                REPORT_CITATION_OTHER_RUN,
                f"artifact {artifact_id} belongs to run {record.run_id}, not to this report's run {self.run_id}",
                "A report cites only evidence its own run produced. To use an earlier run's result, bring it "
                "into this run (re-run the query, or pass the id as an input to code_interpreter and assign "
                "REPORT_RESULT: the new artifact's provenance names its input).",
            )
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
        if not record.complete and not record.is_tabular:
            from assay.kernel.evidence import ArtifactIncomplete

            raise ArtifactIncomplete(artifact_id, f"a {record.kind} artifact whose content was not kept whole",
                                     record.incomplete_note())
        return record

    def value(self, citation: Any, field: str) -> str:
        from assay.kernel.evidence import decode, read_artifact_result

        if citation.unavailable is not None:  # a gap the pipeline recorded: shown as missing, never read
            self.citations.append({"block": self.index, "field": field, "artifact_id": citation.artifact_id,
                                   "selector": {"path": citation.path}, "unavailable": citation.unavailable,
                                   "rendered": MISSING_MARK})
            return MISSING_MARK
        record = self.citable(citation.artifact_id)
        selected = read_artifact_result(self.reader, citation.artifact_id, {"path": citation.path})
        value = selected.value
        nulls = _nulls(value)
        self.missing_used = self.missing_used or bool(nulls)
        if value is None:
            text = MISSING_MARK
        else:
            plain = decode(value)
            try:
                text = format(plain, citation.format) if citation.format else _plain(plain)
            except (TypeError, ValueError) as exc:
                raise AssayError(REPORT_CITATION_INVALID,
                                 f"format {citation.format!r} does not apply to {_plain(plain)[:80]!r}: {exc}",
                                 "Use a format for the value's type (',.2f' for numbers) or none.") from None
        self.cite(record, field, {"path": citation.path}, null=value is None, rendered=text,
                  format=citation.format, **({"null_items": nulls} if value is not None and nulls else {}))
        return f"{text}{self.mark(citation.artifact_id)}"

    def table(self, block: Any) -> str:
        from assay.kernel.evidence import decode

        from .tables import resolve_table

        record = self.citable(block.artifact_id)
        table = resolve_table(self.reader, block, record)
        lines = ["| " + " | ".join(_cell(c) for c in table.columns) + " |", "|" + "---|" * len(table.columns)]
        nulls = 0
        for row in table.rows:
            cells = []
            for value in row:
                if value is None:
                    nulls += 1
                    cells.append(MISSING_MARK)
                else:
                    cells.append(_cell(_plain(decode(value))))
            lines.append("| " + " | ".join(cells) + " |")
        self.missing_used = self.missing_used or nulls > 0
        caption = block.caption + " " if block.caption else ""
        if not table.rows:  # an empty result is "no rows", never a table of zeros
            what = ("no rows match the filter" if block.filter and table.total_rows
                    else "no rows: the result is empty")
            lines = [f"*{_escape_line(caption + '(' + what + ')')}*"]
            caption = None
        elif record.complete or block.path is not None:
            caption += f"({table.describe()})"
        else:
            returned = record.rows_returned
            of = (f"the query returned {returned}" if returned is not None
                  else "the rows after them were not counted")
            caption += (f"({len(table.rows)} of the {table.total_rows} rows kept; {of}: "
                        "the artifact is INCOMPLETE, its capture stopped at the size limit)")
        self.cite(record, None, table.selector, rows_shown=len(table.rows), null_cells=nulls)
        body = "\n".join(lines)
        if caption is None:
            return body + self.mark(block.artifact_id)
        return body + f"\n\n*{_escape_line(caption)}*{self.mark(block.artifact_id)}"

    def cite(self, record: Any, field: str | None, selector: dict[str, Any] | None, **extra: Any) -> None:
        """Keep what this value was read from, so the report can be re-verified later."""
        entry: dict[str, Any] = {"block": self.index, "field": field, "artifact_id": record.artifact_id,
                                 "run_id": record.run_id, "kind": record.kind, "sha256": record.sha256,
                                 "selector": selector, "complete": record.complete}
        entry.update(extra)
        self.citations.append(entry)

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
        text += f": `{origin}`" if origin else ""
        return text + (f" - {record.incomplete_note()}" if not record.complete else "")


def _nulls(value: Any) -> int:
    """How many NULLs ``value`` is or holds (a whole row or object is cited as a list or dict)."""
    if value is None:
        return 1
    if isinstance(value, (list, tuple)):
        return sum(map(_nulls, value))
    if isinstance(value, dict):
        return sum(map(_nulls, value.values()))
    return 0


def _plain(value: Any) -> str:
    if value is None:
        return MISSING_MARK
    if isinstance(value, (list, tuple)):  # a whole row: its NULLs are the missing mark too, never "None"
        return "[" + ", ".join(map(_plain, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_plain(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return repr(value)
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
    markdown, citations = MarkdownRenderer().render_cited(document, run.artifacts)
    from assay.kernel.evidence import capture_file

    # Every rendered value's artifact id, selector and SHA-256 (and the document itself): the report can
    # be re-verified, or rendered again, later.
    provenance = {"title": document.title, "renderer": "markdown", "missing_mark": MISSING_MARK,
                  "citations": citations, "document": document.model_dump(mode="json")}
    record = capture_file(run.artifacts, data=markdown, name="report.md", media_type="text/markdown",
                          kind="report", provenance=provenance)
    refs = [record.ref()] if record is not None else []
    return ToolResult.ok({"artifact_id": refs[0].artifact_id if refs else None},
                         content=markdown.decode("utf-8"), artifacts=refs)


@hookimpl
def register_report_renderers(register):
    register(MarkdownRenderer())


@hookimpl
def register_tools(register):
    register(render_report)
