"""Finding the figures a text states, and the values each one may stand for.

A *figure* is a number written as a quantity: ``1,234``, ``-3.5``, ``7.16%``,
``$4.2M``, ``€84.20``, ``12 million``, ``3.1bn``. Each keeps its position in
the text, the number as written, its scale (``K`` thousand, ``M``/``MM``/
``mn``/``million``, ``B``/``bn``/``billion``, ``trillion``), whether it is a
percentage, its sign and the decimals it is written with: the precision
:meth:`Figure.intervals` turns into the values it may stand for (``$4.2M``
is anything that rounds to 4.2 million: 4,150,000 to 4,250,000).

Not figures (the exemption rules of docs/agent.md, "Figure check"):

- digits inside a word or an identifier: artifact and run ids
  (``art_3159bbd8...``), ``Q3``, ``FY2024``, ``H1``, ``3rd``, ``10x``,
  ``v1.2``, hexadecimal digests; a label after ``#`` (``Seattle #1``);
- dates and times: ``2024-01-05``, ``2024-01``, ``05/01/2024``,
  ``March 5, 2024``, ``5 March``, ``March 2024``, ``10:30``;
- years: a plain whole number from 1900 to 2100 (no separator, sign,
  currency, scale or percent) after a word that introduces a year (``in``,
  ``since``, ``from``, ``to``, ``during``, ``fiscal``...), or not followed by
  a word (``revenue 2024: ...``, ``(2023)``); ``2024 orders`` is a count;
- list markers at the start of a line (``1.``, ``2)``), footnote marks
  (``[1]``, ``[^2]``) and the digits of URLs.

Ranges share their unit: in ``10-20%`` and ``$4-5M`` both ends are
percentages or millions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

SCALES = {
    "k": 1_000,
    "K": 1_000,
    "thousand": 1_000,
    "M": 1_000_000,
    "MM": 1_000_000,
    "mn": 1_000_000,
    "million": 1_000_000,
    "B": 1_000_000_000,
    "bn": 1_000_000_000,
    "billion": 1_000_000_000,
    "trillion": 1_000_000_000_000,
}
_CURRENCY = r"US\$|[$€£¥]|(?:USD|EUR|GBP|JPY|CHF|CAD|AUD)\s?"
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+"
_FIGURE = re.compile(
    rf"(?P<cur>{_CURRENCY})?(?P<num>{_NUMBER})"
    r"(?P<scale>(?:bn|mn|MM|[kKMB])(?![A-Za-z])|\s?(?:bn|mn)\b|\s(?:thousand|million|billion|trillion)s?\b)?"
    r"(?P<pct>\s?%|\s(?:percent|per\s?cent)\b)?"
)
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_MASKS = [
    re.compile(p)
    for p in (
        r"\b[A-Za-z][\w+.-]*://\S+",  # URLs
        r"\b\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?!\d|\.\d)",
        r"\b\d{4}-\d{2}(?!\d|\.\d)",
        r"\b\d{4}/\d{1,2}(?:/\d{1,2})?(?!\d|\.\d)",
        r"\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}(?!\d|\.\d)",
        r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?[AaPp]\.?[Mm]\.?)?(?![\d])",
        rf"\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?(?!\d)",
        rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b\.?(?:,?\s+\d{{4}})?(?!\d)",
        rf"\b{_MONTH}\.?,?\s+\d{{4}}(?!\d)",
        r"(?m)^[ \t]*(?:[-*+][ \t]+)?#*[ \t]*\d{1,3}[.)](?=\s)",  # list markers
        r"\[\^?\d+\]",  # footnote marks
    )
]
_YEAR_BEFORE = {
    "in",
    "since",
    "of",
    "from",
    "to",
    "until",
    "till",
    "through",
    "by",
    "during",
    "before",
    "after",
    "between",
    "and",
    "year",
    "years",
    "fy",
    "fiscal",
    "for",
    "early",
    "late",
    "mid",
    "end",
    "start",
    "q1",
    "q2",
    "q3",
    "q4",
    "h1",
    "h2",
    "vs",
    "versus",
    "or",
    "than",
    "over",
    "each",
    "per",
}
_RANGE = re.compile(r"\s?(?:[-–—]|to|and)\s?$")


@dataclass(frozen=True)
class Figure:
    """One figure as written, at ``text[start:end]``."""

    text: str
    start: int
    end: int
    number: Decimal  # the digits as written, unsigned, before the scale: 4.2 in "$4.2M"
    decimals: int  # digits written after the point
    scale: int = 1
    percent: bool = False
    negative: bool = False
    currency: str = ""

    @property
    def value(self) -> Decimal:
        """The amount it states: ``-$4.2M`` is -4,200,000; ``7.16%`` is 7.16."""
        amount = self.number * self.scale
        return -amount if self.negative else amount

    def intervals(self) -> list[tuple[float, float, bool]]:
        """Every range of values the figure may stand for at the precision it is written with, and whether
        only a value known to be a percentage may fall in it.

        ``1,234`` is [1233.5, 1234.5]; ``$4.2M`` is [4,150,000, 4,250,000]; ``7.16%`` is
        [0.07155, 0.07165] (a fraction), or [7.155, 7.165] for a value already in percent (a column or
        key named as a rate, share, percent..., or a text such as "7.16%"). A negative figure's ranges
        are negative; an unsigned one is matched against magnitudes.
        """
        half = Decimal(5).scaleb(-(self.decimals + 1))
        low, high = (self.number - half) * self.scale, (self.number + half) * self.scale
        ranges = [(low, high, self.percent)]
        if self.percent:
            ranges.append((low / 100, high / 100, False))
        out = []
        for low_d, high_d, percent_only in ranges:
            lo, hi = float(low_d), float(high_d)
            pad = (
                max(abs(lo), abs(hi)) * 1e-9
            )  # float rounding at the edges (0.07155 is 0.0715499...)
            lo, hi = lo - pad, hi + pad
            out.append((-hi, -lo, percent_only) if self.negative else (lo, hi, percent_only))
        return out

    def key(self) -> Decimal:
        """The number as written (unsigned, unscaled): what the user's question exempts."""
        return self.number


def find_figures(text: str) -> list[Figure]:
    """The figures ``text`` states, in order (see the module docstring for what is not one)."""
    if not text:
        return []
    masked = mask(text)
    found: list[Figure] = []
    for match in _FIGURE.finditer(masked):
        figure = _figure(masked, text, match)
        if figure is None:
            continue
        if found and figure.start >= found[-1].end:
            figure = _share_range_unit(text, found, figure)
        found.append(figure)
    return found


def mask(text: str) -> str:
    """``text`` with dates, times, URLs, list markers and footnote marks blanked (same length)."""
    chars = list(text)
    for pattern in _MASKS:
        for m in pattern.finditer(text):
            chars[m.start() : m.end()] = " " * (m.end() - m.start())
    return "".join(chars)


def _figure(masked: str, text: str, m: re.Match[str]) -> Figure | None:
    start, end = m.start(), m.end()
    before = masked[start - 1] if start else " "
    after = masked[end] if end < len(masked) else " "
    if (
        before.isalnum()
        or before in "_#@"
        or (before in ".," and start > 1 and masked[start - 2].isdigit())
    ):
        return None  # inside a word, an id, a version, or a label such as "#1"
    if (
        after.isalnum()
        or after == "_"
        or (after in ".,:" and end + 1 < len(masked) and masked[end + 1].isdigit())
    ):
        return None  # "3rd", "10x", "1.2.3", "1,23"
    raw = m.group("num")
    try:
        number = Decimal(raw.replace(",", ""))
    except InvalidOperation:
        return None
    decimals = len(raw.partition(".")[2])
    word = (m.group("scale") or "").strip()
    scale = SCALES.get(word, SCALES.get(word[:-1], 1)) if word else 1
    percent = bool(m.group("pct"))
    currency = (m.group("cur") or "").strip()
    negative = False
    sign = start - 1
    if sign >= 0 and masked[sign] in "-−" and (sign == 0 or masked[sign - 1] in " \t\n(:[=/~≈"):
        negative, start = True, sign
    if not (scale > 1 or percent or currency or negative or decimals or "," in raw) and _is_year(
        masked, m
    ):
        return None
    return Figure(
        text=text[start:end].strip(),
        start=start,
        end=end,
        number=number,
        decimals=decimals,
        scale=scale,
        percent=percent,
        negative=negative,
        currency=currency,
    )


def _is_year(masked: str, m: re.Match[str]) -> bool:
    raw = m.group("num")
    if len(raw) != 4 or not 1900 <= int(raw) <= 2100:
        return False
    words = re.findall(r"[A-Za-z]+|\S", masked[max(0, m.start() - 24) : m.start()])
    if words and words[-1].lower() in _YEAR_BEFORE:
        return True
    rest = masked[m.end() : m.end() + 24]
    return not re.match(r"\s*[A-Za-z]", rest) or bool(
        re.match(r"\s*(?:to|and|vs|versus|or)\s+\d{4}\b", rest)
    )


def _share_range_unit(text: str, found: list[Figure], figure: Figure) -> Figure:
    """In ``10-20%`` or ``$4-5M`` the first end takes the unit of the second (and the second the currency of
    the first)."""
    first = found[-1]
    between = text[first.end : figure.start]
    if (
        len(between) > 6
        or not _RANGE.search(between)
        or first.negative
        and figure.negative
        or "," in first.text
        or first.number > figure.number
    ):
        return figure
    if between.strip() in "-–—" and figure.negative:  # "10-20": the dash is the range's, not a sign
        figure = _replace(
            figure,
            negative=False,
            start=figure.start + 1,
            text=text[figure.start + 1 : figure.end].strip(),
        )
    if first.scale == 1 and not first.percent and (figure.scale > 1 or figure.percent):
        found[-1] = _replace(first, scale=figure.scale, percent=figure.percent)
    if first.currency and not figure.currency:
        figure = _replace(figure, currency=first.currency)
    return figure


def _replace(figure: Figure, **changes: Any) -> Figure:
    from dataclasses import replace

    return replace(figure, **changes)
