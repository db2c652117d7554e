"""POST /runs with `files`: a question over the caller's uploads through a live `assay serve`."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.service.conftest import LiveServer

CSV = b"region,amount\nnorth,1\nsouth,2\nnorth,4\n"
SCRIPT = [
    {
        "tool": "sql_query",
        "arguments": {
            "sql": "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region"
        },
    },
    {"text": "North sold 5, south 2."},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # no configured datasource: the uploads are the run's only one, so the script's query names none
    live = LiveServer(
        tmp_path_factory.mktemp("serve-file-runs"),
        settings={"ASSAY_SQL_DATABASES": ""},
        script=SCRIPT,
    )
    yield live
    live.stop()


def upload(server, who, name="sales.csv", data=CSV) -> str:
    made = httpx.post(
        f"{server.url}/files", headers=server.headers(who), files={"file": (name, data)}, timeout=60
    )
    assert made.status_code == 201, made.text
    return made.json()["file_id"]


def finished(server, run_id: str) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run = httpx.get(f"{server.url}/runs/{run_id}", headers=server.headers(), timeout=30).json()
        if run["status"] not in ("queued", "running"):
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not end")


def test_a_run_over_an_uploaded_csv_answers_and_its_query_names_the_files_source(
    server, monkeypatch
):
    file_id = upload(server, "alice")
    made = httpx.post(
        f"{server.url}/runs",
        headers=server.headers(),
        json={"question": "Which region sold most?", "files": [file_id]},
        timeout=30,
    )
    assert made.status_code == 202, made.text
    run = finished(server, made.json()["run_id"])
    assert run["status"] == "answered" and run["answer"] == "North sold 5, south 2.", run

    from assay import Kernel

    monkeypatch.setenv("ASSAY_HOME", server.env["ASSAY_HOME"])
    kernel = Kernel().start()
    try:
        catalog = kernel.evidence.catalog
        arts = [catalog.get(a) for a in run["artifact_ids"]]
        (query,) = [a for a in arts if a.kind == "sql"]
        (source_id,) = query.provenance["sources"]
        source = catalog.get(source_id)
        assert source.kind == "source" and source.provenance["name"] == "sales.csv"
    finally:
        kernel.close()
    # the run's uploads datasource is the run's alone: not offered to anyone once it ended
    offered = httpx.get(f"{server.url}/options", headers=server.headers("bob")).json()
    assert not [d for d in offered["datasources"] if d["name"].startswith("uploads_")]


def test_another_owners_file_id_is_the_same_404_as_an_unknown_one(server):
    theirs = upload(server, "bob", "private.csv")
    answers = [
        httpx.post(
            f"{server.url}/runs",
            headers=server.headers("alice"),
            json={"question": "What is in it?", "files": [file_id]},
            timeout=30,
        )
        for file_id in (theirs, f"file_{'0' * 20}")
    ]
    assert [a.status_code for a in answers] == [404, 404]
    assert answers[0].json()["code"] == answers[1].json()["code"] == "FILE_NOT_FOUND"
    assert answers[0].json()["hint"] == answers[1].json()["hint"]


def ask(server, **body) -> httpx.Response:
    return httpx.post(f"{server.url}/runs", headers=server.headers(), json=body, timeout=30)


def test_a_follow_up_without_files_queries_its_parents_upload_again(server, monkeypatch):
    file_id = upload(server, "alice")
    first = finished(
        server, ask(server, question="Who sold most?", files=[file_id]).json()["run_id"]
    )
    assert first["status"] == "answered", first
    made = ask(server, question="And again?", parent_run_id=first["run_id"])
    assert made.status_code == 202, made.text
    second = finished(server, made.json()["run_id"])
    assert second["status"] == "answered" and second["answer"] == "North sold 5, south 2.", second
    assert second["thread"] == [first["run_id"], second["run_id"]]

    from assay import Kernel

    monkeypatch.setenv("ASSAY_HOME", server.env["ASSAY_HOME"])
    kernel = Kernel().start()
    try:
        summary = kernel.runs.get(second["run_id"]).summary
        assert summary["thread"]["files"] == {"registered": ["sales"], "problems": []}
        (used,) = summary["files"]["tables"][0]["files"]
        assert used["file_id"] == file_id  # the parent's upload, its bytes checked unchanged
        arts = [kernel.evidence.catalog.get(a) for a in second["artifact_ids"]]
        (query,) = [a for a in arts if a.kind == "sql"]
        assert query.provenance["sources"] == [used["source_artifact_id"]]  # this run's own source
    finally:
        kernel.close()


def test_a_follow_up_of_a_run_whose_upload_was_deleted_is_404_naming_it(server):
    file_id = upload(server, "alice")
    first = finished(server, ask(server, question="Who?", files=[file_id]).json()["run_id"])
    assert first["status"] == "answered", first
    deleted = httpx.delete(f"{server.url}/files/{file_id}", headers=server.headers(), timeout=30)
    assert deleted.status_code == 200, deleted.text
    refused = ask(server, question="And again?", parent_run_id=first["run_id"])
    assert refused.status_code == 404 and refused.json()["code"] == "FILE_NOT_FOUND"
    assert file_id in refused.json()["message"] and "sales.csv" in refused.json()["message"]
