"""Evidence bytes are capped per run (issue 31 item 9): 54 MB of produced files per call, every call,
used to be kept without limit. A capture past the quota fails with ARTIFACT_QUOTA_EXCEEDED and keeps
nothing; what was captured before stays. The service's per-owner quota is in tests/service/test_api.py."""

from __future__ import annotations

import threading
import uuid

import pytest

from assay.kernel.evidence import (
    ArtifactQuotaExceeded,
    ArtifactSink,
    EvidenceSettings,
    ProducedFile,
    Quota,
    capture_file,
    capture_python_execution,
    capture_rows,
)


def _sink(kernel, run_max_bytes: int) -> ArtifactSink:
    return ArtifactSink(
        kernel.evidence.catalog,
        "run_" + uuid.uuid4().hex[:16],
        EvidenceSettings(run_max_bytes=run_max_bytes),
    )


def test_a_capture_past_the_runs_quota_fails_with_its_code_and_keeps_nothing(kernel):
    sink = _sink(kernel, 10_000)
    first = capture_file(
        sink, data=b"a" * 6_000, name="a.bin", media_type="application/octet-stream"
    )
    with pytest.raises(ArtifactQuotaExceeded) as caught:
        capture_file(sink, data=b"b" * 6_000, name="b.bin", media_type="application/octet-stream")
    assert caught.value.code == "ARTIFACT_QUOTA_EXCEEDED"
    assert caught.value.details == {"scope": "run", "limit": 10_000, "used": 6_000, "size": 6_000}
    assert [r.artifact_id for r in sink.records()] == [first.artifact_id]
    assert sink.remaining() == 4_000


def test_rows_and_python_captures_count_against_the_same_quota(kernel):
    sink = _sink(kernel, 4_000)
    capture_rows(sink, kind="sql", columns=["x"], rows=[[i] for i in range(300)])  # ~1.2 KB
    files = [ProducedFile(name="big.csv", data=b"x" * 3_000, media_type="text/csv")]
    with pytest.raises(ArtifactQuotaExceeded):  # not wrapped into ARTIFACT_CAPTURE_FAILED
        capture_python_execution(
            sink,
            code="...",
            result=1,
            result_set=True,
            stdout="",
            stderr="",
            files=files,
            status="succeeded",
        )
    assert [r.kind for r in sink.records()] == [
        "sql"
    ]  # neither the file nor the execution's record


def test_another_quota_added_to_the_sink_is_enforced_too(kernel):
    sink = _sink(kernel, 1 << 30)
    sink.add_quota(Quota("owner", 1_000, lambda: 900, "ASSAY_SERVICE_OWNER_MAX_ARTIFACT_BYTES"))
    with pytest.raises(ArtifactQuotaExceeded) as caught:
        capture_file(sink, data=b"c" * 200, name="c.bin", media_type="application/octet-stream")
    assert (
        caught.value.details["scope"] == "owner"
        and "ASSAY_SERVICE_OWNER_MAX_ARTIFACT_BYTES" in caught.value.hint
    )


def test_captures_at_once_in_one_run_cannot_both_take_the_last_room(kernel):
    sink = _sink(kernel, 10_000)
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def one(i: int) -> None:
        barrier.wait()
        try:
            capture_file(
                sink,
                data=bytes([65 + i]) * 4_000,
                name=f"{i}.bin",
                media_type="application/octet-stream",
            )
            outcomes.append("kept")
        except ArtifactQuotaExceeded:
            outcomes.append("refused")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["kept", "kept", "refused", "refused"]
    assert sum(r.byte_size for r in sink.records()) == 8_000


def test_a_capture_reserving_while_another_writes_its_record_is_not_charged_twice(
    kernel, monkeypatch
):
    """The record written and the hold released are one step: a capture that reserves in between
    (it waits for that step) sees the first capture's bytes once, as used, not also as pending."""
    sink = _sink(kernel, 10_000)
    add = sink.catalog.add
    outcomes: list[str] = []
    about_to_reserve = threading.Event()

    def second() -> None:
        about_to_reserve.set()
        try:
            capture_file(sink, data=b"b" * 4_000, name="b.bin", media_type="text/plain")
            outcomes.append("kept")
        except ArtifactQuotaExceeded:
            outcomes.append("refused")

    other = threading.Thread(target=second)

    def add_then_let_another_reserve(record):
        add(record)
        if not other.is_alive() and not outcomes:
            other.start()
            about_to_reserve.wait()
            other.join(timeout=1.0)  # blocked on the sink while this record is being kept

    monkeypatch.setattr(sink.catalog, "add", add_then_let_another_reserve)
    capture_file(sink, data=b"a" * 4_000, name="a.bin", media_type="text/plain")
    other.join()
    assert outcomes == ["kept"]
    assert sum(r.byte_size for r in sink.records()) == 8_000


def test_the_room_left_counts_a_capture_being_recorded_meanwhile_once(kernel):
    """``remaining()`` reads the pending holds and the quotas' use in one step: a capture recorded
    while it asks the catalog (it waits for that step) is counted once, not as pending and used."""
    sink = _sink(kernel, 10_000)
    held = [4_000]
    sink.reserve(4_000)  # pending: 4,000
    first = capture_file(sink, data=b"a" * 10, name="a.bin", media_type="text/plain")  # used: 10
    record = first.model_copy(update={"artifact_id": "art_" + uuid.uuid4().hex, "byte_size": 4_000})
    run_quota = sink.quotas[0]
    recorder = threading.Thread(target=sink.record, args=([record], held))

    def used_while_a_record_is_written() -> int:
        if not recorder.is_alive() and held:
            recorder.start()
            recorder.join(timeout=0.5)  # blocked on the sink while the room is being read
        return run_quota.used()

    sink.quotas[0] = Quota("run", 10_000, used_while_a_record_is_written, run_quota.setting)
    left = sink.remaining()
    recorder.join()
    assert left == 10_000 - 10 - 4_000
    assert sink.remaining() == 10_000 - 10 - 4_000
