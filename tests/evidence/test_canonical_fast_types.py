"""The typed-column fast path (Decimal, date, datetime, time, UUID) writes exactly the reference bytes.

The reference is the value-by-value path (``row_line``: ``canonical_value`` then
orjson), whose spelling docs/evidence.md documents; ``rows_bytes`` must match
it byte for byte whichever path it takes.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
import uuid
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from assay.kernel.evidence.canonical import _decimal_column, _typed_rows_bytes, row_line, rows_bytes

UTC = dt.UTC
ZONES = [
    None,
    UTC,
    dt.timezone(dt.timedelta(hours=8)),
    dt.timezone(dt.timedelta(hours=-5, minutes=-30)),
    dt.timezone(dt.timedelta(minutes=-1)),
    dt.timezone(dt.timedelta(hours=23, minutes=59)),
    dt.timezone(dt.timedelta(seconds=1)),
    dt.timezone(dt.timedelta(hours=5, seconds=30)),
    dt.timezone(dt.timedelta(hours=-3, microseconds=-7)),
    ZoneInfo("Europe/Amsterdam"),
    ZoneInfo("America/New_York"),
    ZoneInfo("Asia/Kolkata"),
]


def _reference(batch):
    return b"".join(row_line(r) for r in batch)


def _decimal(rng: random.Random) -> Decimal:
    kind = rng.random()
    if kind < 0.05:
        return Decimal(rng.choice(["NaN", "-NaN", "sNaN", "Infinity", "-Infinity", "NaN123"]))
    if kind < 0.12:
        return Decimal(rng.choice(["-0", "0", "-0.00", "0.000", "-0E+3", "0E-30", "-0.0"]))
    if kind < 0.2:  # exponents, huge and tiny, long digits
        return Decimal(
            f"{rng.choice('+-')}{rng.randint(1, 10 ** rng.randint(1, 40))}E{rng.randint(-60, 60)}"
        )
    if kind < 0.25:
        return Decimal(rng.randint(-(10**30), 10**30)).scaleb(-rng.randint(0, 3))
    scale = rng.choice([0, 1, 2, 2, 2, 4, 6, 7, 9])
    return Decimal(rng.randint(-(10**12), 10**12)).scaleb(-scale)


def _datetime(rng: random.Random) -> dt.datetime:
    value = dt.datetime(
        rng.choice([1, 9, 999, 1000, 1850, 1900, 1970, 2024, 9999]),
        rng.randint(1, 12),
        rng.randint(1, 28),
        rng.randint(0, 23),
        rng.randint(0, 59),
        rng.randint(0, 59),
        rng.choice([0, 0, 1, 10, 999_999, rng.randint(0, 999_999)]),
        fold=rng.randint(0, 1),
    )
    tz = rng.choice(ZONES)
    return value.replace(tzinfo=tz) if tz is not None else value


def _time(rng: random.Random, zoned: bool) -> dt.time:
    value = dt.time(
        rng.randint(0, 23),
        rng.randint(0, 59),
        rng.randint(0, 59),
        rng.choice([0, 5, 500_000, rng.randint(0, 999_999)]),
    )
    return value.replace(tzinfo=rng.choice(ZONES[1:5])) if zoned else value


def _column(rng: random.Random):
    """One column's value maker: usually one type (as from a database), sometimes mixed."""
    nulls = rng.choice([0.0, 0.0, 0.2, 0.9])
    kind = rng.choice(
        [
            "decimal",
            "decimal",
            "plain_decimal",
            "datetime",
            "naive",
            "date",
            "time",
            "ztime",
            "uuid",
            "int",
            "float",
            "text",
            "mixed",
        ]
    )

    def plain_decimal():
        return Decimal(rng.randint(-(10**9), 10**9)).scaleb(-rng.choice([1, 2, 2, 3]))

    makers = {
        "decimal": lambda: _decimal(rng),
        "plain_decimal": plain_decimal,
        "datetime": lambda: _datetime(rng),
        "naive": lambda: _datetime(rng).replace(tzinfo=None),
        "date": lambda: dt.date(rng.randint(1, 9999), rng.randint(1, 12), rng.randint(1, 28)),
        "time": lambda: _time(rng, False),
        "ztime": lambda: _time(rng, rng.random() < 0.5),
        "uuid": lambda: uuid.UUID(int=rng.getrandbits(128)),
        "int": lambda: rng.choice([0, -1, 2**63 - 1, rng.randint(-999, 999), 2**64 + 1]),
        "float": lambda: rng.choice(
            [0.5, -0.0, 1e16, 1e-7, float("nan"), float("inf"), rng.random()]
        ),
        "text": lambda: rng.choice(["", "x", "],[", "None", "0.\x00", "é", '"}', "null"]),
    }
    if kind == "mixed":
        chosen = rng.sample(sorted(makers), 2)
        return lambda: None if rng.random() < nulls else makers[rng.choice(chosen)]()
    return lambda: None if rng.random() < nulls else makers[kind]()


def test_random_typed_batches_write_the_reference_bytes():
    rng = random.Random(20261129)
    for _ in range(600):
        makers = [_column(rng) for _ in range(rng.randint(1, 6))]
        batch = [tuple(m() for m in makers) for _ in range(rng.randint(1, 60))]
        if rng.random() < 0.2:
            batch = [list(r) for r in batch]
        assert rows_bytes(batch) == _reference(batch), batch


def test_the_fast_path_is_taken_for_database_shaped_columns():
    rows = [
        (
            i,
            Decimal(i * 125).scaleb(-2),
            dt.datetime(2024, 1, 1) + dt.timedelta(minutes=i, microseconds=i),
            dt.date(2024, 1, 1) + dt.timedelta(days=i),
            dt.time(i % 24, 30),
            uuid.UUID(int=i),
            dt.datetime(2024, 3, 31, 1, tzinfo=ZoneInfo("Europe/Amsterdam"))
            + dt.timedelta(hours=i),
            None if i % 3 else Decimal("-0.00"),
        )
        for i in range(500)
    ]
    fast = _typed_rows_bytes(rows)
    assert fast is not None and fast == rows_bytes(rows) == _reference(rows)


@pytest.mark.parametrize(
    "values, expected",
    [
        (
            [
                "1.25",
                "5.00",
                "-0.00",
                "-0.50",
                "0.000001",
                "100.10",
                None,
                "12345678901234567890123.0",
            ],
            [
                b'{"$decimal":"1.25"}',
                b"5",
                b"0",
                b'{"$decimal":"-0.5"}',
                b'{"$decimal":"0.000001"}',
                b'{"$decimal":"100.1"}',
                b"null",
                b"12345678901234567890123",
            ],
        ),
    ],
)
def test_decimal_column_spelling(values, expected):
    batch = [(None if v is None else Decimal(v),) for v in values]
    assert rows_bytes(batch) == _reference(batch) == b"".join(b"[" + e + b"]\n" for e in expected)


@pytest.mark.parametrize(
    "odd", ["1E+2", "1E-7", "NaN", "-Infinity", "5", "-0", "1.0000000000000000000000000001"]
)
def test_decimal_columns_the_text_pass_cannot_prove_go_to_the_general_path(odd):
    assert _decimal_column([Decimal("1.5"), Decimal(odd)], False) is None
    batch = [(Decimal("1.5"),), (Decimal(odd),)]
    assert rows_bytes(batch) == _reference(batch)


def test_a_narrow_decimal_context_is_honoured():
    batch = [(Decimal("1.23456789"),), (Decimal("2.50"),)]
    with decimal.localcontext() as ctx:
        ctx.prec = 5
        assert _decimal_column([v for (v,) in batch], False) is None
        assert rows_bytes(batch) == _reference(batch)


def test_every_whole_minute_offset_and_year_matches_isoformat():
    rng = random.Random(5)
    rows = []
    for minutes in range(-1439, 1440):
        tz = dt.timezone(dt.timedelta(minutes=minutes))
        rows.append(
            (
                dt.datetime(
                    rng.randint(1, 9999),
                    1 + minutes % 12,
                    1 + minutes % 28,
                    minutes % 24,
                    minutes % 60,
                    59,
                    rng.choice([0, 1, 123456]),
                ).replace(tzinfo=tz),
                dt.date(1 + (minutes + 1439) * 3, 12, 31),
            )
        )
    assert rows_bytes(rows) == _reference(rows)


def test_sub_minute_offsets_keep_their_isoformat_spelling():
    amsterdam_1900 = dt.datetime(1900, 1, 1, tzinfo=ZoneInfo("Europe/Amsterdam"))  # LMT +00:19:32
    rows = [
        (amsterdam_1900,),
        (dt.datetime(2024, 1, 1, tzinfo=dt.timezone(dt.timedelta(seconds=-90))),),
    ]
    assert rows_bytes(rows) == _reference(rows)
    assert b'"1900-01-01T00:00:00+00:19:32"' in rows_bytes(rows)


def test_dst_fold_is_spelled_like_isoformat():
    ny = ZoneInfo("America/New_York")
    rows = [(dt.datetime(2024, 11, 3, 1, 30, fold=f, tzinfo=ny),) for f in (0, 1)]
    assert (
        rows_bytes(rows)
        == _reference(rows)
        == b'["2024-11-03T01:30:00-04:00"]\n["2024-11-03T01:30:00-05:00"]\n'
    )


def test_datetime_subclasses_and_foreign_zones_take_the_general_path():
    class Stamp(dt.datetime):
        pass

    class Zone(dt.tzinfo):
        def utcoffset(self, d):
            return dt.timedelta(hours=1)

        def dst(self, d):
            return None

    rows = [(Stamp(2024, 1, 1, 12),), (dt.datetime(2024, 1, 1, tzinfo=Zone()),)]
    assert rows_bytes(rows) == _reference(rows)
    assert (
        _typed_rows_bytes([(dt.datetime(2024, 1, 1, tzinfo=Zone()),)])
        == b'["2024-01-01T00:00:00+01:00"]\n'
    )


def test_nan_next_to_typed_columns_is_still_tagged():
    rows = [(Decimal("1.5"), float("nan")), (None, 2.0)]
    out = rows_bytes(rows)
    assert out == _reference(rows) and b'{"$float":"NaN"}' in out


def test_every_microsecond_width_matches_isoformat():
    micros = sorted(
        {
            *range(1000),
            *range(0, 1_000_000, 997),
            *(10**k for k in range(6)),
            *(10**k - 1 for k in range(1, 7)),
            51186,
            5,
            50,
            500_000,
        }
    )
    rows = [
        (
            dt.datetime(2024, 2, 29, 23, 59, 59, m),
            dt.time(0, 0, 0, m),
            dt.datetime(1, 1, 1, 0, 0, 0, m, tzinfo=dt.timezone(dt.timedelta(hours=-1))),
        )
        for m in micros
    ]
    assert rows_bytes(rows) == _reference(rows)
    assert b'"00:00:00.051186"' in rows_bytes(rows)


def test_decimal_text_columns_write_what_their_decimals_write():
    # a driver's numeric text (PostgreSQL's plain notation, or str()) stored as Decimal(text) would be
    rng = random.Random(11)
    for _ in range(60):
        rows = []
        for i in range(rng.choice([1, 2, 50, 400])):
            d = _decimal(rng)
            text = format(d, "f") if d.is_finite() and rng.random() < 0.7 else str(d)
            rows.append(
                (
                    i,
                    None if rng.random() < 0.1 else text,
                    f"s{i}",
                    None if rng.random() < 0.3 else "2.50",
                )
            )
        reference = _reference(
            [
                (i, None if t is None else Decimal(t), s, None if u is None else Decimal(u))
                for i, t, s, u in rows
            ]
        )
        assert rows_bytes(rows, (), (1, 3)) == reference
        as_bytes = [
            (i, t if t is None else t.encode(), s, u if u is None else u.encode())
            for i, t, s, u in rows
        ]
        assert rows_bytes(as_bytes, (), (1, 3)) == reference
