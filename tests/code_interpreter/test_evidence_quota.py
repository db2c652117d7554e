"""code_interpreter under the run's evidence quota (issue 31 item 9): produced files past it are not
captured (and say why), and a call whose record itself does not fit fails with ARTIFACT_QUOTA_EXCEEDED."""

from __future__ import annotations

from assay.kernel.evidence import ArtifactSink, EvidenceSettings

WRITE = (
    "import os\nos.makedirs('out', exist_ok=True)\n"
    "for i in range(3):\n    open(f'out/part{i}.bin', 'wb').write(os.urandom(400_000))\n"
    "REPORT_RESULT = 'written'"
)


def _run_with_quota(kernel, run_max_bytes: int):
    run = kernel.new_run()
    run.artifacts = ArtifactSink(
        run.artifacts.catalog, run.run_id, EvidenceSettings(run_max_bytes=run_max_bytes)
    )
    return run


def test_produced_files_past_the_runs_quota_are_not_captured_and_say_why(podman_kernel):
    run = _run_with_quota(podman_kernel, 1_000_000)
    try:
        result = podman_kernel.call_tool("code_interpreter", {"code": WRITE}, run=run)
        assert result.success, result.content
        assert [f["name"] for f in result.data["files"]] == ["part0.bin", "part1.bin"]
        assert (
            len(result.data["not_captured"]) == 1
            and "evidence quota" in result.data["not_captured"][0]
        )
        assert sum(r.byte_size for r in run.artifacts.records()) <= 1_000_000
    finally:
        run.close()


def test_a_call_whose_record_does_not_fit_fails_with_the_quota_code(podman_kernel):
    run = _run_with_quota(podman_kernel, 100)
    try:
        result = podman_kernel.call_tool(
            "code_interpreter", {"code": "REPORT_RESULT = list(range(100))"}, run=run
        )
        assert not result.success and result.error_code == "ARTIFACT_QUOTA_EXCEEDED"
        assert run.artifacts.records() == []
    finally:
        run.close()
