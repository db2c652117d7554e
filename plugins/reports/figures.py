"""Figures a report's prose states that are not bound citations.

Every number a report shows from data is a citation (``{name}`` in a text
block, a number block, a table or a chart), read from the evidence. A figure
*written* in the prose instead (a text block's literal text, a heading, the
title, a number block's label, a table, chart or image caption) was read
from nowhere: it is flagged. The figure rules are the answer check's
(:mod:`assay.plugins.figures.extract`: years, dates, ids, list markers are not
figures), plus one of the report's own: a count that a table or chart of the
same report shows ("the 10 highest stores" over 10 rows shown, or over a
result of 10 rows) is the rendered table's own figure.

Every renderer shows them (the HTML page marks each where it stands and in
its warnings box), the report pipeline warns and gives the writer one chance
to bind or remove them, and ``assay reports verify`` fails a formal report
that has any.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from assay.plugins.figures import Figure, find_figures

from .resolved import (
    ResolvedChart,
    ResolvedHeading,
    ResolvedImage,
    ResolvedNumber,
    ResolvedTableBlock,
    ResolvedText,
)


@dataclass(frozen=True)
class UnboundFigure:
    """One figure written in the prose: block ``block`` (-1: the title), in its ``where``, at ``start:end``
    of that text (for a text block: of its literal part number ``part``)."""

    block: int
    where: str  # title, text, heading, label, caption
    text: str
    start: int
    end: int
    part: int | None = None

    def describe(self) -> str:
        place = "the title" if self.block < 0 else f"block {self.block} ({self.where})"
        return f"{self.text} in {place}"

    def warning(self) -> str:
        return (
            f"figure {self.text} in {'the title' if self.block < 0 else f'block {self.block} ({self.where})'} "
            "is not a bound citation: it was not read from the evidence"
        )


def unbound_figures(report: Any) -> list[UnboundFigure]:
    """The figures of a :class:`~assay.plugins.reports.resolve.ResolvedReport`'s prose that are not
    bound citations, in the order they appear."""
    counts = _shown_counts(report.blocks)
    found = _in(report.title, -1, "title", counts)
    for block in report.blocks:
        if isinstance(block, ResolvedText):
            for n, part in enumerate(block.parts):
                if isinstance(part, str):
                    found += _in(part, block.index, "text", counts, part=n)
        elif isinstance(block, ResolvedHeading):
            found += _in(block.text, block.index, "heading", counts)
        elif isinstance(block, ResolvedNumber):
            found += _in(block.label, block.index, "label", counts)
        elif isinstance(block, (ResolvedTableBlock, ResolvedChart)):
            found += _in(block.user_caption or "", block.index, "caption", counts)
        elif isinstance(block, ResolvedImage):
            found += _in(block.caption or "", block.index, "caption", counts)
    return found


def spans(
    figures: list[UnboundFigure], block: int, where: str, part: int | None = None
) -> list[tuple[int, int]]:
    """Where the unbound figures of one piece of text are (for a renderer that marks them)."""
    return [
        (f.start, f.end)
        for f in figures
        if f.block == block and f.where == where and f.part == part
    ]


def _in(
    text: str, block: int, where: str, counts: set[Decimal], part: int | None = None
) -> list[UnboundFigure]:
    return [
        UnboundFigure(block, where, f.text, f.start, f.end, part)
        for f in find_figures(text)
        if not _shown_count(f, counts)
    ]


def _shown_count(figure: Figure, counts: set[Decimal]) -> bool:
    return (
        figure.scale == 1
        and not figure.percent
        and not figure.currency
        and not figure.negative
        and figure.decimals == 0
        and figure.number in counts
    )


def _shown_counts(blocks: list[Any]) -> set[Decimal]:
    """The rows each table or chart of the report shows, and the rows of its whole result."""
    counts: set[Decimal] = set()
    for block in blocks:
        if isinstance(block, ResolvedTableBlock):
            counts.add(Decimal(block.shown))
        elif isinstance(block, ResolvedChart):
            counts.add(Decimal(len(block.rows)))
        else:
            continue
        if block.total is not None:
            counts.add(Decimal(block.total))
    return counts
