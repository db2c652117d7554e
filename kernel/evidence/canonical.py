"""The canonical JSON form of values: one spelling per value, so equal results hash equally.

Rules (documented in docs/evidence.md):

* ``None`` -> ``null``; ``bool`` -> ``true``/``false``; ``int`` -> a JSON integer of any size.
* finite ``float`` -> its shortest round-trip repr (``0.1``, ``1.0``, ``-0.0``, ``1e+100``);
  NaN and infinities -> ``{"$float": "NaN" | "Infinity" | "-Infinity"}``.
* ``Decimal``: integral values -> a JSON integer (``Decimal("15.00")`` == ``15``, as
  PostgreSQL's ``sum(bigint)`` and SQLite's ``sum(integer)`` agree); others ->
  ``{"$decimal": "<normalised digits>"}`` (``Decimal("2.50")`` -> ``"2.5"``);
  NaN/infinite decimals -> ``{"$decimal": "NaN" | "Infinity" | "-Infinity"}``.
* ``date`` -> ``"YYYY-MM-DD"``; ``datetime`` -> ISO 8601 with ``T`` and, when it has a zone,
  its UTC offset (``"2024-01-05T10:00:00+00:00"``); ``time`` likewise. Plain strings, so a
  date read from PostgreSQL or MariaDB equals the same date stored as text in SQLite.
* ``timedelta`` -> ``{"$duration": "PT<seconds>S"}`` (exact, normalised seconds).
* ``bytes``/``bytearray``/``memoryview`` -> ``{"$bytes": "<base64>"}``.
* ``UUID`` -> its canonical lower-case string.
* lists and tuples -> arrays; sets -> arrays sorted by their canonical text; mappings ->
  objects with string keys in sorted order.
* anything else -> ``{"$repr": "<repr>"}`` (never silently dropped).

Text is UTF-8 with no ASCII escaping, compact separators, no trailing spaces.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Mapping
from typing import Any, Iterator, Sequence

TAGS = ("$float", "$decimal", "$duration", "$bytes", "$repr")


def _decimal(d: decimal.Decimal) -> Any:
    if not d.is_finite():
        return {"$decimal": "NaN" if d.is_nan() else ("Infinity" if d > 0 else "-Infinity")}
    if d == d.to_integral_value():
        return int(d)
    text = format(d.normalize(), "f")
    return {"$decimal": text}


def _duration(td: dt.timedelta) -> dict[str, str]:
    micros = (td.days * 86_400 + td.seconds) * 1_000_000 + td.microseconds
    secs = decimal.Decimal(micros).scaleb(-6).normalize()
    text = format(secs, "f") if secs != 0 else "0"
    return {"$duration": f"PT{text}S"}


def _bytes(b: Any) -> dict[str, str]:
    return {"$bytes": base64.b64encode(bytes(b)).decode("ascii")}


def _datetime(v: dt.datetime) -> str:
    return v.isoformat()


_EXACT: dict[type, Any] = {
    decimal.Decimal: _decimal,
    dt.date: dt.date.isoformat,
    dt.datetime: _datetime,
    dt.time: dt.time.isoformat,
    dt.timedelta: _duration,
    bytes: _bytes,
    bytearray: _bytes,
    memoryview: _bytes,
    uuid.UUID: str,
}


def _fallback(o: Any) -> Any:
    """JSONEncoder ``default``: convert one non-native value (called by the C encoder)."""
    conv = _EXACT.get(type(o))
    if conv is not None:
        return conv(o)
    if isinstance(o, dt.datetime):  # subclasses, e.g. pandas.Timestamp
        return _datetime(dt.datetime.fromisoformat(o.isoformat()))
    if isinstance(o, dt.date):
        return o.isoformat()
    for base, fn in ((decimal.Decimal, _decimal), (dt.time, dt.time.isoformat),
                     (dt.timedelta, _duration), (uuid.UUID, str)):
        if isinstance(o, base):
            return fn(o)
    if isinstance(o, (bytes, bytearray, memoryview)):
        return _bytes(o)
    if isinstance(o, (set, frozenset)):
        return sorted((canonical_value(v) for v in o), key=dumps)
    if isinstance(o, Mapping):
        return {str(k): v for k, v in o.items()}
    item = getattr(o, "item", None)  # numpy / pandas scalars
    if callable(item) and getattr(o, "ndim", None) == 0:
        return item()
    tolist = getattr(o, "tolist", None)  # numpy arrays
    if callable(tolist):
        return tolist()
    if isinstance(o, Sequence) and not isinstance(o, str):
        return list(o)
    if hasattr(o, "__iter__") and hasattr(o, "__len__"):
        return list(o)
    return {"$repr": repr(o)}


def _float(f: float) -> Any:
    if math.isfinite(f):
        return f
    return {"$float": "NaN" if f != f else ("Infinity" if f > 0 else "-Infinity")}


def canonical_value(value: Any) -> Any:
    """``value`` as plain JSON-able Python (dicts, lists, str, int, finite float, bool, None)."""
    t = type(value)
    if value is None or t is str or t is int or t is bool:
        return value
    if t is float:
        return _float(value)
    if t is list or t is tuple:
        return [canonical_value(v) for v in value]
    if t is dict:
        return {str(k): canonical_value(v) for k, v in value.items()}
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, str):
        return str(value)
    return canonical_value(_fallback(value))


def _encoder(item_sep: str) -> json.JSONEncoder:
    return json.JSONEncoder(
        ensure_ascii=False, allow_nan=False, sort_keys=True, check_circular=False,
        separators=(item_sep, ":"), default=_fallback,
    )


_ENC = _encoder(",")
# Rows of a batch are encoded in one C call with a separator holding a raw
# control character; JSON escapes every control character inside strings, so
# "],\x1e[" can only be a boundary between arrays (checked by counting).
_MARK = "\x1e"
_BATCH = _encoder("," + _MARK)
_BOUNDARY = "]," + _MARK + "["


def dumps(value: Any) -> str:
    """The canonical JSON text of ``value``."""
    try:
        return _ENC.encode(value)
    except (ValueError, TypeError):
        return _ENC.encode(canonical_value(value))


def row_line(row: Any, columns: Sequence[str] = ()) -> str:
    """One row as a canonical JSON array (no newline)."""
    if isinstance(row, Mapping):
        row = [row.get(c) for c in columns]
    elif not isinstance(row, (list, tuple)):
        row = list(row)
    return dumps(row)


def rows_text(batch: list[Any], columns: Sequence[str] = ()) -> str:
    """Rows as canonical JSON lines, each ending in a newline.

    The fast path encodes the whole batch in one call of the C encoder and
    cuts it at row boundaries; a batch it cannot cut safely (nested arrays, a
    NaN, odd row types) is encoded row by row.
    """
    if not batch:
        return ""
    try:
        text = _BATCH.encode(batch)
    except (ValueError, TypeError):
        text = None
    if text is not None and text.startswith("[["):
        body = text[1:-1]
        if body.count(_BOUNDARY) == len(batch) - 1:
            return body.replace(_BOUNDARY, "]\n[").replace(_MARK, "") + "\n"
    return "".join(row_line(r, columns) + "\n" for r in batch)


def decode(value: Any) -> Any:
    """Turn tagged canonical values back into Python values (for readers and exports)."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if len(value) == 1:
            (key, inner), = value.items()
            if key == "$float" and isinstance(inner, str):
                return float(inner.replace("Infinity", "inf").replace("NaN", "nan"))
            if key == "$decimal" and isinstance(inner, str):
                return decimal.Decimal(inner)
            if key == "$bytes" and isinstance(inner, str):
                return base64.b64decode(inner)
            if key == "$duration" and isinstance(inner, str) and inner.startswith("PT"):
                return dt.timedelta(seconds=float(inner[2:-1]))
        return {k: decode(v) for k, v in value.items()}
    return value


def iter_lines(text: str) -> Iterator[str]:
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            return
        yield text[start:end]
        start = end + 1
