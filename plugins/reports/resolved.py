"""What a report renderer gets: the resolved blocks, their values and the sources they came from.

:func:`.resolve.resolve_report` builds a :class:`ResolvedReport`; the
Markdown, HTML, JSON and PDF renderers only format it. Every value here was
read from a verified artifact (or marked missing with its reason).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.kernel.evidence import open_verified_content
from assay.kernel.reports import MISSING_MARK

from .formats import format_value, is_number, plain_text


@dataclass
class Source:
    """One cited artifact, numbered in order of first citation (footnote ``[^number]``)."""

    number: int
    record: Any  # an ArtifactRecord

    @property
    def artifact_id(self) -> str:
        return self.record.artifact_id

    @property
    def sha256(self) -> str:
        return self.record.sha256

    @property
    def kind(self) -> str:
        return self.record.kind

    @property
    def complete(self) -> bool:
        return self.record.complete

    def origin(self, width: int = 200) -> str:
        """One line of the SQL or code (or file name) that produced the artifact."""
        return self.record.summary(width) if hasattr(self.record, "summary") else ""

    def code(self) -> str:
        """The whole SQL or code that produced the artifact, as written ("" for a file or a search)."""
        provenance = getattr(self.record, "provenance", None) or {}
        return str(provenance.get("sql") or provenance.get("code") or "").strip()

    @property
    def language(self) -> str:
        """``sql`` or ``python``: what :meth:`code` is written in ("" when there is none)."""
        provenance = getattr(self.record, "provenance", None) or {}
        return "sql" if provenance.get("sql") else "python" if provenance.get("code") else ""


@dataclass
class Value:
    """One cited value, read and formatted. ``value`` is the decoded Python value (``None`` for NULL);
    ``text`` is what every renderer shows. A degraded value (``unavailable``) has no source."""

    text: str
    value: Any = None
    source: Source | None = None
    selector: dict[str, Any] | None = None
    null: bool = False
    degraded: bool = False
    reason: str = ""

    @property
    def numeric(self) -> bool:
        return isinstance(self.value, (int, float)) and not isinstance(self.value, bool)

    @property
    def exact(self) -> str:
        """The value exactly as stored (what the provenance keeps beside the shown ``text``)."""
        return plain_text(self.value)


@dataclass
class ReportWarning:
    """A gap in the report: a value shown as ``--`` or a chart left out, and why."""

    block: int
    kind: str  # value, chart, table
    artifact_id: str | None
    field: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "block": self.block,
            "kind": self.kind,
            "artifact_id": self.artifact_id,
            "field": self.field,
            "reason": self.reason,
        }


@dataclass
class ResolvedHeading:
    index: int
    text: str
    level: int
    type: str = "heading"


@dataclass
class ResolvedText:
    """Literal strings and cited :class:`Value` objects, in the order of the template."""

    index: int
    parts: list[str | Value]
    type: str = "text"


@dataclass
class ResolvedNumber:
    index: int
    label: str
    value: Value
    type: str = "number"


@dataclass
class ResolvedTableBlock:
    """The rows a table block shows (filter, sort, limit applied by :mod:`.tables`), decoded
    (``None`` is NULL). ``caption`` is the block's caption with what is shown ("10 of 300 rows,
    sorted by rate descending"), or says the result is empty; ``note`` is set for an incomplete artifact."""

    index: int
    columns: list[str]
    rows: list[list[Any]]
    shown: int
    total: int | None
    caption: str
    user_caption: str | None
    source: Source
    selector: dict[str, Any]
    complete: bool = True
    empty: bool = False
    null_cells: int = 0
    formats: dict[str, str] = field(default_factory=dict)  # the document's formats, by column name
    type: str = "table"

    def text(self, value: Any, column: str) -> str:
        """A cell as every renderer writes it: the column's format (from the document) for a number,
        else the default for its type and the column's name (:mod:`.formats`)."""
        return cell_text(value, column, self.formats)


@dataclass
class ResolvedImage:
    index: int
    caption: str
    source: Source  # an image is shown from its cited artifact only
    media_type: str = ""
    content_uri: str = ""
    degraded: bool = False
    reason: str = ""
    type: str = "image"


@dataclass
class ResolvedChart:
    """The points of a chart block: ``rows`` are ``[x, y]`` pairs, decoded (``None`` is NULL), after
    the block's filter, sort and ``max_points``. ``caption`` says what is plotted ("300 of 300 rows")."""

    index: int
    chart: str  # bar, line, scatter
    x: str
    y: str
    rows: list[list[Any]]
    total: int | None
    caption: str
    user_caption: str
    source: Source
    selector: dict[str, Any]
    formats: dict[str, str] = field(default_factory=dict)
    type: str = "chart"

    def table(self, max_rows: int) -> ResolvedTableBlock:
        """The fallback where a format cannot draw: the first ``max_rows`` points as a table."""
        shown = self.rows[:max_rows]
        what = f"{self.chart} chart of {self.y} by {self.x}, shown as a table"
        if len(shown) < len(self.rows):
            what += f": the first {len(shown)} of its {len(self.rows)} points"
        inner = (
            self.caption[1:-1]
            if self.caption.startswith("(") and self.caption.endswith(")")
            else self.caption
        )
        caption = (self.user_caption + " " if self.user_caption else "") + f"({what}; {inner})"
        return ResolvedTableBlock(
            self.index,
            [self.x, self.y],
            shown,
            len(shown),
            self.total,
            caption,
            self.user_caption,
            self.source,
            self.selector,
            empty=not shown,
            null_cells=sum(v is None for row in shown for v in row),
            formats=self.formats,
        )


Resolved = (
    ResolvedHeading
    | ResolvedText
    | ResolvedNumber
    | ResolvedTableBlock
    | ResolvedImage
    | ResolvedChart
)


@dataclass
class ResolvedReport:
    """Everything a renderer formats. ``citations`` has one entry per rendered value (artifact id,
    run, selector, SHA-256...), the provenance a report keeps so it can be re-verified later."""

    title: str
    document: Any  # the ReportDocument
    blocks: list[Resolved] = field(default_factory=list)
    sources: dict[str, Source] = field(default_factory=dict)
    citations: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[ReportWarning] = field(default_factory=list)
    missing_used: bool = False
    reader: Any = None
    unbound: list[Any] = field(
        default_factory=list
    )  # figures written in the prose (.figures.UnboundFigure)

    def image_bytes(self, image: ResolvedImage) -> bytes:
        """The image's exact stored bytes, after a hash check."""
        _, content = open_verified_content(self.reader, image.source.artifact_id)
        return content if isinstance(content, bytes) else content.read_bytes()


def cell_text(value: Any, column: str, formats: dict[str, str]) -> str:
    """A table cell: the column's format for a number (text in a formatted column is written as stored),
    else the default for the value's type and the column's name."""
    if value is None:
        return MISSING_MARK
    return format_value(value, formats.get(column) if is_number(value) else None, column)
