"""The writer's figures in prose: found in a submitted document, refused once, then kept flagged.

A figure written in a report's title, text, headings, labels or captions
instead of cited (:mod:`assay.plugins.reports.figures`) was read from
nowhere. The first submission that has any is refused with
``REPORT_FIGURE_UNBOUND``, naming each figure and where it is, so the writer
can bind it (a ``{name}`` placeholder with its citation) or remove it. After
that chance the report is stored, formal or not as before, but flagged: a
warning names each figure, the HTML page marks it, the outcome carries them
(``unbound_figures``, so the run is ``answered_unverified`` at best) and
``assay reports verify`` fails it.
"""

from __future__ import annotations

from typing import Any

from assay import AssayError
from assay.plugins.reports.resolve import resolve_report

from .errors import REPORT_FIGURE_UNBOUND

FIGURE_CHANCES = 1  # refusals before a document with figures in its prose is kept, flagged


def prose_figures(document: Any, reader: Any) -> list[Any]:
    """The figures ``document``'s prose states without a citation (``UnboundFigure`` objects)."""
    return resolve_report(document, reader).unbound


def unbound_error(figures: list[Any]) -> AssayError:
    listed = "; ".join(f.describe() for f in figures)
    return AssayError(
        REPORT_FIGURE_UNBOUND,
        f"the report writes {len(figures)} figure(s) in its prose instead of citing them: {listed}",
        "Write each figure as a {name} placeholder with its citation in cite (artifact_id and path), "
        "or remove it. Submitted again with figures in the prose, the report is kept but flagged as "
        "not verified.",
    )
