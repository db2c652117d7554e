"""POST /runs with `files` through a live `assay serve`: Python over the run's own upload in the sandbox
(``load_file`` on real podman), its artifact tracing to the upload's source like the query's."""

from __future__ import annotations

import httpx
import pytest

from tests.code_interpreter.conftest import IMAGE, _podman_image_ready
from tests.conftest import require
from tests.files.test_files_runs_service import CSV, finished, upload
from tests.service.conftest import LiveServer

SCRIPT = [
    {
        "tool": "sql_query",
        "arguments": {"sql": "SELECT SUM(amount) AS total FROM sales WHERE region = 'north'"},
    },
    {
        "tool": "code_interpreter",
        "arguments": {
            "code": "df = load_file('sales')\n"
            "REPORT_RESULT = {'north': int(df[df.region == 'north'].amount.sum())}"
        },
    },
    {"text": "North sold 5."},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    ok, what = _podman_image_ready()
    require(ok, what)
    live = LiveServer(
        tmp_path_factory.mktemp("serve-file-sandbox"),
        settings={
            "ASSAY_SQL_DATABASES": "",
            "SANDBOX_RUNTIME": "podman",
            "SANDBOX_IMAGE_PYTHON": IMAGE,
        },
        script=SCRIPT,
    )
    yield live
    live.stop()


def test_a_runs_upload_is_read_by_load_file_and_traces_to_its_source(server, monkeypatch):
    file_id = upload(server, "alice", data=CSV)
    made = httpx.post(
        f"{server.url}/runs",
        headers=server.headers(),
        json={"question": "How much did north sell?", "files": [file_id]},
        timeout=30,
    )
    assert made.status_code == 202, made.text
    run = finished(server, made.json()["run_id"])
    assert run["status"] == "answered", run

    from assay import Kernel

    monkeypatch.setenv("ASSAY_HOME", server.env["ASSAY_HOME"])
    kernel = Kernel().start()
    try:
        catalog = kernel.evidence.catalog
        arts = {a.kind: a for a in (catalog.get(i) for i in run["artifact_ids"])}
        assert arts["python"].result == {"north": 5}
        (source_id,) = arts["sql"].provenance["sources"]
        assert arts["python"].provenance["sources"] == [source_id]
        assert catalog.get(source_id).provenance["name"] == "sales.csv"
    finally:
        kernel.close()
