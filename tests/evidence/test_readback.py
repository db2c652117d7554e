"""Reading evidence back: selectors, budgets, and the integrity errors."""

from __future__ import annotations

import os

import pytest

from assay.kernel.evidence import (
    ArtifactFileMissing,
    ArtifactIntegrityFailed,
    ArtifactNotFound,
    ArtifactSelectorInvalid,
    capture_file,
    capture_python_execution,
    capture_sql_execution,
    open_verified_content,
    read_artifact_result,
)

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog


@pytest.fixture
def table(sink):
    rows = [(i, f"n{i}", {"tags": ["a", "b"], "depth": {"k": i}}) for i in range(300)]
    return capture_sql_execution(
        sink,
        columns=["id", "name", "meta"],
        rows=rows,
        sql="select 1",
        database="db",
        dialect="sqlite",
        elapsed_ms=1,
    )


def test_field_selects_one_column(sink, table):
    sel = read_artifact_result(sink, table.artifact_id, {"field": "name", "rows": [0, 3]})
    assert sel.columns == ["name"] and sel.rows == [["n0"], ["n1"], ["n2"]]


def test_rows_range_and_negative_rows(sink, table):
    assert read_artifact_result(sink, table.artifact_id, {"rows": [10, 12]}).rows[0][0] == 10
    tail = read_artifact_result(sink, table.artifact_id, {"rows": [-2, None]})
    assert [r[0] for r in tail.rows] == [298, 299] and tail.start == 298
    assert read_artifact_result(sink, table.artifact_id, {"rows": "5:7"}).start == 5


def test_path_reaches_nested_keys_and_negative_rows(sink, table):
    assert (
        read_artifact_result(sink, table.artifact_id, {"path": [-1, "meta", "depth", "k"]}).value
        == 299
    )
    assert read_artifact_result(sink, table.artifact_id, {"path": "7.meta.tags.1"}).value == "b"
    ranged = read_artifact_result(sink, table.artifact_id, {"path": ["3:5", "name"]})
    assert ranged.rows == [["n3"], ["n4"]]


def test_default_read_is_bounded_and_says_it_truncated(sink, table):
    sel = read_artifact_result(sink, table.artifact_id, max_rows=20)
    assert len(sel.rows) == 20 and sel.truncated and sel.total_rows == 300
    small = read_artifact_result(
        sink, table.artifact_id, {"rows": [0, 300]}, max_rows=300, max_chars=2_000
    )
    assert small.truncated and 0 < len(small.rows) < 300
    assert "truncated" in small.text()


@pytest.mark.parametrize(
    "selectors",
    [
        {"field": "nope"},
        {"path": [300]},
        {"path": [-301]},
        {"path": [0, "nope"]},
        {"rows": [5, 2]},
        {"rows": "a:b"},
        {"unknown": 1},
        {"path": ["name"]},
        {"path": [0, "meta", "missing"]},
    ],
)
def test_invalid_selectors_are_rejected_with_a_hint(sink, table, selectors):
    with pytest.raises(ArtifactSelectorInvalid) as info:
        read_artifact_result(sink, table.artifact_id, selectors)
    assert info.value.code == "ARTIFACT_SELECTOR_INVALID" and info.value.hint


def test_unknown_id_is_not_found(sink):
    with pytest.raises(ArtifactNotFound) as info:
        read_artifact_result(sink, "art_doesnotexist")
    assert info.value.code == "ARTIFACT_NOT_FOUND"


def test_deleted_content_file_is_reported_missing(sink, table):
    path = sink.store.local_path(table.sha256)
    os.chmod(path.parent, 0o755)
    path.unlink()
    with pytest.raises(ArtifactFileMissing) as info:
        read_artifact_result(sink, table.artifact_id)
    assert info.value.code == "ARTIFACT_FILE_MISSING"
    with pytest.raises(ArtifactFileMissing):
        open_verified_content(sink, table.artifact_id)


def _flip_one_byte(path, offset):
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_content_altered_by_one_byte_fails_integrity(sink, table):
    path = sink.store.local_path(table.sha256)
    _flip_one_byte(path, path.stat().st_size - 10)  # far from the rows read
    with pytest.raises(ArtifactIntegrityFailed) as info:
        read_artifact_result(sink, table.artifact_id, {"rows": [0, 1]})
    assert info.value.code == "ARTIFACT_INTEGRITY_FAILED"
    with pytest.raises(ArtifactIntegrityFailed):
        open_verified_content(sink, table.artifact_id)


def test_altered_python_and_file_artifacts_fail_integrity(sink):
    py = capture_python_execution(
        sink, code="", result=[1, 2, 3], result_set=True, stdout="", stderr="", status="succeeded"
    )
    f = capture_file(sink, data=b"hello world", name="a.txt", media_type="text/plain")
    for record in (py, f):
        _flip_one_byte(sink.store.local_path(record.sha256), 3)
        with pytest.raises(ArtifactIntegrityFailed):
            read_artifact_result(sink, record.artifact_id)


def test_open_verified_content_returns_the_exact_bytes(sink):
    record = capture_file(sink, data=b"a,b\n1,2\n", name="x.csv", media_type="text/csv")
    rec, content = open_verified_content(sink, record.artifact_id)
    assert rec.artifact_id == record.artifact_id and content.read_bytes() == b"a,b\n1,2\n"
    text = read_artifact_result(sink, record.artifact_id)
    assert text.value["text"] == "a,b\n1,2\n"


def test_reading_works_from_kernel_catalog_run_and_sink(kernel, sink, table):
    run = kernel.new_run()
    for source in (sink, sink.catalog, kernel, run):
        assert read_artifact_result(source, table.artifact_id, {"path": [1, "id"]}).value == 1


def test_large_artifact_is_verified_while_streaming(sink):
    n = 200_000
    record = capture_sql_execution(
        sink,
        columns=["i", "s"],
        rows=((i, "v%06d" % i) for i in range(n)),
        sql="q",
        database="d",
        dialect="sqlite",
        elapsed_ms=0,
    )
    assert record.byte_size > 3 * (1 << 20)  # spans several read chunks
    assert read_artifact_result(sink, record.artifact_id, {"path": [123_456]}).rows == [
        [123_456, "v123456"]
    ]
    assert read_artifact_result(sink, record.artifact_id, {"path": [-1]}).rows == [
        [n - 1, "v%06d" % (n - 1)]
    ]
