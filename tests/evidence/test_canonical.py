"""The canonical JSON form: one spelling per value, equal across engines and code paths."""

from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
import uuid
from decimal import Decimal

import pytest

from assay.kernel.evidence import capture_sql_execution, decode, dumps
from assay.kernel.evidence.canonical import row_line, rows_bytes

UTC = dt.UTC


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "null"),
        (True, "true"),
        (0, "0"),
        (-12, "-12"),
        (2**70, str(2**70)),
        (0.1, "0.1"),
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (1e16, "1e+16"),
        (float("nan"), '{"$float":"NaN"}'),
        (float("inf"), '{"$float":"Infinity"}'),
        (float("-inf"), '{"$float":"-Infinity"}'),
        (Decimal("15.00"), "15"),
        (Decimal("2.50"), '{"$decimal":"2.5"}'),
        (Decimal("NaN"), '{"$decimal":"NaN"}'),
        (Decimal("-0.001"), '{"$decimal":"-0.001"}'),
        (dt.date(2024, 1, 5), '"2024-01-05"'),
        (dt.datetime(2024, 1, 5, 10, 0, 0), '"2024-01-05T10:00:00"'),
        (dt.datetime(2024, 1, 5, 10, 0, 0, 5, tzinfo=UTC), '"2024-01-05T10:00:00.000005+00:00"'),
        (
            dt.datetime(2024, 1, 5, 10, tzinfo=dt.timezone(dt.timedelta(hours=8))),
            '"2024-01-05T10:00:00+08:00"',
        ),
        (dt.time(9, 30), '"09:30:00"'),
        (dt.time(9, 30, tzinfo=UTC), '"09:30:00+00:00"'),
        (dt.timedelta(days=1, seconds=1, microseconds=500000), '{"$duration":"PT86401.5S"}'),
        (dt.timedelta(0), '{"$duration":"PT0S"}'),
        (b"\x00\xff", '{"$bytes":"AP8="}'),
        (memoryview(b"ab"), '{"$bytes":"YWI="}'),
        (
            uuid.UUID("12345678-1234-5678-1234-567812345678"),
            '"12345678-1234-5678-1234-567812345678"',
        ),
        ("é\n\x1e", '"é\\n\\u001e"'),
        ({"b": 1, "a": [1, (2, 3)], 5: None}, '{"5":null,"a":[1,[2,3]],"b":1}'),
        ({3, 1, 2}, "[1,2,3]"),
    ],
)
def test_canonical_spelling(value, text):
    assert dumps(value) == text


def test_unknown_objects_are_kept_as_their_repr():
    class Thing:
        def __repr__(self):
            return "<thing>"

    assert dumps([Thing()]) == '[{"$repr":"<thing>"}]'


def test_tagged_values_decode_back():
    row = [float("nan"), Decimal("2.5"), b"ab", dt.timedelta(seconds=90), 3]
    back = decode(json.loads(dumps(row)))
    assert back[0] != back[0] and back[1:] == [Decimal("2.5"), b"ab", dt.timedelta(seconds=90), 3]


def _slow(batch):
    return b"".join(row_line(r) for r in batch)


def test_batch_fast_path_writes_exactly_what_the_row_by_row_path_writes():
    rng = random.Random(7)
    pool = [
        None,
        0,
        1,
        -5,
        2**63 - 1,
        2**64 + 3,
        0.5,
        1e-7,
        7.293e-05,
        float("nan"),
        float("inf"),
        "",
        "x",
        "],[",
        "null",
        "é",
        True,
        Decimal("1.10"),
        Decimal(3),
        dt.date(2020, 2, 29),
        dt.datetime(2020, 1, 1, tzinfo=UTC),
        [1, [2]],
        {"k": [1.5, None]},
        b"\x01",
        [float("nan")],
    ]
    for _ in range(400):
        width = rng.randint(1, 6)
        batch = [tuple(rng.choice(pool) for _ in range(width)) for _ in range(rng.randint(1, 30))]
        assert rows_bytes(batch) == _slow(batch), batch


def test_rows_of_different_lengths_in_one_batch_are_written_row_by_row_alike():
    rng = random.Random(11)
    pool = [None, 3, 0.25, float("nan"), "x", "],[", Decimal("2.50"), dt.date(2021, 5, 1), True]
    for _ in range(300):
        batch = [
            tuple(rng.choice(pool) for _ in range(rng.randint(1, 5)))
            for _ in range(rng.randint(2, 20))
        ]
        assert rows_bytes(batch) == _slow(batch), batch


def test_nan_hidden_among_nulls_is_still_tagged():
    batch = [(1, None, 2.0), (2, float("nan"), None), (3, None, None)]
    assert b'{"$float":"NaN"}' in rows_bytes(batch)


def test_rows_that_are_not_tuples_are_accepted():
    class Row:
        def __init__(self, *v):
            self.v = v

        def __iter__(self):
            return iter(self.v)

        def __len__(self):
            return len(self.v)

    assert rows_bytes([Row(1, "a"), Row(2, "b")]) == b'[1,"a"]\n[2,"b"]\n'
    assert rows_bytes([{"a": 1, "b": 2}], ["b", "a"]) == b"[2,1]\n"


# --- the same values from three engines hash the same ---------------------------------

ROWS = [
    (1, "alpha", None, dt.date(2024, 1, 5)),
    (2, None, 42, dt.date(1999, 12, 31)),
    (3, "ünïcode ✓", -7, None),
]
QUERY = "SELECT id, name, qty, day FROM {t} ORDER BY id"


def _capture(sink, cursor, sql, dialect):
    cursor.execute(sql)
    columns = [d[0] for d in cursor.description]
    return capture_sql_execution(
        sink,
        columns=columns,
        rows=iter(cursor.fetchone, None),
        sql=sql,
        database=dialect,
        dialect=dialect,
        elapsed_ms=0,
    )


def _sqlite_capture(sink, sql_template):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER, name TEXT, qty INTEGER, day TEXT)")
    conn.executemany(
        "INSERT INTO t VALUES (?,?,?,?)",
        [(a, b, c, d.isoformat() if d else None) for a, b, c, d in ROWS],
    )
    return _capture(sink, conn.cursor(), sql_template.format(t="t"), "sqlite")


def test_equal_values_from_sqlite_postgresql_and_mariadb_hash_the_same(sink, pg_conn, maria_conn):
    table = "ev_canon_" + uuid.uuid4().hex[:10]
    pg, my = pg_conn.cursor(), maria_conn.cursor()
    pg.execute(f"CREATE TABLE {table} (id integer, name text, qty bigint, day date)")
    my.execute(
        f"CREATE TABLE {table} (id int, name varchar(50), qty bigint, day date) CHARACTER SET utf8mb4"
    )
    try:
        pg.executemany(f"INSERT INTO {table} VALUES (%s,%s,%s,%s)", ROWS)
        my.executemany(f"INSERT INTO {table} VALUES (%s,%s,%s,%s)", ROWS)
        lite = _sqlite_capture(sink, QUERY)
        on_pg = _capture(sink, pg, QUERY.format(t=table), "postgresql")
        on_my = _capture(sink, my, QUERY.format(t=table), "mysql")
        assert lite.sha256 == on_pg.sha256 == on_my.sha256
        assert lite.preview == on_pg.preview == on_my.preview
        assert on_pg.preview[0] == [1, "alpha", None, "2024-01-05"]
        # aggregates: PostgreSQL sum(bigint) and MariaDB SUM() are Decimal, SQLite's an int
        agg = "SELECT SUM(qty) AS total, COUNT(*) AS n FROM {t}"
        totals = {
            _capture(sink, c, agg.format(t=t), d).sha256
            for c, t, d in ((pg, table, "postgresql"), (my, table, "mysql"))
        }
        totals.add(_sqlite_capture(sink, agg).sha256)
        assert len(totals) == 1
    finally:
        pg.execute(f"DROP TABLE IF EXISTS {table}")
        my.execute(f"DROP TABLE IF EXISTS {table}")


def test_numpy_and_pandas_values_take_their_python_spelling():
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    batch = [
        (
            np.int64(3),
            np.float64(0.5),
            np.float64("nan"),
            pd.Timestamp("2024-01-05 10:00", tz="UTC"),
            np.array([1, 2]),
            np.bool_(True),
        )
    ]
    expected = b'[3,0.5,{"$float":"NaN"},"2024-01-05T10:00:00+00:00",[1,2],true]\n'
    assert rows_bytes(batch) == expected == _slow(batch)


def test_a_dataframe_result_is_kept_as_row_objects(sink):
    pd = pytest.importorskip("pandas")
    from assay.kernel.evidence import capture_python_execution

    frame = pd.DataFrame({"k": ["a", "b"], "v": [1.5, None]})
    record = capture_python_execution(
        sink, code="", result=frame, result_set=True, stdout="", stderr="", status="succeeded"
    )
    assert record.columns == ["k", "v"] and record.row_count == 2
    assert record.preview == [["a", 1.5], ["b", {"$float": "NaN"}]]
