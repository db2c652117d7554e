"""``inputs`` name artifacts of the caller's own run, or of runs in its scope (issue 31 item 10).

Any artifact id of the store used to be accepted, so run B read run A's result
with A's id. An id outside the run's scope is answered like one that does not
exist, before anything runs; the service widens the scope to the runs of the
caller's owner (tests/service/test_api.py).
"""

from __future__ import annotations

from tests.code_interpreter.conftest import capture_query

RAN = "open('ran.txt', 'w').write('yes')"


def test_an_input_of_another_run_is_refused_like_an_unknown_id_and_nothing_runs(
    podman_kernel, sales_db
):
    owner, other = podman_kernel.new_run(), podman_kernel.new_run()
    try:
        record = capture_query(owner.artifacts, sales_db, "SELECT store, amount FROM sales")
        result = podman_kernel.call_tool(
            "code_interpreter", {"code": RAN, "inputs": [record.artifact_id]}, run=other
        )
        unknown = podman_kernel.call_tool(
            "code_interpreter", {"code": RAN, "inputs": ["art_00000000000000000000"]}, run=other
        )
        assert not result.success and result.error_code == "ARTIFACT_NOT_FOUND"
        # the same answer as for an id that does not exist: nothing says the other run's id is real
        assert result.message.replace(record.artifact_id, "ID") == unknown.message.replace(
            "art_00000000000000000000", "ID"
        )
        check = podman_kernel.call_tool(
            "code_interpreter",
            {"code": "import os\nREPORT_RESULT = os.path.exists('ran.txt')"},
            run=other,
        )
        assert check.success and check.data["result"] is False
    finally:
        owner.close()
        other.close()


def test_an_input_of_a_run_in_the_callers_scope_is_read(podman_kernel, sales_db):
    owner, other = podman_kernel.new_run(), podman_kernel.new_run()
    other.artifact_scope = lambda run_id: (
        run_id == owner.run_id
    )  # what the service sets: the owner's runs
    try:
        record = capture_query(owner.artifacts, sales_db, "SELECT store, amount FROM sales")
        code = "REPORT_RESULT = len(load_artifact(%r))" % record.artifact_id
        result = podman_kernel.call_tool(
            "code_interpreter", {"code": code, "inputs": [record.artifact_id]}, run=other
        )
        assert result.success, result.content
        assert result.data["result"] == 600
    finally:
        owner.close()
        other.close()
