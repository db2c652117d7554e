"""The figure check: is every figure a text states a value of the run's evidence, at its precision?

:func:`check_figures` finds the figures (:mod:`.extract`), sets aside those
the rules exempt (a figure the user's question states, by its number), then
reads the evidence (:mod:`.evidence`: the artifacts themselves, hash-checked)
until every remaining figure has a value inside one of its ranges, or the
evidence is exhausted. What is left is *unsupported*: each one is listed with
its position. An artifact that cannot be read or does not hash to its record
supports nothing (it is listed as unreadable).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from assay.kernel.errors import AssayError
from assay.kernel.log import get_logger

from .extract import Figure, find_figures

log = get_logger("assay.figures")
ARTIFACT_ID = re.compile(r"\bart_[0-9a-f]{8,40}\b")
_NONE: frozenset[int] = frozenset()


@dataclass
class FigureCheck:
    """The outcome: every figure found, the exempt ones (and why), the unsupported ones."""

    figures: list[Figure] = field(default_factory=list)
    exempt: list[tuple[Figure, str]] = field(default_factory=list)
    unsupported: list[Figure] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)  # read for values
    unreadable: dict[str, str] = field(default_factory=dict)  # artifact id -> error code

    @property
    def ok(self) -> bool:
        return not self.unsupported

    def listing(self) -> str:
        """``999,999; $12.3M``: the unsupported figures as written, once each, in order."""
        return "; ".join(dict.fromkeys(f.text for f in self.unsupported))

    def to_dict(self) -> dict[str, Any]:
        """The run record's ``figures``: counts, each unsupported figure with its position."""
        return {
            "checked": len(self.figures),
            "exempt": len(self.exempt),
            "supported": len(self.figures) - len(self.exempt) - len(self.unsupported),
            "unsupported": [
                {
                    "text": f.text,
                    "start": f.start,
                    "end": f.end,
                    "value": str(f.value),
                    "percent": f.percent,
                }
                for f in self.unsupported
            ],
            "artifacts_read": len(self.artifacts),
            "unreadable": dict(self.unreadable),
        }


def check_figures(
    text: str, *, catalog: Any, artifact_ids: Iterable[str], question: str = ""
) -> FigureCheck:
    """Check ``text`` (an answer, or a report's prose) against the artifacts ``artifact_ids``.

    ``catalog`` may be ``None`` (no evidence store): then nothing is supported.
    """
    out = FigureCheck(figures=find_figures(text))
    asked = {f.key() for f in find_figures(question)}
    pending: list[Figure] = []
    for figure in out.figures:
        if figure.key() in asked:
            out.exempt.append((figure, "in the question"))
        else:
            pending.append(figure)
    supported = support(pending, catalog, artifact_ids, out)
    out.unsupported = [f for i, f in enumerate(pending) if i not in supported]
    return out


def support(
    figures: list[Figure], catalog: Any, artifact_ids: Iterable[str], out: FigureCheck | None = None
) -> set[int]:
    """The indexes of ``figures`` that some value of the artifacts supports."""
    out = out if out is not None else FigureCheck()
    if not figures or catalog is None:
        return set()
    from assay.kernel.evidence import verify

    from .evidence import artifact_numbers, readable

    ranges = _Ranges(figures)
    for artifact_id in reversed(list(dict.fromkeys(artifact_ids))):  # the newest evidence first
        record = catalog.get(artifact_id)
        if record is None:
            out.unreadable[artifact_id] = "ARTIFACT_NOT_FOUND"
            continue
        if not readable(record):
            continue
        found: set[int] = set()
        try:
            finished = True
            for number, kind in artifact_numbers(catalog, record):
                hits = ranges.containing(number, kind)
                if hits:
                    found |= hits
                    if ranges.remaining <= found:
                        finished = False
                        break
            if not finished:
                verify(
                    catalog, record
                )  # stopped early: the whole content still has to hash to its record
        except AssayError as exc:
            out.unreadable[artifact_id] = exc.code
            log.warning("figure_check_unreadable", artifact_id=artifact_id, code=exc.code)
            continue
        out.artifacts.append(artifact_id)
        ranges.settle(found)
        if not ranges.remaining:
            break
    return ranges.supported


def _accepts(figure: Figure, percent_only: bool) -> int:
    """Which kinds of evidence value (bits 1 << PLAIN, PERCENT, LABEL) may support one range of a figure:
    read as a percentage, only a value in percent; an identifier, only a figure written as a label is."""
    if percent_only:
        return 0b010
    label = (
        figure.decimals == 0
        and figure.scale == 1
        and not (figure.percent or figure.currency or figure.negative)
        and "," not in figure.text
    )
    return 0b111 if label else 0b011


class _Ranges:
    """The figures' ranges, sorted, so each evidence value is placed with a binary search."""

    def __init__(self, figures: list[Figure]) -> None:
        spans = sorted(
            (lo, hi, i, _accepts(f, percent_only))
            for i, f in enumerate(figures)
            for lo, hi, percent_only in f.intervals()
        )
        self.lows = [s[0] for s in spans]
        self.spans = spans
        self.widest = max((hi - lo for lo, hi, _, _ in spans), default=0.0)
        self.remaining = set(range(len(figures)))
        self.supported: set[int] = set()
        self.unsigned = {i for i, f in enumerate(figures) if not f.negative}

    def containing(self, number: float, kind: int = 0) -> set[int] | frozenset[int]:
        """The figures one evidence value of ``kind`` (:mod:`.evidence`: PLAIN, PERCENT, LABEL) supports."""
        hits: set[int] | None = None
        bit = 1 << kind
        for candidate in (number,) if number >= 0 else (number, -number):
            j = bisect.bisect_right(self.lows, candidate) - 1
            while j >= 0:
                lo, hi, i, accepts = self.spans[j]
                if candidate - lo > self.widest:
                    break
                if (
                    candidate <= hi
                    and accepts & bit
                    and i in self.remaining
                    and (candidate == number or i in self.unsigned)
                ):
                    hits = hits or set()
                    hits.add(i)
                j -= 1
        return hits or _NONE

    def settle(self, found: set[int]) -> None:
        self.supported |= found
        self.remaining -= found
