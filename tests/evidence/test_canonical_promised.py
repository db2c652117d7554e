"""Columns whose value kinds a driver promises are written exactly as the reference encoder writes them.

``rows_bytes(..., value_kinds=...)`` skips the per-column type passes when a
driver promises what each column holds (PostgreSQL's stock loaders); the bytes
must stay those of the value-by-value path, and a promise the first row
breaks must not be trusted.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

from assay.kernel.evidence.canonical import _promised_rows_bytes, row_line, rows_bytes

KINDS = ["int", "str", "bool", "date", "naive_datetime", "decimal_text"]


def _value(rng: random.Random, kind: str):
    if kind == "int":
        return rng.choice([0, -1, 2**63 - 1, -(2**63), rng.randint(-(10**9), 10**9)])
    if kind == "str":
        texts = [
            "",
            "x",
            "None",
            "é",
            '"}',
            "null",
            "tab\there",
            "new\nline",
            "0.50",
            rng.random().hex(),
        ]
        return rng.choice(
            texts + ["a],[b"] * (rng.random() < 0.02)
        )  # a rare "],[": its batch is cut row by row
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "date":
        return dt.date(rng.randint(1, 9999), rng.randint(1, 12), rng.randint(1, 28))
    if kind == "naive_datetime":
        return dt.datetime(
            rng.choice([1, 999, 1970, 2024, 9999]),
            rng.randint(1, 12),
            rng.randint(1, 28),
            rng.randint(0, 23),
            rng.randint(0, 59),
            rng.randint(0, 59),
            rng.choice([0, 1, 10, 500_000, 999_999, rng.randint(0, 999_999)]),
        )
    scale = rng.choice([0, 1, 2, 2, 6])  # PostgreSQL's numeric output: plain notation
    digits = rng.randint(-(10**12), 10**12)
    text = format(Decimal(digits).scaleb(-scale), "f")
    return rng.choice(
        [text, text, "0.00", "-0.00", "5.00", "-7", "NaN", "12345678901234567890123456789.5"]
    ).encode()


def _as_driver_values(row, kinds):
    """What the driver would have returned: decimal text as Decimal."""
    return tuple(
        Decimal(v.decode()) if k == "decimal_text" and v is not None else v
        for v, k in zip(row, kinds)
    )


def _reference(batch, kinds):
    return b"".join(row_line(_as_driver_values(r, kinds)) for r in batch)


def test_promised_batches_write_the_reference_bytes():
    rng = random.Random(20261130)
    taken = 0
    for _ in range(400):
        kinds = [rng.choice(KINDS) for _ in range(rng.randint(1, 6))]
        nulls = [rng.choice([0.0, 0.0, 0.3, 1.0]) for _ in kinds]
        batch = [
            tuple(None if rng.random() < n else _value(rng, k) for k, n in zip(kinds, nulls))
            for _ in range(rng.randint(1, 80))
        ]
        text_cols = tuple(j for j, k in enumerate(kinds) if k == "decimal_text")
        assert rows_bytes(batch, (), text_cols, tuple(kinds)) == _reference(batch, kinds), (
            kinds,
            batch,
        )
        taken += _promised_rows_bytes(batch, tuple(kinds), frozenset(text_cols)) is not None
    assert (
        taken > 150
    )  # most batches really went through the promised path (NaN, long digits did not)


def test_the_promised_path_is_taken_for_a_database_shaped_batch():
    kinds = ("int", "str", "decimal_text", "naive_datetime", "date", "bool")
    batch = [
        (
            i,
            f"s{i}",
            f"{i * 1.25:.2f}".encode(),
            dt.datetime(2024, 1, 1) + dt.timedelta(minutes=i),
            dt.date(2024, 1, 1 + i % 28),
            i % 2 == 0,
        )
        for i in range(1000)
    ]
    fast = _promised_rows_bytes(batch, kinds, frozenset({2}))
    assert fast is not None and fast == _reference(batch, kinds)
    assert b'{"$decimal":"1.25"}' in fast and b'[4,"s4",5,' in fast


def test_a_promise_the_first_row_breaks_is_not_trusted():
    kinds = ("int", "naive_datetime")
    zoned = [(1, dt.datetime(2024, 1, 1, tzinfo=dt.timezone(dt.timedelta(seconds=30))))]
    assert _promised_rows_bytes(zoned, kinds, frozenset()) is None
    assert rows_bytes(zoned, (), (), kinds) == _reference(zoned, kinds)
    floats = [(float("nan"), None)]
    assert _promised_rows_bytes(floats, kinds, frozenset()) is None
    assert rows_bytes(floats, (), (), kinds) == b'[{"$float":"NaN"},null]\n'


def test_promises_that_do_not_fit_the_batch_are_ignored():
    batch = [(1, b"2.50"), (2, b"3.00")]
    reference = _reference(batch, ("int", "decimal_text"))
    assert _promised_rows_bytes(batch, ("int",), frozenset({1})) is None  # one kind short
    assert (
        _promised_rows_bytes(batch, ("int", "decimal_text"), frozenset()) is None
    )  # text columns disagree
    assert (
        _promised_rows_bytes(batch, ("int", "float"), frozenset()) is None
    )  # not a kind that can be promised
    assert rows_bytes(batch, (), (1,), ("int", "decimal_text")) == reference
    assert rows_bytes([(2**64, None)], (), (), ("int", "str")) == b"[18446744073709551616,null]\n"
    assert rows_bytes([("a],[b", None)], (), (), ("str", "int")) == b'["a],[b",null]\n'
