"""The values a run's evidence holds, read from the artifacts themselves, never from their previews.

Which values count (docs/agent.md, "Figure check"):

- a SQL result: every number of every row of the whole stored result, a
  text cell that is itself one figure (``"1,234.50"``, ``"7.16%"``), and its
  row count (and, for an incomplete capture, the rows the query returned);
- a Python run's ``REPORT_RESULT``: every number in it, at any depth, a text
  value that is itself one figure, and the length of every list in it
  (printed output is not a result);
- a knowledge search (the operator's own documents): its numbers and the
  figures written in its text;
- a number is *in percent* when its column or key is named as one (``pct``,
  ``percent``, ``rate``, ``ratio``, ``share``, ``margin``, ``growth``,
  ``change``...) or it was written as a percentage (``"7.16%"``): only such a
  value supports ``7.16%`` read as 7.16 (any value supports it as 0.0716);
- a number in a column or key named as an identifier (``id``, ``order_id``,
  ``storeId``, ``code``, ``sku``) is a label, not a quantity: it supports only
  a figure written as a label is (a whole number without separator,
  currency, scale or percent), so the 20,000 order ids of a listing do not
  support "12,345 orders";
- nothing else: failed executions, reports, charts and files hold no values
  here, and a figure written inside a data text cell ("All 60 promotions
  earned 999999 dollars", stored in a table) is not a value of the evidence.

Each artifact's content is hashed as it is read; :func:`artifact_numbers`
raises when it does not hash to its record, and the caller keeps none of that
artifact's values (it is listed as unreadable).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from assay.kernel.evidence.capture import PYTHON_DOC, TABULAR
from assay.kernel.evidence.errors import ArtifactFileMissing, ArtifactIntegrityFailed

from .extract import Figure, find_figures

TEXT_FIGURES = frozenset(
    {"knowledge"}
)  # kinds whose text is the operator's, so figures written in it count
_CHUNK = 1 << 20
_PERCENT_NAME = re.compile(
    r"pct|percent|perc|rate|ratio|share|margin|growth|change|yoy|mom|%", re.IGNORECASE
)
_ID_NAME = re.compile(r"(?:^|_)id$|^id_|(?:^|_)(?:code|sku|key|zip)$", re.IGNORECASE)
_CAMEL_ID = re.compile(r"[a-z]I[dD]$")
PLAIN, PERCENT, LABEL = (
    0,
    1,
    2,
)  # what an evidence number is: a quantity, one in percent, an identifier
Number = tuple[float, int]  # a value, and which of the three it is


def column_kind(name: str) -> int:
    """What the numbers of a column or key named ``name`` are: identifiers, percentages, or plain quantities."""
    if _ID_NAME.search(name) or _CAMEL_ID.search(name):
        return LABEL
    return PERCENT if _PERCENT_NAME.search(name) else PLAIN


def readable(record: Any) -> bool:
    """Whether an artifact holds values the figure check reads."""
    if record.status != "succeeded":
        return False
    return record.media_type == PYTHON_DOC or (
        record.media_type == TABULAR and record.kind in ("sql", *TEXT_FIGURES)
    )


def artifact_numbers(catalog: Any, record: Any) -> Iterator[Number]:
    """Every value of one artifact (see the module docstring), its content hashed as it is read.

    A consumer that stops early has not seen the hash checked: it must call
    :func:`assay.kernel.evidence.verify` before it trusts what it read.
    """
    text = record.kind in TEXT_FIGURES
    if record.media_type == PYTHON_DOC:
        doc = orjson.loads(b"".join(_verified_chunks(catalog, record)))
        if doc.get("result_set"):
            yield from values(doc.get("result"), text)
        return
    rows, kinds = 0, []
    for index, line in enumerate(_lines(_verified_chunks(catalog, record))):
        if index == 0:  # the header: {"columns": [...]}
            kinds = [column_kind(str(c)) for c in orjson.loads(line).get("columns") or []]
            continue
        if not line:
            continue
        rows += 1
        for i, cell in enumerate(orjson.loads(line)):
            kind = kinds[i] if i < len(kinds) else PLAIN
            if (
                type(cell) is int or type(cell) is float
            ):  # most cells: no walk (orjson gives finite floats only)
                yield float(cell), kind
            else:
                yield from values(cell, text, kind)
    yield float(rows), PLAIN
    returned = record.rows_returned
    if isinstance(returned, int) and returned != rows:
        yield float(returned), PLAIN


def values(value: Any, text_figures: bool = False, kind: int = PLAIN) -> Iterator[Number]:
    """The numbers a canonical JSON value holds (tagged decimals included; booleans are not numbers),
    each with its kind (``kind``, or the kind the key it is under names)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        number = float(value)
        if math.isfinite(number):
            yield number, kind
    elif isinstance(value, str):
        yield from string_numbers(value, text_figures, kind)
    elif isinstance(value, list):
        yield float(len(value)), PLAIN
        for item in value:
            yield from values(item, text_figures, kind)
    elif isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("$decimal"), str):
            try:
                number = float(Decimal(value["$decimal"]))
            except InvalidOperation:
                return
            if math.isfinite(number):
                yield number, kind
            return
        for key, item in value.items():
            yield from values(item, text_figures, column_kind(key) if kind == PLAIN else kind)


def string_numbers(text: str, text_figures: bool = False, kind: int = PLAIN) -> Iterator[Number]:
    """A text that is itself one figure (``"$4.2M"``), or with ``text_figures`` every figure written in it."""
    figures = find_figures(text)
    if not text_figures:
        stripped = text.strip()
        figures = figures if len(figures) == 1 and figures[0].text == stripped else []
        plain = _plain_number(stripped) if not figures and stripped else None
        if plain is not None:
            yield plain, kind
            return
    for figure in figures:
        yield from figure_values(figure, kind)


def figure_values(figure: Figure, kind: int = PLAIN) -> Iterator[Number]:
    amount = float(figure.value)
    yield amount, PERCENT if figure.percent else kind
    if figure.percent:
        yield amount / 100, PLAIN


def _plain_number(text: str) -> float | None:
    """A number spelled the way a database writes one as text (``1e-07``, ``2024``): a year is still a value."""
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _verified_chunks(catalog: Any, record: Any) -> Iterator[bytes]:
    h = hashlib.sha256()
    try:
        fh = catalog.store.open_content(record.sha256)
    except FileNotFoundError:
        raise ArtifactFileMissing(record.artifact_id, record.sha256) from None
    with fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
            yield chunk
    if h.hexdigest() != record.sha256:
        raise ArtifactIntegrityFailed(record.artifact_id, record.sha256, h.hexdigest())


def _lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    carry = b""
    for chunk in chunks:
        parts = (carry + chunk).split(b"\n")
        carry = parts.pop()
        yield from parts
    if carry:
        yield carry
