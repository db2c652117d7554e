"""Citation resolution shared by every report renderer: a document in, resolved values out.

A renderer never reads evidence itself. It calls :func:`resolve_report`, which
checks each citation against the catalog (same run, a successful execution, a
Python run that set ``REPORT_RESULT``), reads the cited part through
:func:`assay.kernel.evidence.read_artifact_result` (SHA-256 verified) and
returns a :class:`ResolvedReport`: the blocks with their values already read
and formatted, the sources in order of first citation (so footnotes number the
same way in every format) and one provenance entry per rendered value. The
Markdown, HTML, JSON and PDF renderers format that one structure; none of them
can show a value the evidence does not hold.

A citation that cannot be read fails the render with ``REPORT_CITATION_INVALID``
(naming the block), never a report with a made-up value. Gaps are the report
pipeline's to set: a citation it marked ``unavailable`` is shown as the missing
mark ``--`` (its reason kept on the value), and each gap the document lists
(``ReportDocument.gaps``) is a warning; a missing value is never replaced by
another number.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

from assay import AssayError, RunContext
from assay.kernel.evidence import (
    ArtifactIncomplete,
    ArtifactSink,
    decode,
    get_record,
    read_artifact_result,
)
from assay.kernel.reports import (
    MISSING_MARK,
    ChartBlock,
    Citation,
    HeadingBlock,
    ImageBlock,
    NumberBlock,
    ReportDocument,
    TableBlock,
    TextBlock,
)

from .formats import check_format, format_value, is_number, plain_text
from .resolved import (
    ReportWarning,
    Resolved,
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
from .tables import resolve_table

REPORT_CITATION_INVALID = "REPORT_CITATION_INVALID"
REPORT_CITATION_OTHER_RUN = "REPORT_CITATION_OTHER_RUN"

MISSING_NOTE = (
    f"`{MISSING_MARK}` marks a missing value: the cited artifact holds NULL there "
    "(no value; not zero, not empty text)."
)


def resolve_report(document: Any, reader: Any) -> ResolvedReport:
    """Read every citation of ``document`` (a :class:`ReportDocument` or its dict) from ``reader``
    (an artifact sink, catalog, run or kernel). The same document over the same artifacts resolves
    the same way every time (no set or hash order anywhere). When ``reader`` is a run or its sink,
    every cited artifact must belong to that run or to an earlier run of its thread (a follow-up question's
    report cites the thread's evidence: :attr:`RunContext.thread`), else ``REPORT_CITATION_OTHER_RUN``."""
    return _Resolver(ReportDocument.coerce(document), reader).run()


def reader_run(reader: Any) -> str | None:
    """The run a report is written in: a run or a run's sink has one; a kernel or catalog has none."""
    if isinstance(reader, (ArtifactSink, RunContext)):
        return reader.run_id
    return None


def reader_runs(reader: Any) -> tuple[str, ...] | None:
    """The runs whose artifacts a report written in ``reader`` may cite: a run's thread and itself."""
    if isinstance(reader, RunContext):
        return reader.evidence_runs()
    run_id = reader_run(reader)
    return None if run_id is None else (*getattr(reader, "thread", ()), run_id)


class _Resolver:
    def __init__(self, doc: Any, reader: Any) -> None:
        self.doc, self.reader = doc, reader
        self.run_id = reader_run(reader)
        self.run_ids = reader_runs(reader)
        self.records: dict[str, Any] = {}
        self.out = ResolvedReport(title=doc.title, document=doc, reader=reader)
        self.index = 0

    def run(self) -> ResolvedReport:
        for name, fmt in self.doc.formats.items():
            try:
                check_format(fmt)
            except (TypeError, ValueError) as exc:
                raise AssayError(
                    REPORT_CITATION_INVALID,
                    f"formats[{name!r}] = {fmt!r} does not write a number: {exc}",
                    "Use percent, currency, thousands, integer, plain, or a Python format "
                    "spec such as ',.2f' or '$,.0f'.",
                ) from None
        for index, block in enumerate(self.doc.blocks):
            self.index = index
            try:
                self.out.blocks.append(self.block(block))
            except AssayError as exc:
                raise AssayError(
                    REPORT_CITATION_INVALID,
                    f"block {index} ({block.type}): {exc.code}: {exc.message}",
                    exc.hint
                    or "Cite an artifact id and selector that a tool call of this run returned.",
                    details={"block": index, "cause": exc.code},
                ) from exc
        self.out.warnings = [
            ReportWarning(g.block, g.kind, g.artifact_id, g.field, g.reason) for g in self.doc.gaps
        ]
        from .figures import (
            unbound_figures,  # here, not at the top: figures imports this module's blocks
        )

        self.out.unbound = unbound_figures(self.out)
        return self.out

    def block(self, block: Any) -> Resolved:
        if isinstance(block, HeadingBlock):
            return ResolvedHeading(self.index, block.text, block.level)
        if isinstance(block, TextBlock):
            return ResolvedText(self.index, self.text(block))
        if isinstance(block, NumberBlock):
            citation = Citation(
                artifact_id=block.artifact_id,
                path=block.path,
                format=block.format,
                unavailable=block.unavailable,
            )
            return ResolvedNumber(self.index, block.label, self.guarded_value(citation, "number"))
        if isinstance(block, TableBlock):
            return self.table(block)
        if isinstance(block, ImageBlock):
            return self.image(block)
        if isinstance(block, ChartBlock):
            return self.chart(block)
        raise AssayError(REPORT_CITATION_INVALID, f"unknown block {block!r}")

    # --- gaps (set by the report pipeline, never by the model) -----------------------

    def guarded_value(self, citation: Any, field_name: str) -> Value:
        """The value, or the missing mark when the pipeline marked the citation ``unavailable``
        (it could not be verified): shown as ``--`` with its reason, never as another number."""
        unavailable = citation.unavailable
        if unavailable is None:
            return self.value(citation, field_name)
        selector = {"path": citation.path}
        self.out.citations.append(
            {
                "block": self.index,
                "field": field_name,
                "artifact_id": citation.artifact_id,
                "selector": selector,
                "unavailable": unavailable,
                "rendered": MISSING_MARK,
            }
        )
        return Value(MISSING_MARK, selector=selector, degraded=True, reason=unavailable)

    # --- blocks ----------------------------------------------------------------------

    def text(self, block: Any) -> list[str | Value]:
        """The template's literals and values, each ``{name}`` read in the order it appears (so
        footnotes number the same way every time); ``{{`` and ``}}`` are literal braces."""
        try:
            pieces = list(string.Formatter().parse(block.text))
        except ValueError as exc:
            raise AssayError(
                REPORT_CITATION_INVALID,
                f"the text is not a valid template: {exc}",
                "Write placeholders as {name}; a literal brace as {{ or }}.",
            ) from None
        names = [name for _, name, _, _ in pieces if name is not None]
        bad = [n for n in names if not n.isidentifier()]
        if bad:
            raise AssayError(
                REPORT_CITATION_INVALID,
                f"placeholders must be names, not {bad}",
                "Write {north} and put its artifact_id and path in cite['north'].",
            )
        missing = [n for n in dict.fromkeys(names) if n not in block.cite]
        if missing:
            raise AssayError(
                REPORT_CITATION_INVALID,
                f"placeholders without a citation: {missing}",
                "Every {name} in the text needs a cite entry.",
            )
        parts: list[str | Value] = []
        for literal, name, spec, conversion in pieces:
            if literal:
                parts.append(literal)
            if name is None:
                continue
            if conversion:
                raise AssayError(
                    REPORT_CITATION_INVALID,
                    f"placeholder {{{name}!{conversion}}}: no conversions",
                    "Give a format in cite[name].format instead.",
                )
            citation = block.cite[name]
            if spec:
                citation = citation.model_copy(update={"format": spec})
            parts.append(self.guarded_value(citation, name))
        return parts

    def value(self, citation: Any, field_name: str) -> Value:
        record = self.citable(citation.artifact_id)
        selected = read_artifact_result(self.reader, citation.artifact_id, {"path": citation.path})
        raw = selected.value
        nulls = _nulls(raw)
        self.out.missing_used = self.out.missing_used or bool(nulls)
        plain = None if raw is None else decode(raw)
        name = value_name(
            record, citation.path
        )  # the document's format of that name applies to a number
        fmt = citation.format or (self.doc.formats.get(name or "") if is_number(plain) else None)
        if raw is None:
            text = MISSING_MARK
        else:
            try:
                text = format_value(plain, fmt, name)
            except (TypeError, ValueError) as exc:
                raise AssayError(
                    REPORT_CITATION_INVALID,
                    f"format {fmt!r} does not apply to {plain_text(plain)[:80]!r}: {exc}",
                    "Use a format for the value's type (',.2f' for numbers) or none.",
                ) from None
        selector = {"path": citation.path}
        self.cite(
            record,
            field_name,
            selector,
            null=raw is None,
            rendered=text,
            format=fmt,
            **({"exact": plain_text(plain)} if raw is not None else {}),
            **({"null_items": nulls} if raw is not None and nulls else {}),
        )
        return Value(text, plain, self.source(record), selector, null=raw is None)

    def table(self, block: Any) -> ResolvedTableBlock:
        record = self.citable(block.artifact_id)
        table = resolve_table(self.reader, block, record)
        rows, nulls = [], 0
        for row in table.rows:
            nulls += sum(value is None for value in row)
            rows.append([None if value is None else decode(value) for value in row])
        self.out.missing_used = self.out.missing_used or nulls > 0
        formats = {c: self.doc.formats[c] for c in table.columns if c in self.doc.formats}
        self.cite(
            record,
            None,
            table.selector,
            rows_shown=len(rows),
            null_cells=nulls,
            **({"formats": formats} if formats else {}),
        )
        return ResolvedTableBlock(
            self.index,
            table.columns,
            rows,
            len(rows),
            table.total_rows,
            table_caption(block, table),
            block.caption,
            self.source(record),
            table.selector,
            complete=record.complete,
            empty=not rows,
            null_cells=nulls,
            formats=formats,
        )

    def chart(self, block: Any) -> ResolvedChart:
        record = self.citable(block.artifact_id)
        rows_of = _ChartRows(block)
        table = resolve_table(self.reader, rows_of, record, max_chars=_CHART_MAX_CHARS)
        rows = [[None if v is None else decode(v) for v in row] for row in table.rows]
        nulls = sum(v is None for row in rows for v in row)
        self.out.missing_used = self.out.missing_used or nulls > 0
        selector = dict(table.selector, chart=block.chart, x=block.x, y=block.y)
        formats = {c: self.doc.formats[c] for c in (block.x, block.y) if c in self.doc.formats}
        self.cite(
            record,
            None,
            selector,
            rows_shown=len(rows),
            null_cells=nulls,
            **({"formats": formats} if formats else {}),
        )
        caption = table_caption(rows_of, table)
        return ResolvedChart(
            self.index,
            block.chart,
            block.x,
            block.y,
            rows,
            table.total_rows,
            caption,
            block.caption,
            self.source(record),
            selector,
            formats,
        )

    def image(self, block: Any) -> ResolvedImage:
        record = self.citable(block.artifact_id)
        self.cite(record, None, None)
        return ResolvedImage(
            self.index, block.caption, self.source(record), record.media_type, record.content_uri
        )

    # --- evidence ------------------------------------------------------------------

    def citable(self, artifact_id: str) -> Any:
        """The record, if it may be cited: a failed execution or a Python run that
        assigned no REPORT_RESULT holds no figures, so citing it is refused; so is
        another run's artifact when the report is written in a run."""
        record = self.record(artifact_id)
        if self.run_ids is not None and record.run_id not in self.run_ids:
            raise AssayError(
                REPORT_CITATION_OTHER_RUN,
                f"artifact {artifact_id} belongs to run {record.run_id}, not to this report's run {self.run_id} "
                "or its thread",
                "A report cites only evidence its own run (or its thread's earlier runs) produced. To use an earlier run's result, bring it "
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
            raise ArtifactIncomplete(
                artifact_id,
                f"a {record.kind} artifact whose content was not kept whole",
                record.incomplete_note(),
            )
        return record

    def record(self, artifact_id: str) -> Any:
        if artifact_id not in self.records:
            self.records[artifact_id] = get_record(self.reader, artifact_id)
        return self.records[artifact_id]

    def source(self, record: Any) -> Source:
        sources = self.out.sources
        if record.artifact_id not in sources:
            sources[record.artifact_id] = Source(len(sources) + 1, record)
        return sources[record.artifact_id]

    def cite(
        self, record: Any, field_name: str | None, selector: dict[str, Any] | None, **extra: Any
    ) -> None:
        """Keep what this value was read from, so the report can be re-verified later."""
        entry: dict[str, Any] = {
            "block": self.index,
            "field": field_name,
            "artifact_id": record.artifact_id,
            "run_id": record.run_id,
            "kind": record.kind,
            "sha256": record.sha256,
            "selector": selector,
            "complete": record.complete,
        }
        entry.update(extra)
        self.out.citations.append(entry)


_CHART_MAX_CHARS = (
    4_000_000  # up to 5,000 points of two columns each; the rows shown are bounded by max_points
)


@dataclass
class _ChartRows:
    """A chart block seen as the table of its points (what :func:`.tables.resolve_table` reads)."""

    block: Any

    def __getattr__(self, name: str) -> Any:
        block = self.__dict__["block"]
        if name == "columns":
            return [block.x, block.y]
        if name == "max_rows":
            return block.max_points
        if name == "caption":
            return None
        return getattr(block, name)


def table_caption(block: Any, table: Any) -> str:
    """The block's caption and what is shown: "(10 of 300 rows, sorted by rate descending)", that the
    result is empty (never a table of zeros), or what an incomplete artifact kept."""
    caption = block.caption + " " if block.caption else ""
    record = table.record
    if not table.rows:
        what = (
            "no rows match the filter"
            if block.filter and table.total_rows
            else "no rows: the result is empty"
        )
        return caption + f"({what})"
    if record.complete or block.path is not None:
        return caption + f"({table.describe()})"
    returned = record.rows_returned
    of = (
        f"the query returned {returned}"
        if returned is not None
        else "the rows after them were not counted"
    )
    return caption + (
        f"({len(table.rows)} of the {table.total_rows} rows kept; {of}: "
        "the artifact is INCOMPLETE, its capture stopped at the size limit)"
    )


def _nulls(value: Any) -> int:
    """How many NULLs ``value`` is or holds (a whole row or object is cited as a list or dict)."""
    if value is None:
        return 1
    if isinstance(value, (list, tuple)):
        return sum(map(_nulls, value))
    if isinstance(value, dict):
        return sum(map(_nulls, value.values()))
    return 0


def value_name(record: Any, path: Any) -> str | None:
    """The column or key a cited value was read from (what its default format goes by): the last name
    in ``path`` (``[0, "revenue"]``, ``"0.revenue"``, ``"summary.total"``), or the column a tabular
    artifact has at a numeric position (``[0, 1]``)."""
    steps = (
        path
        if isinstance(path, list)
        else [p for p in str(path).split(".") if p]
        if path is not None
        else []
    )
    for step in reversed(steps):
        if isinstance(step, str) and not step.lstrip("-").isdigit() and ":" not in step:
            return step
    if len(steps) >= 2 and getattr(record, "is_tabular", False):
        columns, column = list(record.columns or []), steps[1]
        if str(column).lstrip("-").isdigit() and -len(columns) <= int(column) < len(columns):
            return columns[int(column)]
    return None
