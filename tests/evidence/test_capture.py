"""Capturing results: previews, counts, empty and failed results, dedupe, size guard, honesty."""

from __future__ import annotations

import json
import os
import tracemalloc

import pytest

from assay import RunContext, tool
from assay.kernel.evidence import (
    ARTIFACT_CAPTURE_FAILED,
    ArtifactCaptureFailed,
    ArtifactIncomplete,
    ProducedFile,
    RowBatches,
    capture_file,
    capture_python_execution,
    capture_sql_execution,
    dumps,
    read_artifact_result,
    render_preview,
)
from tests.evidence.conftest import make_kernel

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog


def _sql(sink, columns, rows, **kw):
    base = dict(sql="select * from t", database="db", dialect="sqlite", elapsed_ms=3.5)
    base.update(kw)
    return capture_sql_execution(sink, columns=columns, rows=rows, **base)


def test_key_row_217_of_300_is_in_the_artifact_not_only_the_preview(sink):
    rows = ((i, f"customer-{i}", i * 10) for i in range(1, 301))  # row i holds id i
    record = _sql(sink, ["id", "name", "amount"], rows)
    shown = render_preview(record, max_rows=50)
    assert "| 1 | customer-1 | 10 |" in shown and "| 50 | customer-50 | 500 |" in shown
    assert "customer-51" not in shown and "showing rows 1-50 of 300" in shown
    assert record.row_count == 300 and len(record.preview) == 100 and record.preview_truncated
    selected = read_artifact_result(sink, record.artifact_id, {"path": [216]})
    assert selected.rows == [[217, "customer-217", 2170]] and selected.value == [
        217,
        "customer-217",
        2170,
    ]
    assert read_artifact_result(sink, record.artifact_id, {"path": "216.amount"}).value == 2170


def test_wide_three_row_table_gets_a_truncated_preview_and_a_complete_artifact(sink):
    big = "x" * 200_000
    rows = [(i, big + str(i), big) for i in range(3)]
    record = _sql(sink, ["id", "t1", "t2"], rows)
    assert record.row_count == 3 and record.complete
    assert record.preview_truncated
    assert len(dumps(record.preview).encode()) <= 256 * 1024
    assert record.preview[0][0] == 0 and record.preview[0][1].endswith("…")
    full = read_artifact_result(sink, record.artifact_id, {"path": [2, "t1"]}, max_chars=1_000_000)
    assert full.value == big + "2" and not full.truncated
    assert record.byte_size > 3 * 400_000


def test_zero_rows_with_columns_is_a_succeeded_empty_result(sink):
    record = _sql(sink, ["id", "name"], iter(()))
    assert (record.status, record.row_count, record.columns, record.preview) == (
        "succeeded",
        0,
        ["id", "name"],
        [],
    )
    assert not record.preview_truncated and record.complete
    assert read_artifact_result(sink, record.artifact_id).rows == []


def test_zero_rows_without_columns(sink):
    record = _sql(sink, [], [], sql="create temp table x(a int)")
    assert (record.status, record.row_count, record.columns) == ("succeeded", 0, [])


def test_failed_execution_is_recorded_as_failed_with_its_error(sink):
    record = _sql(sink, [], [], status="failed", error="no such table: t")
    assert record.status == "failed" and record.provenance["error"] == "no such table: t"
    assert (
        record.provenance["sql"] == "select * from t" and record.provenance["dialect"] == "sqlite"
    )
    assert sink.catalog.get(record.artifact_id).status == "failed"


def test_no_sink_captures_nothing_and_returns_none():
    assert _sql(None, ["a"], [(1,)]) is None
    assert (
        capture_python_execution(
            None, code="1", result=1, result_set=True, stdout="", stderr="", status="succeeded"
        )
        is None
    )
    assert capture_file(None, data=b"x", name="a", media_type="text/plain") is None


def test_each_capture_gets_its_own_id_but_identical_content_is_stored_once(sink, home):
    a = _sql(sink, ["a"], [(1,), (2,)])
    b = _sql(sink, ["a"], [(1,), (2,)], sql="select a from other")
    assert a.artifact_id != b.artifact_id and a.sha256 == b.sha256
    files = [f for f in (home / "artifacts" / "content").rglob("*") if f.is_file()]
    assert len(files) == 1 and files[0].name == a.sha256
    assert a.content_uri == "artifact://sha256/" + a.sha256


def test_content_is_json_lines_with_a_header(sink):
    record = _sql(sink, ["n", "s"], [(1, "a"), (None, "b")])
    path = sink.store.local_path(record.sha256)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == {"columns": ["n", "s"]}
    assert [json.loads(x) for x in lines[1:]] == [[1, "a"], [None, "b"]]
    assert not os.access(path, os.W_OK) or os.geteuid() == 0  # published read-only


def test_memory_stays_flat_when_rows_grow(sink):
    def rows(n):
        return ((i, "name-%d" % i, i * 0.5, None) for i in range(n))

    def peak(n):
        tracemalloc.start()
        _sql(sink, ["a", "b", "c", "d"], rows(n))
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    small, large = peak(20_000), peak(200_000)
    assert large < small * 1.5 + 2_000_000, (small, large)


def test_size_guard_stops_the_capture_and_says_incomplete(monkeypatch):
    monkeypatch.setenv("ASSAY_ARTIFACT_MAX_BYTES", "10000")
    k = make_kernel()
    sink = k.new_run().artifacts
    consumed = []

    def rows():
        for i in range(100_000):
            consumed.append(i)
            yield (i, "row %d" % i)

    record = _sql(sink, ["i", "s"], rows())
    assert not record.complete and 0 < record.row_count < 1000
    assert (
        record.byte_size <= 10_000
        and "ASSAY_ARTIFACT_MAX_BYTES" in record.provenance["incomplete_reason"]
    )
    assert len(consumed) < 100_000  # it stopped reading
    # the last *kept* row, by its index: "[-1, None]" (the last row) is refused on an incomplete artifact
    back = read_artifact_result(
        sink, record.artifact_id, {"rows": [record.row_count - 1, record.row_count]}
    )
    assert back.rows == [[record.row_count - 1, "row %d" % (record.row_count - 1)]]
    assert not back.complete and "INCOMPLETE" in back.note
    with pytest.raises(ArtifactIncomplete):
        read_artifact_result(sink, record.artifact_id, {"rows": [-1, None]})
    assert "INCOMPLETE" in render_preview(record)


def test_a_row_iterator_that_raises_becomes_capture_failed_and_leaves_nothing(sink, home):
    def rows():
        yield (1,)
        raise ConnectionError("server closed the connection")

    with pytest.raises(ArtifactCaptureFailed) as info:
        _sql(sink, ["a"], rows())
    err = info.value
    assert err.code == ARTIFACT_CAPTURE_FAILED and "server closed" in err.message
    assert "already ran" in err.hint and "not re-run" in err.hint
    assert sink.catalog.count() == 0
    assert not list((home / "artifacts" / "tmp").glob("*.partial"))


def test_store_that_cannot_be_written_becomes_capture_failed(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the store's directory should be")
    k = make_kernel(home=blocker)
    with pytest.raises(ArtifactCaptureFailed) as info:
        _sql(k.new_run().artifacts, ["a"], [(1,)])
    assert info.value.code == "ARTIFACT_CAPTURE_FAILED"


@tool
def failing_query(run: RunContext) -> dict:
    """Runs a query whose rows break half-way."""

    def rows():
        yield (1,)
        raise RuntimeError("cursor died")

    return _sql(run.artifacts, ["a"], rows()).ref().model_dump()


def test_tool_result_carries_capture_failed_not_a_traceback(kernel):
    kernel.registry("tools").add("failing_query", failing_query, "test")
    result = kernel.call_tool("failing_query", {}, run=kernel.new_run())
    assert not result.success and result.error_code == "ARTIFACT_CAPTURE_FAILED"
    assert "do not re-run" in result.hint and "cursor died" in result.message


def test_python_result_not_set_differs_from_an_assigned_none(sink):
    unset = capture_python_execution(
        sink, code="x = 1", result=None, result_set=False, stdout="", stderr="", status="succeeded"
    )
    assigned = capture_python_execution(
        sink,
        code="REPORT_RESULT = None",
        result=None,
        result_set=True,
        stdout="",
        stderr="",
        status="succeeded",
    )
    assert unset.provenance["result_set"] is False and assigned.provenance["result_set"] is True
    assert unset.sha256 != assigned.sha256
    assert "did not set REPORT_RESULT" in read_artifact_result(sink, unset.artifact_id).note
    assert read_artifact_result(sink, assigned.artifact_id).value is None


def test_python_capture_keeps_result_output_and_files(sink):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    record = capture_python_execution(
        sink,
        code="REPORT_RESULT = rows",
        result=[{"k": "a", "v": 1.5}, {"k": "b", "v": float("nan")}],
        result_set=True,
        stdout="done\n",
        stderr="",
        status="succeeded",
        elapsed_ms=12.0,
        files=[ProducedFile("chart.png", png, "image/png")],
        inputs=["art_x"],
    )
    assert record.kind == "python" and record.row_count == 2 and record.columns == ["k", "v"]
    assert record.result[1]["v"] == {"$float": "NaN"} and record.provenance["inputs"] == ["art_x"]
    chart = sink.catalog.get(record.provenance["files"][0])
    assert (chart.kind, chart.media_type, chart.name, chart.byte_size) == (
        "chart",
        "image/png",
        "chart.png",
        len(png),
    )
    assert read_artifact_result(sink, record.artifact_id, {"path": [-1, "k"]}).value == "b"


def test_failed_python_execution_is_recorded_as_failed(sink):
    record = capture_python_execution(
        sink,
        code="1/0",
        result=None,
        result_set=False,
        stdout="",
        stderr="ZeroDivisionError",
        status="failed",
        error="ZeroDivisionError",
    )
    assert record.status == "failed" and record.provenance["error"] == "ZeroDivisionError"


def test_capture_file_streams_a_binary_stream(sink, tmp_path):
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(3 * 1024 * 1024 + 7))
    with open(src, "rb") as fh:
        record = capture_file(sink, data=fh, name="big.bin", media_type="application/octet-stream")
    assert record.byte_size == src.stat().st_size and record.kind == "file"
    assert sink.store.local_path(record.sha256).read_bytes() == src.read_bytes()


def test_record_ref_points_at_the_artifact(sink):
    record = _sql(sink, ["a"], [(1,)])
    ref = record.ref()
    assert (ref.artifact_id, ref.kind, ref.row_count, ref.uri) == (
        record.artifact_id,
        "sql",
        1,
        record.content_uri,
    )


def test_file_over_the_size_guard_is_kept_cut_and_marked_incomplete(monkeypatch):
    monkeypatch.setenv("ASSAY_ARTIFACT_MAX_BYTES", "4096")
    sink = make_kernel().new_run().artifacts
    record = capture_file(sink, data=b"z" * 10_000, name="big.txt", media_type="text/plain")
    assert (
        not record.complete
        and record.byte_size == 4096
        and "MAX_BYTES" in record.provenance["incomplete_reason"]
    )


def test_kernel_new_run_attaches_a_sink_on_the_default_local_store():
    from assay import Kernel

    kernel = Kernel()  # entry points, as the product runs
    run = kernel.new_run()
    assert run.artifacts is not None and run.artifacts.store.name == "local"
    assert run.artifacts.run_id == run.run_id
    assert kernel.new_run(capture=False).artifacts is None
    assert kernel.provenance("artifact_stores", "local") == "local_store"


def test_store_none_switches_capture_off_honestly(monkeypatch):
    monkeypatch.setenv("ASSAY_ARTIFACT_STORE", "none")
    kernel = make_kernel()
    run = kernel.new_run()
    assert run.artifacts is None and _sql(run.artifacts, ["a"], [(1,)]) is None
    result = kernel.call_tool("read_artifact_result", {"artifact_id": "art_x"}, run=run)
    assert result.error_code == "ARTIFACT_STORE_UNAVAILABLE"


def test_memory_does_not_grow_with_the_row_count_of_very_wide_rows(sink):
    cell = "w" * (2 << 20)  # 2 MiB per row

    def peak(n):
        tracemalloc.start()
        record = _sql(sink, ["i", "text"], ((i, cell) for i in range(n)))
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert record.row_count == n
        return top, record.byte_size

    few, _ = peak(5)
    many, size = peak(40)
    # one row at a time (orjson reserves a few times a string's size while writing it)
    assert many < few * 1.2 + (1 << 20) and many < size / 2, (few, many, size)


def test_rows_handed_over_in_a_drivers_batches_store_the_same_bytes(sink):
    rows = [(i, "row %d" % i, i * 0.5) for i in range(20_000)]
    cuts = [
        0,
        1,
        1,
        4096,
        4096,
        15_000,
        20_000,
    ]  # an empty batch, one row, one far over the batch size
    batches = [rows[a:b] for a, b in zip(cuts, cuts[1:])]
    handed = []

    def produced():
        for batch in batches:
            handed.append(len(batch))
            yield batch

    plain = _sql(sink, ["i", "s", "x"], iter(rows))
    batched = _sql(sink, ["i", "s", "x"], RowBatches(produced()))
    assert handed == [len(b) for b in batches]
    assert batched.sha256 == plain.sha256 and batched.row_count == plain.row_count == 20_000
    assert batched.preview == plain.preview
    assert list(RowBatches(iter(batches))) == rows  # still an iterable of rows for other consumers


def test_a_batch_that_crosses_the_size_guard_is_cut_at_a_row(monkeypatch):
    monkeypatch.setenv("ASSAY_ARTIFACT_MAX_BYTES", "10000")
    sink = make_kernel().new_run().artifacts
    record = _sql(sink, ["i", "s"], RowBatches(iter([[(i, "row %d" % i) for i in range(50_000)]])))
    assert not record.complete and 0 < record.row_count < 1000 and record.byte_size <= 10_000
    last_kept = record.row_count - 1  # by its index: "-1" is refused on an incomplete artifact
    back = read_artifact_result(sink, record.artifact_id, {"rows": [last_kept, last_kept + 1]})
    assert back.rows == [[record.row_count - 1, "row %d" % (record.row_count - 1)]]
