"""A local artifact this process hashed whole, unchanged since, is not hashed again on every read;
any change to the file is still caught."""

from __future__ import annotations

import os

import pytest

from assay import AssayError, Kernel
from assay.kernel.evidence import capture_sql_execution, read_artifact_result, readback

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog


@pytest.fixture
def aged(monkeypatch):
    """Make every content file count as settled (older than the racy-time margin)."""
    monkeypatch.setattr(readback, "_SETTLE_NS", -(10**18))
    readback._VERIFIED.clear()
    yield
    readback._VERIFIED.clear()


def _capture(run, n=500):
    return capture_sql_execution(
        run.artifacts,
        columns=["id", "amount"],
        rows=([i, i * 1.5] for i in range(n)),
        sql="select id, amount from t",
        database="w",
        dialect="sqlite",
        elapsed_ms=1,
    )


def _path(run, record):
    return run.artifacts.catalog.store.local_path(record.sha256)


def test_a_verified_unchanged_file_is_read_only_up_to_the_rows_asked(aged, monkeypatch):
    with Kernel().new_run() as run:
        record = _capture(run)
        read_artifact_result(run.artifacts, record.artifact_id, {"rows": [0, 5]})
        assert readback._still_verified(run.artifacts.catalog, record)
        hashed = []
        monkeypatch.setattr(
            readback.hashlib,
            "sha256",
            lambda *a: hashed.append(1) or __import__("hashlib").new("sha256", *a),
        )
        assert read_artifact_result(run.artifacts, record.artifact_id, {"rows": [2, 4]}).rows == [
            [2, 3.0],
            [3, 4.5],
        ]
        assert hashed == []


def test_a_file_changed_after_it_was_verified_is_hashed_again_and_fails(aged):
    with Kernel().new_run() as run:
        record = _capture(run)
        read_artifact_result(run.artifacts, record.artifact_id, {"rows": [0, 5]})
        path = _path(run, record)
        os.chmod(path, 0o644)
        path.write_bytes(path.read_bytes().replace(b"[1,1.5]", b"[1,9.5]"))
        with pytest.raises(AssayError) as caught:
            read_artifact_result(run.artifacts, record.artifact_id, {"rows": [0, 5]})
        assert caught.value.code == "ARTIFACT_INTEGRITY_FAILED"


def test_a_freshly_written_file_is_not_trusted_by_its_signature():
    readback._VERIFIED.clear()
    with Kernel().new_run() as run:
        record = _capture(run)
        read_artifact_result(run.artifacts, record.artifact_id, {"rows": [0, 5]})
        assert not readback._still_verified(run.artifacts.catalog, record)
