"""The report contract: the document a renderer receives, and the renderer protocol.

A document is a title and a list of blocks. Every value that comes from data
is a *citation*: an artifact id and a selector (``path`` for one value; for a
table, the rows' location, ``columns``, ``sort``, ``filter`` and ``max_rows``).
A renderer reads each citation through the evidence store, which verifies the
artifact's SHA-256, so a report can only show what the evidence holds. A
table's rows are selected by :func:`assay.plugins.reports.tables.resolve_table`
(shared by every renderer), so "the 10 highest" really is the 10 highest.

*Gaps* (controlled degradation) are set by the report pipeline, never by the
model: a value whose citation could not be verified carries ``unavailable``
(shown as :data:`MISSING_MARK`, never as another number) and each gap, also
an omitted chart or table, is listed in ``ReportDocument.gaps``. A renderer
must show both.

Renderers (``register_report_renderers``) satisfy :class:`ReportRenderer`;
the built-in ``markdown`` renderer is :mod:`assay.plugins.reports.markdown`.
The models are built on first validation (``defer_build``), so importing
this module costs about 3 ms instead of 7 and the markdown plugin imports
it at start-up without a lazy step of its own.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

MISSING_MARK = "--"
"""How a value that is missing (a cited NULL) or could not be verified is shown: never a number."""

_RESERVED = (
    "Set by the report pipeline when the value could not be verified; never set it yourself."
)


class Citation(BaseModel):
    """One value in an artifact: ``path`` is ``[row, column, key...]`` (or ``"0.total"``)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    artifact_id: str
    path: list[int | str] | str | int | None = None
    format: str | None = Field(
        default=None, description="A Python format spec such as ',.2f' or '.1%'."
    )
    unavailable: str | None = Field(default=None, description=_RESERVED)


class HeadingBlock(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    type: Literal["heading"] = "heading"
    text: str
    level: int = Field(default=2, ge=1, le=6)


class TextBlock(BaseModel):
    """Prose; ``{name}`` placeholders are filled from ``cite[name]``."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    type: Literal["text"] = "text"
    text: str
    cite: dict[str, Citation] = Field(default_factory=dict)


class NumberBlock(BaseModel):
    """A labelled figure read from an artifact."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    type: Literal["number"] = "number"
    label: str
    artifact_id: str
    path: list[int | str] | str | int
    format: str | None = None
    unavailable: str | None = Field(default=None, description=_RESERVED)


class SortKey(BaseModel):
    """One sort key of a table citation; rows whose value is NULL sort last either way."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    column: str
    descending: bool = False


FilterOp = Literal["eq", "ne", "lt", "le", "gt", "ge", "is_null", "not_null"]


class RowFilter(BaseModel):
    """Keep the rows whose ``column`` compares to ``value`` by ``op`` (``is_null``/``not_null`` take no value)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    column: str
    op: FilterOp
    value: str | int | float | bool | None = None


class TableBlock(BaseModel):
    """Rows of an artifact: filtered, then sorted, then the first ``max_rows``; ``columns`` picks and orders.

    A SQL artifact's rows are its result; a Python artifact's rows are the list of
    records at ``path`` in its REPORT_RESULT (e.g. ``"by_store"``). A heading or
    caption that claims an order ("highest", "top 10") needs a ``sort`` that applies it.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)
    type: Literal["table"] = "table"
    artifact_id: str
    path: list[int | str] | str | None = Field(
        default=None, description="For a Python artifact: where the list of rows is in its result."
    )
    columns: list[str] | None = None
    filter: list[RowFilter] = Field(default_factory=list, description="All must hold (AND).")
    sort: list[SortKey] = Field(
        default_factory=list, description="Applied after the filter, first key first."
    )
    max_rows: int = Field(
        default=20, ge=1, le=500, description="How many rows to show after filter and sort."
    )
    caption: str | None = None


class ImageBlock(BaseModel):
    """A chart or image artifact, linked by its content address."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    type: Literal["image"] = "image"
    artifact_id: str
    caption: str = ""


class ChartBlock(BaseModel):
    """A bar, line or scatter chart the renderer draws from rows of an artifact (``x`` against ``y``).

    The rows are selected like a table's (``path``, ``filter``, ``sort``, then the
    first ``max_points``); a format that cannot draw shows them as a table instead.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)
    type: Literal["chart"] = "chart"
    chart: Literal["bar", "line", "scatter"]
    artifact_id: str
    x: str
    y: str
    path: list[int | str] | str | None = Field(
        default=None, description="For a Python artifact: where the list of rows is in its result."
    )
    filter: list[RowFilter] = Field(default_factory=list, description="All must hold (AND).")
    sort: list[SortKey] = Field(
        default_factory=list, description="Applied after the filter, first key first."
    )
    max_points: int = Field(
        default=1000, ge=1, le=5000, description="How many rows to plot after filter and sort."
    )
    caption: str = ""


Block = Annotated[
    HeadingBlock | TextBlock | NumberBlock | TableBlock | ImageBlock | ChartBlock,
    Field(discriminator="type"),
]


class Gap(BaseModel):
    """A part of the report that could not be shown from verified evidence (set by the pipeline)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    block: int
    kind: Literal["value", "chart", "table"]
    artifact_id: str | None = None
    field: str | None = None
    reason: str


class ReportDocument(BaseModel):  # no docstring: it would become the tool schema's description
    model_config = ConfigDict(extra="forbid", defer_build=True)

    title: str
    blocks: list[Block] = Field(default_factory=list)
    formats: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "How the numbers of a column or key are written, in prose and tables alike: name -> 'percent', "
            "'currency', 'thousands', 'integer', 'plain' (an id, a year) or a Python format spec such as ',.2f' "
            "or '$,.0f'. Unset: separators for whole numbers, two decimals for money and values from 1, four "
            "significant digits below 1."
        ),
    )
    gaps: list[Gap] = Field(
        default_factory=list,
        description=(
            "Set by the report pipeline (what could not be verified and was left out); never set it yourself."
        ),
    )
    status: Literal["completed", "partial", "failed"] | None = Field(
        default=None,
        description=("Set by the report pipeline (the report's outcome); never set it yourself."),
    )
    draft: bool = Field(
        default=False,
        description=(
            "Set by the report pipeline (a draft, not the formal report); never set it yourself."
        ),
    )

    def reserved_fields_set(self) -> list[str]:
        """Where a submitted document sets what only the pipeline may (``gaps``, ``unavailable``,
        ``status``, ``draft``)."""
        found = ["gaps"] if self.gaps else []
        found += ["status"] if self.status is not None else []
        found += ["draft"] if self.draft else []
        for i, block in enumerate(self.blocks):
            if isinstance(block, NumberBlock) and block.unavailable is not None:
                found.append(f"blocks[{i}].unavailable")
            if isinstance(block, TextBlock):
                found += [
                    f"blocks[{i}].cite.{k}.unavailable"
                    for k, c in block.cite.items()
                    if c.unavailable is not None
                ]
        return found

    @classmethod
    def coerce(cls, document: Any) -> ReportDocument:
        return document if isinstance(document, cls) else cls.model_validate(document)


@runtime_checkable
class ReportRenderer(Protocol):
    """What ``register_report_renderers`` takes: turns a report document into output bytes.

    ``document`` is a :class:`ReportDocument` or its JSON form (a dict;
    :meth:`ReportDocument.coerce` accepts both). ``reader`` is what
    :func:`assay.kernel.evidence.read_artifact_result` reads from: an artifact
    sink, a catalog, a run or a kernel. A citation that cannot be read must
    fail the render (an :class:`~assay.kernel.errors.AssayError`), never
    produce a report with a made-up value.
    """

    name: str
    media_type: str

    def render(self, document: ReportDocument | dict[str, Any], reader: Any) -> bytes: ...
