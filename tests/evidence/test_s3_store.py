"""The S3-compatible store, against a moto server started on 127.0.0.1 by the fixtures."""

from __future__ import annotations

import pytest

from assay.kernel.evidence import (
    ArtifactFileMissing,
    ArtifactIntegrityFailed,
    capture_file,
    capture_sql_execution,
    evidence_manifest,
    open_verified_content,
    read_artifact_result,
)
from assay.kernel.evidence.maintenance import collect_garbage, verify_all
from tests.evidence.conftest import make_kernel

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog


def _client(env):
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=env["endpoint"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def _capture(sink, n=300, sql="select * from t"):
    return capture_sql_execution(
        sink,
        columns=["id", "v"],
        rows=((i, f"v{i}") for i in range(n)),
        sql=sql,
        database="db",
        dialect="sqlite",
        elapsed_ms=0,
    )


def test_s3_store_is_chosen_by_setting_and_round_trips(s3_env):
    sink = make_kernel().new_run().artifacts
    assert sink.store.name == "s3"
    record = _capture(sink)
    key = f"assay/content/sha256/{record.sha256[:2]}/{record.sha256}"
    head = _client(s3_env).head_object(Bucket=s3_env["bucket"], Key=key)
    assert head["ContentLength"] == record.byte_size
    assert read_artifact_result(sink, record.artifact_id, {"path": [216]}).rows == [[216, "v216"]]
    rec, data = open_verified_content(sink, record.artifact_id)
    assert isinstance(data, bytes) and len(data) == record.byte_size
    assert not list((sink.store.staging_dir).glob("*.partial"))


def test_s3_identical_content_is_stored_once(s3_env):
    sink = make_kernel().new_run().artifacts
    a, b = _capture(sink), _capture(sink, sql="another query")
    assert a.sha256 == b.sha256 and a.artifact_id != b.artifact_id
    keys = _client(s3_env).list_objects_v2(Bucket=s3_env["bucket"], Prefix="assay/content/")[
        "KeyCount"
    ]
    assert keys == 1


def test_a_second_worker_reads_evidence_captured_by_the_first(s3_env, tmp_path):
    first = make_kernel().new_run()
    record = _capture(first.artifacts)
    chart = capture_file(
        first.artifacts, data=b"\x89PNG fake", name="c.png", media_type="image/png", kind="chart"
    )
    other = make_kernel(home=tmp_path / "worker2")  # its own local catalog, same bucket
    assert read_artifact_result(other, record.artifact_id, {"path": [-1, "v"]}).value == "v299"
    manifest = evidence_manifest(other.new_run().artifacts.catalog, first.run_id)
    assert [e["artifact_id"] for e in manifest["artifacts"]] == [
        record.artifact_id,
        chart.artifact_id,
    ]


def test_s3_missing_and_altered_objects_are_detected(s3_env):
    sink = make_kernel().new_run().artifacts
    gone, bad = _capture(sink, 10), _capture(sink, 20)
    s3 = _client(s3_env)
    s3.delete_object(
        Bucket=s3_env["bucket"], Key=f"assay/content/sha256/{gone.sha256[:2]}/{gone.sha256}"
    )
    key = f"assay/content/sha256/{bad.sha256[:2]}/{bad.sha256}"
    body = bytearray(s3.get_object(Bucket=s3_env["bucket"], Key=key)["Body"].read())
    body[-5] ^= 1
    s3.put_object(Bucket=s3_env["bucket"], Key=key, Body=bytes(body))
    with pytest.raises(ArtifactFileMissing):
        read_artifact_result(sink, gone.artifact_id)
    with pytest.raises(ArtifactIntegrityFailed):
        read_artifact_result(sink, bad.artifact_id)
    report = verify_all(sink.catalog)
    assert report.missing == [gone.artifact_id] and report.corrupt == [bad.artifact_id]


def test_s3_gc_removes_unreferenced_objects(s3_env):
    sink = make_kernel().new_run().artifacts
    kept = _capture(sink)
    s3 = _client(s3_env)
    orphan = "cd" * 32
    s3.put_object(Bucket=s3_env["bucket"], Key=f"assay/content/sha256/cd/{orphan}", Body=b"x")
    report = collect_garbage(sink.catalog, grace_s=0)
    assert report.removed == [orphan]
    assert sink.store.exists(kept.sha256) and not sink.store.exists(orphan)


def test_s3_store_without_bucket_says_how_to_configure(monkeypatch):
    monkeypatch.setenv("ASSAY_ARTIFACT_STORE", "s3")
    monkeypatch.delenv("ASSAY_ARTIFACT_S3_BUCKET", raising=False)
    from assay.kernel.evidence import ArtifactError

    with pytest.raises(ArtifactError) as info:
        make_kernel().new_run()
    assert (
        info.value.code == "ARTIFACT_STORE_UNAVAILABLE"
        and "ASSAY_ARTIFACT_S3_BUCKET" in info.value.hint
    )


def test_unknown_store_name_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("ASSAY_ARTIFACT_STORE", "floppy")
    from assay.kernel.evidence import ArtifactError

    with pytest.raises(ArtifactError) as info:
        make_kernel().new_run()
    assert info.value.code == "ARTIFACT_STORE_UNKNOWN" and "local" in info.value.hint


def test_s3_gc_keeps_content_that_only_another_worker_references(s3_env, tmp_path):
    first = make_kernel().new_run().artifacts
    theirs = _capture(first, 7)
    other = make_kernel(home=tmp_path / "worker2").new_run().artifacts
    report = collect_garbage(other.catalog, grace_s=0)
    assert report.removed == [] and other.store.exists(theirs.sha256)


def test_s3_large_content_is_handed_out_as_a_verified_local_copy(s3_env):
    sink = make_kernel().new_run().artifacts
    record = capture_sql_execution(
        sink,
        columns=["i", "s"],
        rows=((i, "x" * 40) for i in range(250_000)),
        sql="q",
        database="d",
        dialect="sqlite",
        elapsed_ms=0,
    )
    assert record.byte_size > 8 << 20
    _, path = open_verified_content(sink, record.artifact_id)
    assert path.stat().st_size == record.byte_size
    path.write_bytes(b"damaged")  # a damaged cache is fetched again, never trusted
    _, again = open_verified_content(sink, record.artifact_id)
    assert again.stat().st_size == record.byte_size


def test_s3_python_capture_that_fails_half_way_leaves_no_shared_record(s3_env, monkeypatch):
    """Issue 14, item 2: a record mirror that fails takes the whole execution's records back out."""
    from assay import AssayError
    from assay.kernel.evidence import ProducedFile, capture_python_execution

    sink = make_kernel().new_run().artifacts
    store, real, calls = sink.store, sink.store.put_record, []

    def put_record(artifact_id, data):
        calls.append(artifact_id)
        real(artifact_id, data)
        if len(calls) == 2:  # the file's and the execution's mirrors are written; then it fails
            raise ConnectionError("connection reset")

    monkeypatch.setattr(store, "put_record", put_record)
    with pytest.raises(AssayError) as caught:
        capture_python_execution(
            sink,
            code="x",
            result=1,
            result_set=True,
            stdout="",
            stderr="",
            files=[ProducedFile("a.txt", b"a", "text/plain")],
            status="succeeded",
        )
    assert caught.value.code == "ARTIFACT_CAPTURE_FAILED"
    assert store.shared_record_ids(sink.run_id) == [] and all(
        store.get_record(i) is None for i in calls
    )
    assert sink.catalog.list(sink.run_id) == []
