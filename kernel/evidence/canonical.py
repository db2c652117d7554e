"""The canonical JSON form of values: one spelling per value, so equal results hash equally.

Rules (documented in docs/evidence.md):

* ``None`` -> ``null``; ``bool`` -> ``true``/``false``; ``int`` -> a JSON integer of any size.
* finite ``float`` -> the shortest digits that round-trip, as orjson writes them
  (``0.1``, ``1.0``, ``-0.0``, ``1e+16``, ``0.00001``, ``1e-7``);
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
* numpy/pandas scalars and arrays -> their Python values; a DataFrame -> a list of row objects.
* anything else -> ``{"$repr": "<repr>"}`` (never silently dropped).

Text is UTF-8 (control characters escaped), compact separators, object keys sorted.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import math
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from itertools import chain, repeat
from operator import is_not
from typing import Any

import orjson

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
    fn: Any  # the converter of the matching type
    for base, fn in (
        (decimal.Decimal, _decimal),
        (dt.time, dt.time.isoformat),
        (dt.timedelta, _duration),
        (uuid.UUID, str),
    ):
        if isinstance(o, base):
            return fn(o)
    if isinstance(o, (bytes, bytearray, memoryview)):
        return _bytes(o)
    if isinstance(o, (set, frozenset)):
        return sorted((canonical_value(v) for v in o), key=dumps)
    if isinstance(o, Mapping):
        return {str(k): v for k, v in o.items()}
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if hasattr(o, "columns") and callable(getattr(o, "to_dict", None)):  # a pandas DataFrame
        return o.to_dict(orient="records")
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


_INT64 = (-(1 << 63), (1 << 64) - 1)


def canonical_value(value: Any) -> Any:
    """``value`` as plain JSON-able Python (dicts, lists, str, int, finite float, bool, None).

    Integers beyond 64 bits become ``orjson.Fragment`` digits so they are still
    written as JSON integers.
    """
    t = type(value)
    if value is None or t is str or t is bool:
        return value
    if t is int:
        return value if _INT64[0] <= value <= _INT64[1] else orjson.Fragment(str(value).encode())
    if t is float:
        return _float(value)
    if t is list or t is tuple:
        return [canonical_value(v) for v in value]
    if t is dict:
        return {str(k): canonical_value(v) for k, v in value.items()}
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return canonical_value(int(value))
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, str):
        return str(value)
    return canonical_value(_fallback(value))


# orjson does the writing: compact, UTF-8, keys sorted. Dates, times and
# dataclasses are passed to _fallback so their spelling is ours, not the
# library's. It writes NaN and infinities as null, which the fast path
# detects by counting nulls against the Nones it was given.
_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_row_bytes = partial(orjson.dumps, default=_fallback, option=_OPTS | orjson.OPT_APPEND_NEWLINE)
_batch_bytes = partial(orjson.dumps, default=_fallback, option=_OPTS)
_native_batch_bytes = partial(orjson.dumps, option=_OPTS)
_SEQUENCES = {tuple, list}
# Column value types that orjson cannot turn into a NaN/Infinity "null".
_NO_NAN = {
    type(None),
    int,
    str,
    bool,
    decimal.Decimal,
    dt.date,
    dt.datetime,
    dt.time,
    dt.timedelta,
    uuid.UUID,
    bytes,
    bytearray,
    memoryview,
}
_NUMBERS = {type(None), int, float, bool}


def dumps_bytes(value: Any) -> bytes:
    """The canonical JSON of ``value``, as UTF-8 bytes."""
    return orjson.dumps(canonical_value(value), option=_OPTS)


def dumps(value: Any) -> str:
    """The canonical JSON text of ``value``."""
    return dumps_bytes(value).decode()


def row_line(row: Any, columns: Sequence[str] = ()) -> bytes:
    """One row as a canonical JSON array, newline-terminated."""
    if isinstance(row, Mapping):
        row = [row.get(c) for c in columns]
    elif not isinstance(row, (list, tuple)):
        row = list(row)
    return orjson.dumps(canonical_value(row), option=_OPTS | orjson.OPT_APPEND_NEWLINE)


def rows_bytes(
    batch: list[Any],
    columns: Sequence[str] = (),
    decimal_text: Sequence[int] = (),
    value_kinds: Sequence[str] | None = None,
) -> bytes:
    """Rows as canonical JSON lines (UTF-8, each ending in a newline).

    Fast path: one orjson call for the whole batch, cut at the row
    boundaries. It is used only when it provably wrote the canonical form:
    rows are tuples or lists, the cut found exactly one
    boundary per row, and no value could have been a NaN or infinity written
    as ``null`` (checked per column with C-level passes: value types, and the
    sum of float columns is finite). Anything else is redone row by row.

    ``decimal_text`` names columns whose ``str`` (or ASCII ``bytes``) values are
    the text of decimals (a driver's numeric output, not yet turned into ``Decimal``):
    they are written exactly as ``Decimal(text)`` would be. The text pass
    handles them directly; anything it cannot prove is converted with
    ``Decimal(text)`` and takes the usual path.

    ``value_kinds`` is a driver's promise, one entry per column, of what every
    non-None value of the column is (a key of ``PROMISED_KINDS``). When it
    fits the batch, the per-column type passes are skipped.
    """
    if not batch:
        return b""
    if value_kinds is not None:
        data = _promised_rows_bytes(batch, value_kinds, frozenset(decimal_text))
        if data is not None:
            return data
    if decimal_text:
        if set(map(type, batch)) <= _SEQUENCES and len(set(map(len, batch))) == 1:
            data = _typed_rows_bytes(batch, frozenset(decimal_text))
            if data is not None:
                return data
        batch = _decimals_from_text(batch, frozenset(decimal_text))
    if set(map(type, batch)) <= _SEQUENCES:  # the row lengths matter to the column pass only
        try:  # without ``default``: fails fast at the first Decimal, date, time...
            data = _native_batch_bytes(batch)
        except (TypeError, ValueError):
            data = _typed_rows_bytes(batch) if len(set(map(len, batch))) == 1 else None
            if data is not None:
                return data
            try:
                data = _batch_bytes(batch)
            except (TypeError, ValueError):
                data = None
        if data is not None and (b"null" not in data or _no_nan(batch)):
            lines = _cut_rows(data, len(batch))
            # None: the values are fine, only the cut is ambiguous ("],[" inside a string, nested arrays)
            return lines if lines is not None else b"".join(map(_row_bytes, batch))
    return b"".join(row_line(r, columns) for r in batch)


# --- typed columns: Decimal, date, datetime and time without a Python call per value ---------
#
# A batch of plain scalars holding such values is encoded column by column.
# Dates and datetimes whose UTC offsets are whole minutes (no zone, a fixed
# ``timezone``, a ``ZoneInfo``) are written by orjson itself: for exactly
# these values its bytes equal ``isoformat()`` (4-digit zero-padded year,
# ``.ffffff`` only when non-zero, ``+HH:MM`` from ``utcoffset()``; it rounds
# sub-minute offsets, which are therefore kept away from it). Times are not
# (orjson writes 51186 microseconds as ".51186"): they get one ``isoformat``
# per value in a comprehension, still without the ``default`` callback. A Decimal
# column becomes canonical JSON text through C-level string passes. Anything
# else (other types, mixed columns, exponents, NaN, long digits, an unusual
# decimal context) returns None and the general path does the work.
# tests/evidence/test_canonical_fast_types.py checks both write the same bytes.

_SCALARS = frozenset(
    {type(None), int, str, bool, float, uuid.UUID, decimal.Decimal, dt.date, dt.datetime, dt.time}
)
_TYPED = frozenset({decimal.Decimal, dt.date, dt.datetime, dt.time})
# only scalars and one-key tag objects: nothing to sort
_plain_batch = orjson.dumps
_plain_row = partial(orjson.dumps, option=orjson.OPT_APPEND_NEWLINE)
_DEC_CHARS = b"0123456789.-\x00"


def _decimals_from_text(batch: list[Any], text_cols: frozenset[int]) -> list[Any]:
    """``batch`` with the text values of ``text_cols`` turned into ``Decimal`` (what the driver would return)."""
    dec = decimal.Decimal
    out = []
    for row in batch:
        if not isinstance(row, (list, tuple)):
            row = list(row)
        out.append(
            tuple(
                dec(v.decode("ascii") if type(v) is bytes else v)
                if j in text_cols and type(v) in (str, bytes)
                else v
                for j, v in enumerate(row)
            )
        )
    return out


def _typed_rows_bytes(batch: list[Any], text_cols: frozenset[int] = frozenset()) -> bytes | None:
    """Canonical lines for a batch with Decimal/date/datetime/time columns, or None (use the general path).

    Decimal values are converted column by column first and handed back to
    orjson in its own (row-major) order through ``default=partial(next, it)``,
    so the rows are written as they are, with no per-value Python frame. Only
    when a column needs ``isoformat`` (times, unusual zones) are the rows rebuilt.
    """
    width = len(batch[0])
    flat = list(chain.from_iterable(batch))
    columns = [flat[j::width] for j in range(width)]
    kinds = [set(map(type, col)) for col in columns]
    every = set().union(*(k for j, k in enumerate(kinds) if j not in text_cols))
    if not (every & _TYPED or text_cols) or not every <= _SCALARS:
        return None
    floats, fed, rebuilt = [], [], False
    for j, (col, ck) in enumerate(zip(columns, kinds)):
        nullable = type(None) in ck
        ck.discard(type(None))
        if j in text_cols:  # decimal text: all str or all bytes
            if not ck:
                continue
            if ck != {str} and ck != {bytes}:
                return None
            values = _decimal_column(col, nullable, text_kind=next(iter(ck)))
            if values is None:
                return None
            fed.append((j, col, values, nullable))
            if str in ck:  # orjson writes str itself: the column's values are put in place
                rebuilt = True  # (bytes go to ``default`` like Decimals, in row order)
            continue
        typed = ck & _TYPED
        if float in ck:
            if typed:
                return None
            floats.append(col)
            continue
        if not typed:
            continue
        if len(ck) != 1:
            return None
        (t,) = ck
        if t is decimal.Decimal:
            values = _decimal_column(col, nullable)  # the non-None values, converted
            if values is None:
                return None
            fed.append((j, col, values, nullable))
        elif t is not dt.date and not _orjson_writes_isoformat(col, t):
            flat[j::width] = [None if v is None else v.isoformat() for v in col]
            rebuilt = True
    try:
        if rebuilt:  # no value is left for ``default``
            for j, col, values, nullable in fed:
                flat[j::width] = _with_nones(col, values) if nullable else values
            rows = list(zip(*[iter(flat)] * width))
            data = _plain_batch(rows)
        else:
            rows = batch
            feed = _feed(fed)
            data = _plain_batch(batch, default=partial(next, feed))
            if next(feed, feed) is not feed:  # orjson asked for fewer values than were made
                return None
    except (TypeError, ValueError):  # integers beyond 64 bits; more values asked for than made
        return None
    if (
        floats and b"null" in data
    ):  # a NaN or infinity is written as null: let the general path tag it
        for col in floats:
            try:
                if not math.isfinite(sum(filter(None, col))):
                    return None
            except (TypeError, OverflowError, ValueError, ArithmeticError):
                return None
    lines = _cut_rows(data, len(rows))
    if lines is not None:
        return lines
    if not rebuilt:  # a "],[" inside a string: the general path cuts it row by row
        return None
    return b"".join(map(_plain_row, rows))


def _feed(fed: list[tuple[int, list[Any], list[Any], bool]]) -> Iterator[Any]:
    """The converted values of the fed columns, in the order orjson meets them (row by row), None skipped."""
    if len(fed) == 1:
        return iter(fed[0][2])
    return filter(
        partial(is_not, None),
        chain.from_iterable(
            zip(
                *(
                    _with_nones(col, values) if nullable else values
                    for _, col, values, nullable in fed
                )
            )
        ),
    )


# --- promised columns: the driver says what each column holds --------------------------
#
# A driver that converts a column's declared type with a fixed loader (PostgreSQL's
# int4 is always an ``int``, its timestamp always a naive ``datetime``) can
# promise the kind of each column. orjson writes every kind below in the
# canonical spelling itself (naive datetimes and dates as ``isoformat()``, see
# above), none of them can be a NaN written as ``null``, and decimal text
# is converted column by column: the batch is one orjson call, with no
# per-column type pass. The first row is still checked against the promise.

PROMISED_KINDS: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "str": (str,),
    "bool": (bool,),
    "date": (dt.date,),
    "naive_datetime": (dt.datetime,),
    "decimal_text": (bytes,),  # a driver's ASCII numeric text, as in ``decimal_text``
}
_NONE = type(None)


def _promised_rows_bytes(
    batch: list[Any], kinds: Sequence[str], text_cols: frozenset[int]
) -> bytes | None:
    """Canonical lines for a batch whose every column is promised, or None (use the other paths)."""
    width = len(kinds)
    if (
        not set(kinds) <= PROMISED_KINDS.keys()
        or {j for j, k in enumerate(kinds) if k == "decimal_text"} != text_cols
        or not set(map(type, batch)) <= _SEQUENCES
        or set(map(len, batch)) != {width}
    ):
        return None
    first = batch[0]
    for value, kind in zip(first, kinds):  # a wrong promise is caught here, not written
        t = type(value)
        if t is not _NONE and t not in PROMISED_KINDS[kind]:
            return None
        if t is dt.datetime and (kind != "naive_datetime" or value.tzinfo is not None):
            return None
    fed = []
    for j in sorted(text_cols):
        col = [row[j] for row in batch]
        types = set(map(type, col))
        if not types <= {bytes, _NONE}:
            return None
        if types == {_NONE}:
            continue
        nullable = _NONE in types
        values = _decimal_column(col, nullable, text_kind=bytes)
        if values is None:
            return None
        fed.append((j, col, values, nullable))
    feed = _feed(fed)
    try:
        data = _plain_batch(batch, default=partial(next, feed))
    except (TypeError, ValueError):  # integers beyond 64 bits, a value no kind allows
        return None
    if next(feed, feed) is not feed:
        return None
    return _cut_rows(data, len(batch))


def _cut_rows(data: bytes, n: int) -> bytes | None:
    """``data``, one JSON array of ``n`` row arrays, as ``n`` lines; None when a value holds ``],[``."""
    if n == 1:
        return data[1:-1] + b"\n"
    lines = data.replace(b"],[", b"]\n[")  # the outer brackets never form one
    if lines.count(b"\n") != n - 1:  # orjson escapes a newline in a string: each is a cut
        return None
    return b"".join((memoryview(lines)[1:-1], b"\n"))


def _with_nones(col: list[Any], values: list[Any]) -> list[Any]:
    """``values`` (one per non-None entry of ``col``) put back in place, None where ``col`` has None."""
    nxt = iter(values).__next__
    return [None if v is None else nxt() for v in col]


def _orjson_writes_isoformat(col: list[Any], kind: type) -> bool:
    """True when orjson's own text for every datetime of ``col`` equals its ``isoformat()``."""
    if kind is not dt.datetime:
        return (
            False  # times: orjson refuses zones, and orjson 3.x drops a zero of some microseconds
        )
    try:  # ordering a naive and an aware datetime raises: a naive maximum means all are naive
        if max(filter(None, col)).tzinfo is None:
            return True
    except TypeError:
        pass
    zones: set[Any] = set(map(getattr, col, repeat("tzinfo"), repeat(None)))
    zones.discard(None)
    if not zones:
        return True
    zoneinfo = sys.modules.get("zoneinfo")  # no ZoneInfo object exists unless zoneinfo was imported
    fixed = True
    for tz in zones:
        if type(tz) is dt.timezone:
            continue
        if zoneinfo is None or type(tz) is not zoneinfo.ZoneInfo:
            return False  # pytz, dateutil, custom zones: orjson may ask them differently
        fixed = False
    offsets: set[Any] = (
        set(map(dt.timezone.utcoffset, zones, repeat(None)))
        if fixed
        else set(map(dt.datetime.utcoffset, filter(None, col)))
    )
    offsets.discard(None)
    return all(off.seconds % 60 == 0 and not off.microseconds for off in offsets)


def _decimal_column(
    col: list[Any], nullable: bool, text_kind: type | None = None
) -> list[Any] | None:
    """The Decimals of ``col`` (its None skipped) as canonical JSON values, or None when one is unusual.

    Handled: finite values that ``str`` writes with a point and no exponent, at
    most ``prec`` characters long (so ``normalize()`` is exact). Their canonical
    text is that string with the fraction's trailing zeros cut: ``"5.00"`` -> ``5``,
    ``"-0.0"`` -> ``0``, ``"2.50"`` -> ``{"$decimal":"2.5"}``. With ``text_kind``
    (``str`` or ``bytes``) the values are already decimal text, read the same way:
    a plain-notation text with a point is spelled exactly as ``Decimal(text)`` would be.
    """
    ctx = decimal.getcontext()
    if ctx.Emin > -7 or ctx.Emax < ctx.prec:
        return None
    nones = list(map(type, col)).count(type(None)) if nullable else 0
    if text_kind is bytes:  # one ASCII check and one decode for the column, no split and re-join
        joined = b"\x00".join([b"None" if v is None else v for v in col] if nullable else col)
        if not joined.isascii():
            return None
        longest = max(map(len, filter(None, col)) if nullable else map(len, col))
        text = "\x00" + joined.decode("ascii") + "\x00"
    else:
        texts = col if text_kind is str and not nullable else list(map(str, col))
        text = "\x00" + "\x00".join(texts) + "\x00"
        if not text.isascii():
            return None
        joined, longest = text.encode("ascii"), max(map(len, texts))
    if (
        joined.translate(None, _DEC_CHARS) != b"None" * nones
        or text.count(".") != len(col) - nones
        or longest > ctx.prec
    ):
        return None  # exponents, NaN, infinities, no point, long digits
    if nones:
        text = text.replace("\x00None", "")
    while "0\x00" in text:
        text = text.replace("0\x00", "\x00")
    text = text.replace(".\x00", "\x00")
    while "\x00-0\x00" in text:
        text = text.replace("\x00-0\x00", "\x000\x00")
    # a value keeping a point is tagged, the others are digits (also beyond 64 bits);
    # written as they are through orjson.Fragment, no per-value Python function call
    return list(
        map(
            orjson.Fragment,
            [
                f'{{"$decimal":"{p}"}}' if "." in p else p  # one string built per value
                for p in text[1:-1].split("\x00")
            ],
        )
    )


def _no_nan(batch: list[Any]) -> bool:
    """True when no value of ``batch`` can be a non-finite float (conservative).

    Per column, cheapest test first: a numeric column sums to a finite
    number; a text column joins; anything else must hold only types that
    orjson never writes as ``null``.
    """
    width = len(batch[0])
    flat = list(chain.from_iterable(batch))
    for j in range(width):
        col = flat[j::width]
        try:
            if math.isfinite(sum(filter(None, col))):
                continue
            return False
        except (TypeError, OverflowError, ValueError, ArithmeticError):
            pass
        try:
            "".join(filter(None, col))
            continue
        except TypeError:
            pass
        if not set(map(type, col)) <= _NO_NAN:
            return False
    return True


def decode(value: Any) -> Any:
    """Turn tagged canonical values back into Python values (for readers and exports)."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, inner),) = value.items()
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


def iter_lines(data: bytes) -> Iterator[bytes]:
    """The newline-terminated lines of ``data``, without their newlines, lazily."""
    start = 0
    while True:
        end = data.find(b"\n", start)
        if end < 0:
            return
        yield data[start:end]
        start = end + 1
