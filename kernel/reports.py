"""The report contract: the document a renderer receives, and the renderer protocol.

A document is a title and a list of blocks. Every value that comes from data
is a *citation*: an artifact id and a selector (``path`` for one value,
``columns`` and ``rows`` for a table). A renderer reads each citation
through :func:`assay.kernel.evidence.read_artifact_result`, which verifies the
artifact's SHA-256, so a report can only show what the evidence holds.

Renderers (``register_report_renderers``) satisfy :class:`ReportRenderer`;
the built-in ``markdown`` renderer is :mod:`assay.plugins.reports.markdown`.
The models are built on first validation (``defer_build``), so importing
this module costs about 3 ms instead of 7 and the markdown plugin imports
it at start-up without a lazy step of its own.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol, Union, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class Citation(BaseModel):
    """One value in an artifact: ``path`` is ``[row, column, key...]`` (or ``"0.total"``)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    artifact_id: str
    path: list[int | str] | str | int | None = None
    format: str | None = Field(default=None, description="A Python format spec such as ',.2f' or '.1%'.")


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


class TableBlock(BaseModel):
    """Rows of a tabular artifact; ``columns`` picks and orders columns (default: all)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    type: Literal["table"] = "table"
    artifact_id: str
    columns: list[str] | None = None
    max_rows: int = Field(default=20, ge=1, le=500)
    caption: str | None = None


class ImageBlock(BaseModel):
    """A chart or image artifact, linked by its content address."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    type: Literal["image"] = "image"
    artifact_id: str
    caption: str = ""


Block = Annotated[Union[HeadingBlock, TextBlock, NumberBlock, TableBlock, ImageBlock], Field(discriminator="type")]


class ReportDocument(BaseModel):  # no docstring: it would become the tool schema's description
    model_config = ConfigDict(extra="forbid", defer_build=True)

    title: str
    blocks: list[Block] = Field(default_factory=list)

    @classmethod
    def coerce(cls, document: Any) -> "ReportDocument":
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
