"""POST /runs with an Idempotency-Key: a client retrying after a connection reset gets the run it started."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.service.conftest import LiveServer

pytest.importorskip("fastapi")

BODY = {"question": "Which region sold the most?", "datasource": "sales"}


def post(
    server: LiveServer, key: str, who: str = "alice", body: dict | None = None
) -> httpx.Response:
    return httpx.post(
        f"{server.url}/runs",
        json=body or BODY,
        timeout=30,
        headers={**server.headers(who), "Idempotency-Key": key},
    )


def listed(server: LiveServer, who: str = "alice") -> list[str]:
    runs = httpx.get(
        f"{server.url}/runs", params={"limit": 500}, headers=server.headers(who), timeout=30
    ).json()
    return [r["run_id"] for r in runs["runs"]]


def test_a_post_retried_with_the_same_key_starts_one_run_and_answers_it_again(live_server):
    key = uuid.uuid4().hex
    before = listed(live_server)
    first, again = post(live_server, key), post(live_server, key)
    assert first.status_code == 202 and again.status_code == 202, again.text
    assert again.json()["run_id"] == first.json()["run_id"]
    assert again.headers.get("idempotent-replayed") == "true"
    assert len(listed(live_server)) == len(before) + 1
    assert (
        post(live_server, key, who="bob").json()["run_id"] != first.json()["run_id"]
    )  # keys are per owner


def test_the_same_key_with_another_body_is_refused(live_server):
    key = uuid.uuid4().hex
    assert post(live_server, key).status_code == 202
    reused = post(live_server, key, body={"question": "Something else?"})
    assert reused.status_code == 409 and reused.json()["code"] == "SERVICE_IDEMPOTENCY_KEY_REUSED"


def test_a_key_is_kept_for_a_bounded_time(tmp_path):
    import sqlite3

    from assay.plugins.service.tokens import store_path

    server = LiveServer(tmp_path, {"ASSAY_SERVICE_IDEMPOTENCY_TTL_S": "60"})
    try:
        first = post(server, "k1").json()["run_id"]
        assert post(server, "k1").json()["run_id"] == first
        db = sqlite3.connect(store_path(server.env["ASSAY_HOME"]))
        with db:  # the key grows 61 s older, without waiting for it
            assert db.execute("UPDATE run_requests SET created_at = created_at - 61").rowcount == 1
        db.close()
        assert post(server, "k1").json()["run_id"] != first
    finally:
        server.stop()
