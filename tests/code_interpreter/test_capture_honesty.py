"""Issue 14 through code_interpreter: a capture is all or nothing; an incomplete input is named."""

from __future__ import annotations

import pytest

from assay.kernel.evidence import ArtifactSink, EvidenceSettings, capture_sql_execution


@pytest.fixture
def local_run(local_kernel):
    run = local_kernel.new_run()
    yield run
    run.close()


def test_code_interpreter_capture_failure_leaves_no_file_artifact(
    local_kernel, local_run, monkeypatch
):
    store, real, calls = local_run.artifacts.store, local_run.artifacts.store.commit, []

    def commit(
        *args, **kwargs
    ):  # the produced file is published, then the execution's document fails
        calls.append(1)
        if len(calls) == 2:
            raise OSError("No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "commit", commit)
    code = "import os\nos.makedirs('out', exist_ok=True)\nopen('out/table.csv', 'w').write('a,b\\n1,2\\n')\nREPORT_RESULT = 1"
    result = local_kernel.call_tool("code_interpreter", {"code": code}, run=local_run)
    assert not result.success and result.error_code == "ARTIFACT_CAPTURE_FAILED"
    assert "table.csv" in result.message and "already ran" in result.hint
    assert (
        local_run.artifacts.catalog.list(local_run.run_id) == []
    )  # no "succeeded" file left to cite


def test_code_interpreter_warns_that_an_input_is_incomplete(local_kernel, local_run):
    small = ArtifactSink(
        local_run.artifacts.catalog, local_run.run_id, EvidenceSettings(max_bytes=2000)
    )
    record = capture_sql_execution(
        small,
        columns=["i"],
        rows=[(i,) for i in range(1000)],
        sql="SELECT i FROM t",
        database="d",
        dialect="sqlite",
        elapsed_ms=1.0,
        count_rest=True,
    )
    assert not record.complete
    code = "REPORT_RESULT = int(load_artifact(%r).i.sum())" % record.artifact_id
    result = local_kernel.call_tool(
        "code_interpreter", {"code": code, "inputs": [record.artifact_id]}, run=local_run
    )
    assert result.success, result.for_model()
    assert "INCOMPLETE" in result.content.upper() and "returned 1,000 rows" in result.content
    assert record.artifact_id in result.data["incomplete_inputs"]
