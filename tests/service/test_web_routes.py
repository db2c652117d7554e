"""The page's own endpoints: a whole artifact as CSV or Parquet, a report's verification, static files."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")


def finished_run(url: str, token: str) -> tuple[str, dict[str, str]]:
    headers = {"Authorization": f"Bearer {token}"}
    run = httpx.post(
        f"{url}/runs",
        json={"question": "Which region?", "datasource": "sales"},
        headers=headers,
        timeout=30,
    ).json()
    with httpx.stream(
        "GET", f"{url}/runs/{run['run_id']}/events", headers=headers, timeout=60
    ) as r:
        for _ in r.iter_lines():
            pass
    return run["run_id"], headers


def test_an_artifact_downloads_whole_as_csv_and_parquet_for_its_owner_only(in_process_server):
    import pyarrow.parquet as pq

    url, alice, bob = in_process_server()
    run_id, headers = finished_run(url, alice)
    artifact = httpx.get(f"{url}/runs/{run_id}", headers=headers).json()["artifact_ids"][0]
    csv = httpx.get(
        f"{url}/artifacts/{artifact}/download", params={"format": "csv"}, headers=headers
    )
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    assert csv.text.splitlines()[0] == "region,total" and len(csv.text.splitlines()) == 5
    parquet = httpx.get(
        f"{url}/artifacts/{artifact}/download", params={"format": "parquet"}, headers=headers
    )
    table = pq.read_table(io.BytesIO(parquet.content))
    assert table.column_names == ["region", "total"] and table.num_rows == 4
    assert str(table.schema.field("total").type) == "int64"
    theirs = httpx.get(
        f"{url}/artifacts/{artifact}/download", headers={"Authorization": f"Bearer {bob}"}
    )
    assert theirs.status_code == 404 and theirs.json()["code"] == "SERVICE_ARTIFACT_NOT_FOUND"


def test_report_verify_answers_the_verification_for_the_runs_owner(in_process_server):
    url, alice, bob = in_process_server()
    run_id, headers = finished_run(url, alice)
    found = httpx.get(f"{url}/runs/{run_id}/report/verify", headers=headers, timeout=60).json()
    assert found["ok"] is True and found["checked"] >= 1 and found["problems"] == []
    theirs = httpx.get(
        f"{url}/runs/{run_id}/report/verify", headers={"Authorization": f"Bearer {bob}"}
    )
    assert theirs.status_code == 404 and theirs.json()["code"] == "SERVICE_RUN_NOT_FOUND"


def test_artifact_meta_and_report_info_tell_the_page_what_there_is(in_process_server):
    url, alice, bob = in_process_server()
    run_id, headers = finished_run(url, alice)
    artifact = httpx.get(f"{url}/runs/{run_id}", headers=headers).json()["artifact_ids"][0]
    meta = httpx.get(f"{url}/artifacts/{artifact}/meta", headers=headers).json()
    assert (
        meta["tabular"] is True
        and meta["columns"] == ["region", "total"]
        and meta["row_count"] == 4
    )
    assert (
        httpx.get(f"{url}/runs/{run_id}/report/info", headers=headers).json()["has_report"] is True
    )
    other = {"Authorization": f"Bearer {bob}"}
    assert httpx.get(f"{url}/artifacts/{artifact}/meta", headers=other).status_code == 404
    assert httpx.get(f"{url}/runs/{run_id}/report/info", headers=other).status_code == 404


def test_static_files_are_open_and_nothing_outside_them_is_served(in_process_server):
    url, _, _ = in_process_server()
    script = httpx.get(f"{url}/static/render.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith(
        "text/javascript"
    )
    for path in ("/static/..%2Fweb_session.py", "/static/.hidden.js", "/static/nothing.js"):
        assert httpx.get(url + path).status_code == 404, path
