"""How a cited number is written: one function for prose, number blocks, table cells and chart tables.

A value is written by its format, in this order: the citation's own ``format``
(prose and number blocks), else the document's ``formats[name]`` (``name``:
the column or key the value was read from), else the default for its type and
name. So a value reads the same in a sentence as in a table, in every output
format; the provenance keeps the exact value beside what was shown.

A format is one of the names below or a Python format spec (``',.2f'``,
``'.1%'``), optionally after a currency sign (``'$,.2f'``, ``'€,.0f'``):

=============  =====================================================
``percent``    a fraction as a percentage, one decimal (0.0716 -> 7.2%)
``currency``   dollars and cents with separators ($2,091,112.70)
``thousands``  separators, every digit the value has (2,091,112.7)
``integer``    rounded to a whole number, with separators (2,091,113)
``plain``      exactly as stored, no separators (an id, a year)
=============  =====================================================

Defaults (no format given): a whole number gets thousands separators
(100,012), except under a name that is an identifier, a code or a year
(``store_id``, ``zip``, ``year``: written plain); a number under a money name
(``revenue``, ``amount``, ``price``, ``cost``...) gets two decimals and
separators (2,091,112.70, also a whole one); any other fraction two decimals
from 1 up (1,234.57) and four significant digits below 1 (0.1111). Text,
dates and booleans are written as stored.
"""

from __future__ import annotations

import decimal
import math
import re
from typing import Any

from assay.kernel.reports import MISSING_MARK

NAMED = {"percent": ".1%", "currency": "$,.2f", "thousands": ",", "integer": ",.0f", "plain": ""}
CURRENCY_SIGNS = "$€£¥"

_PLAIN_NAME = re.compile(
    r"(^|_)(id|ids|key|code|zip|zipcode|postcode|postal_code|phone|year|yr|fy)$"
)
_MONEY_NAME = re.compile(
    r"(^|_)(revenue|revenues|sales|amount|amounts|price|prices|cost|costs|spend|spent|profit|profits|income|"
    r"gmv|fee|fees|payment|payments|salary|salaries|basket|turnover|usd|eur|gbp|dollars|euros)($|_)"
)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def check_format(fmt: str) -> str:
    """``fmt`` if it writes a number; ``ValueError`` saying why not."""
    format_value(decimal.Decimal("1234.5"), fmt)
    format_value(1234.5, fmt)
    return fmt


def format_value(value: Any, fmt: str | None = None, name: str | None = None) -> str:
    """``value`` (decoded: ``Decimal`` for an exact decimal) as report text. ``fmt`` applies to a number
    (``TypeError``/``ValueError`` when it does not apply); without one, the default for its type and
    ``name``. NULL is the missing mark; text, dates and booleans are written as stored."""
    if value is None:
        return MISSING_MARK
    if fmt:
        return _formatted(value, NAMED.get(fmt, fmt))
    if not is_number(value):
        return plain_text(value)
    return default_text(value, name)


def default_text(value: Any, name: str | None = None) -> str:
    """A number written by default (see the module's docstring)."""
    words = (name or "").strip().lower().replace(" ", "_").replace("-", "_")
    if (
        isinstance(value, float)
        and not math.isfinite(value)
        or isinstance(value, decimal.Decimal)
        and not value.is_finite()
    ):
        return plain_text(value)
    if words and _PLAIN_NAME.search(words):
        return plain_text(value)
    if words and _MONEY_NAME.search(words):
        return format(value if not isinstance(value, int) else decimal.Decimal(value), ",.2f")
    if isinstance(value, int):
        return f"{value:,}"
    if value == 0 or abs(value) >= 1:
        return format(value, ",.2f")
    text = format(value, ".4g")
    if "e" in text.lower():  # tiny: as many decimals as four significant digits need, never 1e-07
        digits = -decimal.Decimal(repr(value) if isinstance(value, float) else value).adjusted() + 3
        text = format(value, f".{digits}f")
    return text


def _formatted(value: Any, spec: str) -> str:
    if spec == "":
        return plain_text(value)
    if not is_number(value):
        return format(
            value, spec
        )  # a text spec (">10") applies to text; a number spec raises ValueError
    sign = ""
    if spec[0] in CURRENCY_SIGNS:
        sign, spec = spec[0], spec[1:] or ",.2f"
    if isinstance(value, int) and spec[-1:] in "eEfFgG%":
        value = decimal.Decimal(value)  # exact, whatever its size
    text = format(value, spec)
    if sign:
        return "-" + sign + text[1:] if text.startswith("-") else sign + text
    return text


def plain_text(value: Any) -> str:
    """A decoded value exactly as stored: NULL is the missing mark (also inside a cited row or object),
    a whole float keeps its ``.0``, and a float is never rounded."""
    if value is None:
        return MISSING_MARK
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(plain_text, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {plain_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return repr(value)
        return repr(value) if value != int(value) or abs(value) >= 1e16 else f"{value:.1f}"
    return str(value)
