"""load_artifact's table reader (the runner's code, run on the host): the fast path equals the exact one.

The content files are real captures made by the evidence store, so the reader
is checked against the format it will meet in the sandbox.
"""

from __future__ import annotations

import decimal
from pathlib import Path

import pytest

from assay.plugins.code_interpreter import sandbox_tables as runner


@pytest.fixture
def sink(tmp_path):
    from assay import Kernel, Settings

    kernel = Kernel(settings=Settings.from_env(home=str(tmp_path)))
    run = kernel.new_run()
    yield run.artifacts
    run.close()


def _captured(sink, columns, rows) -> Path:
    from assay.kernel.evidence import capture_sql_execution, open_verified_content

    record = capture_sql_execution(
        sink,
        columns=columns,
        rows=rows,
        sql="select",
        database="t",
        dialect="sqlite",
        elapsed_ms=0.0,
    )
    _, content = open_verified_content(sink, record.artifact_id)
    assert isinstance(content, Path)
    return content


def _cells(frame):
    return frame.astype(object).where(frame.notna(), None).values.tolist()


def test_plain_rows_take_the_fast_path_and_match_exact(sink, monkeypatch):
    import pandas as pd

    rows = [[i, f"s{i % 3}", i * 0.5, i % 2 == 0, None if i % 4 == 0 else i] for i in range(500)]
    path = _captured(sink, ["id", "name", "half", "even", "maybe"], rows)
    exact = runner._exact_table(
        pd, path.read_bytes().split(b"\n", 1)[1], ["id", "name", "half", "even", "maybe"]
    )
    calls = []
    original = runner._exact_table
    monkeypatch.setattr(runner, "_exact_table", lambda *a: calls.append(1) or original(*a))
    fast = runner.read_table(str(path), [])
    assert calls == []  # no fallback
    assert list(fast.columns) == ["id", "name", "half", "even", "maybe"]
    assert _cells(fast) == _cells(exact)
    assert str(fast["id"].dtype) == "int64" and str(fast["half"].dtype) == "float64"
    assert str(fast["even"].dtype) == "bool"


@pytest.mark.parametrize(
    "text",
    [
        'say "hi"',
        "a,b",
        "back\\slash",
        "two\nlines",
        "caf\u00e9 \u2713",
        "null",
        "true",
        "",
        "[x]",
        "{y}",
        "123",
    ],
)
def test_awkward_strings_read_exactly(sink, text):
    rows = [[1, text], [2, "plain"], [3, None]]
    frame = runner.read_table(str(_captured(sink, ["id", "s"], rows)), [])
    assert _cells(frame) == [[1, text], [2, "plain"], [3, None]]


def test_tagged_values_are_decoded(sink):
    rows = [[decimal.Decimal("2.50"), float("nan")], [decimal.Decimal("3"), 1.5]]
    frame = runner.read_table(str(_captured(sink, ["d", "f"], rows)), [])
    assert frame["d"].tolist() == [2.5, 3]
    assert frame["f"].isna().tolist() == [True, False]


def test_empty_result_keeps_its_columns(sink):
    frame = runner.read_table(str(_captured(sink, ["a", "b"], [])), [])
    assert list(frame.columns) == ["a", "b"] and len(frame) == 0
