"""`assay serve`'s HTTP API against a live server on loopback (scripted model, real SQLite)."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import time

import httpx
import pytest

from tests.service.conftest import LiveServer, free_port, stop, wait_port

pytest.importorskip("fastapi")
pytestmark = pytest.mark.timeout(240)


def ask(server: LiveServer, who: str = "alice", **body) -> dict:
    body.setdefault("question", "Which region sold the most?")
    response = httpx.post(f"{server.url}/runs", json=body, headers=server.headers(who), timeout=30)
    assert response.status_code == 202, response.text
    return response.json()


def events(server: LiveServer, run_id: str, who: str = "alice") -> list[dict]:
    out = []
    with httpx.stream(
        "GET", f"{server.url}/runs/{run_id}/events", headers=server.headers(who), timeout=60
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        kind = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind != "end":
                out.append(json.loads(line[6:]))
    return out


def finished(server: LiveServer, run_id: str, who: str = "alice") -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run = httpx.get(
            f"{server.url}/runs/{run_id}", headers=server.headers(who), timeout=30
        ).json()
        if run["status"] not in ("queued", "running"):
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not end")


def test_a_question_streams_its_steps_and_ends_answered_with_evidence(live_server):
    run = ask(live_server, datasource="sales")
    seen = events(live_server, run["run_id"])
    kinds = [e["kind"] for e in seen]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.index("tool_started") < kinds.index("tool_finished")
    done = finished(live_server, run["run_id"])
    assert done["status"] == "answered" and done["answer"] == "East sold the most."
    assert done["tool_calls"] == 1 and len(done["artifact_ids"]) == 1


def test_artifact_content_carries_the_sha256_as_etag_and_digest(live_server):
    run = finished(live_server, ask(live_server)["run_id"])
    aid = run["artifact_ids"][0]
    response = httpx.get(
        f"{live_server.url}/artifacts/{aid}", headers=live_server.headers(), timeout=30
    )
    assert response.status_code == 200
    sha = hashlib.sha256(response.content).hexdigest()
    assert response.headers["etag"] == f'"{sha}"'
    assert (
        response.headers["repr-digest"]
        == "sha-256=:" + base64.b64encode(bytes.fromhex(sha)).decode() + ":"
    )
    again = httpx.get(
        f"{live_server.url}/artifacts/{aid}",
        headers={**live_server.headers(), "If-None-Match": f'"{sha}"'},
        timeout=30,
    )
    assert again.status_code == 304
    rows = httpx.get(
        f"{live_server.url}/artifacts/{aid}",
        params={"rows": "1:3"},
        headers=live_server.headers(),
        timeout=30,
    ).json()
    assert (
        rows["verified"] is True
        and rows["start"] == 1
        and [r[0] for r in rows["rows"]] == ["north", "south"]
    )
    bad = httpx.get(
        f"{live_server.url}/artifacts/{aid}",
        params={"field": "nope"},
        headers=live_server.headers(),
        timeout=30,
    )
    assert bad.status_code == 404 and bad.json()["code"] == "ARTIFACT_SELECTOR_INVALID"


def test_another_owner_gets_404_for_runs_events_reports_exports_and_artifacts(live_server):
    run = finished(live_server, ask(live_server)["run_id"])
    rid, aid = run["run_id"], run["artifact_ids"][0]
    paths = [
        ("GET", f"/runs/{rid}"),
        ("GET", f"/runs/{rid}/events"),
        ("GET", f"/runs/{rid}/report"),
        ("GET", f"/runs/{rid}/export"),
        ("DELETE", f"/runs/{rid}"),
        ("GET", f"/artifacts/{aid}"),
    ]
    for method, path in paths:
        response = httpx.request(
            method, live_server.url + path, headers=live_server.headers("bob"), timeout=30
        )
        assert response.status_code == 404, (method, path, response.status_code)
        assert response.json()["code"] in ("SERVICE_RUN_NOT_FOUND", "SERVICE_ARTIFACT_NOT_FOUND")
    listed = httpx.get(
        f"{live_server.url}/runs", headers=live_server.headers("bob"), timeout=30
    ).json()
    assert rid not in [r["run_id"] for r in listed["runs"]]
    tool = httpx.post(
        f"{live_server.url}/tools/read_artifact_result",
        json={"arguments": {"artifact_id": aid}},
        headers=live_server.headers("bob"),
        timeout=30,
    ).json()
    assert tool["result"]["error_code"] == "SERVICE_ARTIFACT_NOT_FOUND"


def test_tool_call_returns_the_envelope_and_failures_as_results(live_server):
    ok = httpx.post(
        f"{live_server.url}/tools/sql_query",
        json={"arguments": {"sql": "SELECT * FROM sales LIMIT 50"}},
        headers=live_server.headers(),
        timeout=60,
    ).json()
    assert ok["result"]["success"] is True and ok["result"]["data"]["row_count"] == 50
    aid = ok["result"]["artifacts"][0]["artifact_id"]
    mine = httpx.post(
        f"{live_server.url}/tools/read_artifact_result",
        json={"arguments": {"artifact_id": aid, "selectors": {"rows": [49, 50]}}},
        headers=live_server.headers(),
        timeout=60,
    ).json()
    assert mine["result"]["success"] is True and mine["result"]["data"]["rows"] == [
        [49, "south", 147]
    ]
    bad = httpx.post(
        f"{live_server.url}/tools/sql_query",
        json={"arguments": {"sql": "DROP TABLE sales"}},
        headers=live_server.headers(),
        timeout=60,
    ).json()
    assert bad["result"]["success"] is False and bad["result"]["error_code"].startswith("SQL_")
    missing = httpx.post(
        f"{live_server.url}/tools/nope",
        json={"arguments": {}},
        headers=live_server.headers(),
        timeout=30,
    )
    assert missing.status_code == 404 and missing.json()["code"] == "TOOL_NOT_FOUND"


def test_a_tool_call_s_artifacts_are_the_caller_s_alone(live_server):
    ok = httpx.post(
        f"{live_server.url}/tools/sql_query",
        json={"arguments": {"sql": "SELECT * FROM sales LIMIT 3"}},
        headers=live_server.headers(),
        timeout=60,
    ).json()
    aid = ok["result"]["artifacts"][0]["artifact_id"]
    assert (
        httpx.get(
            f"{live_server.url}/artifacts/{aid}", headers=live_server.headers(), timeout=30
        ).status_code
        == 200
    )
    theirs = httpx.get(
        f"{live_server.url}/artifacts/{aid}", headers=live_server.headers("bob"), timeout=30
    )
    assert theirs.status_code == 404 and theirs.json()["code"] == "SERVICE_ARTIFACT_NOT_FOUND"


def test_code_interpreter_inputs_may_be_the_owners_artifacts_of_other_runs_and_no_one_elses(
    live_server,
):
    """Each tool call is a run of its own: the run's input scope is its owner's runs (issue 31 item 10)."""
    ok = httpx.post(
        f"{live_server.url}/tools/sql_query",
        json={"arguments": {"sql": "SELECT * FROM sales LIMIT 7"}},
        headers=live_server.headers(),
        timeout=60,
    ).json()
    aid = ok["result"]["artifacts"][0]["artifact_id"]
    arguments = {"code": f"REPORT_RESULT = len(load_artifact({aid!r}))", "inputs": [aid]}
    mine = httpx.post(
        f"{live_server.url}/tools/code_interpreter",
        json={"arguments": arguments},
        headers=live_server.headers(),
        timeout=120,
    ).json()
    assert mine["result"]["success"] is True, mine
    assert mine["result"]["data"]["result"] == 7
    theirs = httpx.post(
        f"{live_server.url}/tools/code_interpreter",
        json={"arguments": arguments},
        headers=live_server.headers("bob"),
        timeout=120,
    ).json()
    assert theirs["result"]["success"] is False
    assert theirs["result"]["error_code"] == "SERVICE_ARTIFACT_NOT_FOUND"


@pytest.mark.parametrize(
    ("body", "content_type", "problem", "status"),
    [
        (b"", "application/json", "missing", 422),
        (b"{nope", "application/json", "json_invalid", 400),
        (b'{"arguments": 5}', "application/json", "dict_type", 422),
        (b'{"arguments": {}, "x": 1}', "application/json", "extra_forbidden", 422),
        (b'{"arguments": {}}', "text/plain", "model_attributes_type", 422),
    ],
)
def test_a_tool_call_body_that_is_not_a_plain_json_call_gets_a_coded_error(
    live_server, body, content_type, problem, status
):
    response = httpx.post(
        f"{live_server.url}/tools/sql_query",
        content=body,
        timeout=30,
        headers={**live_server.headers(), "Content-Type": content_type},
    )
    answer = response.json()
    assert response.status_code == status and set(answer) == {"code", "message", "hint"}
    assert answer["code"] == "SERVICE_REQUEST_INVALID" and f"({problem})" in answer["message"]


def test_the_openapi_document_describes_validation_errors_as_the_api_answers_them(live_server):
    spec = httpx.get(
        f"{live_server.url}/openapi.json", headers=live_server.headers(), timeout=30
    ).json()
    tool_call = spec["paths"]["/tools/{name}"]["post"]["responses"]
    for status in ("400", "422"):
        assert (
            tool_call[status]["content"]["application/json"]["schema"]["$ref"]
            == "#/components/schemas/ErrorBody"
        )
    assert "HTTPValidationError" not in spec["components"]["schemas"]


def test_a_client_supplied_database_url_or_unknown_datasource_is_refused(live_server):
    url = httpx.post(
        f"{live_server.url}/runs",
        json={"question": "q", "datasource": "postgresql://evil/db"},
        headers=live_server.headers(),
        timeout=30,
    )
    assert url.status_code == 422
    unknown = httpx.post(
        f"{live_server.url}/runs",
        json={"question": "q", "datasource": "other"},
        headers=live_server.headers(),
        timeout=30,
    )
    assert unknown.status_code == 404 and unknown.json()["code"] == "SERVICE_DATASOURCE_UNKNOWN"
    model = httpx.post(
        f"{live_server.url}/runs",
        json={"question": "q", "model": "openai_compatible:gpt"},
        headers=live_server.headers(),
        timeout=30,
    )
    assert model.status_code == 404 and model.json()["code"] == "SERVICE_MODEL_NOT_ALLOWED"


def test_a_body_over_the_limit_is_413(live_server):
    big = {"question": "x" * 70_000}
    response = httpx.post(
        f"{live_server.url}/runs", json=big, headers=live_server.headers(), timeout=30
    )
    assert response.status_code == 413 and response.json()["code"] == "SERVICE_BODY_TOO_LARGE"


def test_report_of_a_run_without_one_is_404_with_a_code(live_server):
    run = finished(live_server, ask(live_server)["run_id"])
    response = httpx.get(
        f"{live_server.url}/runs/{run['run_id']}/report",
        params={"format": "md"},
        headers=live_server.headers(),
        timeout=30,
    )
    assert response.status_code == 404 and response.json()["code"] == "SERVICE_REPORT_NOT_FOUND"


def test_run_export_is_a_zip_of_the_run(live_server):
    import io
    import zipfile

    run = finished(live_server, ask(live_server)["run_id"])
    response = httpx.get(
        f"{live_server.url}/runs/{run['run_id']}/export", headers=live_server.headers(), timeout=60
    )
    assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
    bundle = zipfile.ZipFile(io.BytesIO(response.content))
    manifest = json.loads(bundle.read("manifest.json"))
    assert manifest["run_id"] == run["run_id"]
    assert run["artifact_ids"][0] in [a["artifact_id"] for a in manifest["artifacts"]]


# --- the auth sweep ----------------------------------------------------------------


def routes(server: LiveServer) -> list[tuple[str, str]]:
    spec = httpx.get(f"{server.url}/openapi.json", headers=server.headers(), timeout=30).json()
    out = []
    for path, item in spec["paths"].items():
        concrete = path.replace("{run_id}", "run_0000000000000000").replace(
            "{artifact_id}", "art_" + "0" * 20
        )
        concrete = concrete.replace("{name}", "sql_query")
        out.extend((method.upper(), concrete) for method in item)
    return out


AUTH_SWEEP: dict[str, int] = {}


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer asy_000000000000_" + "x" * 43, "Bearer garbage", "Basic YWxpY2U6cHc="],
)
def test_auth_sweep_every_route_but_health_needs_a_valid_token(live_server, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    swept = routes(live_server) + [("GET", "/openapi.json")]
    assert len(swept) >= 10
    for method, path in swept:
        response = httpx.request(
            method,
            live_server.url + path,
            headers=headers,
            json={} if method == "POST" else None,
            timeout=30,
        )
        if path == "/health":
            assert response.status_code == 200
            continue
        assert response.status_code == 401, (method, path, response.status_code)
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["code"] in ("SERVICE_AUTH_REQUIRED", "SERVICE_AUTH_INVALID")
        AUTH_SWEEP[authorization or "none"] = AUTH_SWEEP.get(authorization or "none", 0) + 1


def test_a_revoked_token_is_refused(live_server):
    out = subprocess.run(
        [sys.executable, "-m", "assay.kernel.cli", "tokens", "create", "--owner", "carol"],
        env=live_server.env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    token = out.stdout.strip()
    headers = {"Authorization": f"Bearer {token}"}
    assert httpx.get(f"{live_server.url}/runs", headers=headers, timeout=30).status_code == 200
    token_id = token.split("_")[1]
    subprocess.run(
        [sys.executable, "-m", "assay.kernel.cli", "tokens", "revoke", token_id],
        env=live_server.env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert httpx.get(f"{live_server.url}/runs", headers=headers, timeout=30).status_code == 401


def test_tokens_are_stored_hashed(live_server):
    import sqlite3
    from pathlib import Path

    db = Path(live_server.env["ASSAY_HOME"]) / "service" / "tokens.sqlite3"
    dump = "\n".join(sqlite3.connect(db).iterdump())
    secret = live_server.alice.split("_", 2)[2]  # the secret may itself contain "_"
    assert live_server.alice not in dump and secret not in dump
    assert hashlib.sha256(live_server.alice.encode()).hexdigest() in dump


# --- limits --------------------------------------------------------------------------


def test_questions_per_minute_past_the_limit_are_429_with_retry_after(tmp_path):
    server = LiveServer(tmp_path, {"ASSAY_SERVICE_QUESTIONS_PER_MINUTE": "2"})
    try:
        codes = [
            httpx.post(
                f"{server.url}/runs", json={"question": "q"}, headers=server.headers(), timeout=30
            )
            for _ in range(3)
        ]
        assert [c.status_code for c in codes] == [202, 202, 429]
        assert (
            codes[2].json()["code"] == "SERVICE_RATE_LIMITED"
            and int(codes[2].headers["retry-after"]) >= 1
        )
        other = httpx.post(
            f"{server.url}/runs", json={"question": "q"}, headers=server.headers("bob"), timeout=30
        )
        assert other.status_code == 202  # the limit is per token
    finally:
        server.stop()


def test_an_owner_past_its_evidence_quota_gets_the_quota_code_and_others_do_not(tmp_path):
    """Per-owner evidence quota (issue 31 item 9): every tool call is a run of its own, so the run's quota
    alone would not bound what one owner keeps."""
    server = LiveServer(tmp_path, {"ASSAY_SERVICE_OWNER_MAX_ARTIFACT_BYTES": "6000"})
    try:

        def call(who: str) -> dict:
            return httpx.post(
                f"{server.url}/tools/sql_query",
                json={"arguments": {"sql": "SELECT * FROM sales"}},
                headers=server.headers(who),
                timeout=60,
            ).json()["result"]

        results = [call("alice") for _ in range(4)]
        assert results[0]["success"] is True
        refused = [r for r in results if not r["success"]]
        assert refused and all(r["error_code"] == "ARTIFACT_QUOTA_EXCEEDED" for r in refused)
        assert call("bob")["success"] is True  # the quota is the owner's
    finally:
        server.stop()


def test_concurrent_runs_per_token_past_the_limit_are_429(tmp_path):
    slow = [
        {
            "tool": "sql_query",
            "arguments": {
                "sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
                "FROM c WHERE x < 3000000) SELECT count(*) FROM c"
            },
        },
        {"text": "done"},
    ]
    server = LiveServer(tmp_path, {"ASSAY_SERVICE_MAX_RUNS_PER_TOKEN": "1"}, script=slow)
    try:
        first = httpx.post(
            f"{server.url}/runs", json={"question": "q"}, headers=server.headers(), timeout=30
        )
        second = httpx.post(
            f"{server.url}/runs", json={"question": "q"}, headers=server.headers(), timeout=30
        )
        assert first.status_code == 202 and second.status_code == 429
        assert second.json()["code"] == "SERVICE_BUSY" and second.headers["retry-after"]
        cancelled = httpx.delete(
            f"{server.url}/runs/{first.json()['run_id']}", headers=server.headers(), timeout=60
        ).json()
        assert cancelled["status"] == "cancelled"
        assert (
            httpx.post(
                f"{server.url}/runs", json={"question": "q"}, headers=server.headers(), timeout=30
            ).status_code
            == 202
        )
    finally:
        server.stop()


def test_a_non_loopback_bind_without_a_token_is_refused(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["ASSAY_HOME"] = str(tmp_path / "home")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "assay.kernel.cli",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode != 0 and "SERVICE_BIND_REFUSED" in out.stderr


def test_serve_on_an_ipv6_loopback_binds_it_and_prints_a_valid_url(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["ASSAY_HOME"] = str(tmp_path / "home")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.kernel.cli", "serve", "--host", "::1", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_port(port, proc, host="::1")
        health = httpx.get(f"http://[::1]:{port}/health", timeout=30)
    finally:
        stop(proc)
    assert health.status_code == 200 and health.json()["ok"] is True
    assert f"http://[::1]:{port}/ " in proc.stderr.read()


@pytest.mark.parametrize(
    "path,authorized", [("/", False), ("/health", False), ("/runs", True), ("/nope", True)]
)
def test_no_answer_may_be_framed_by_another_site_or_sniffed(live_server, path, authorized):
    response = httpx.get(
        live_server.url + path, headers=live_server.headers() if authorized else {}, timeout=30
    )
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["content-security-policy"] == "frame-ancestors 'none'"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_a_browsers_favicon_request_is_not_an_auth_failure(live_server):
    response = httpx.get(live_server.url + "/favicon.ico", timeout=30)
    assert response.status_code == 204


def test_runs_list_finds_an_agent_run_behind_many_tool_calls(tmp_path):
    server = LiveServer(tmp_path)
    try:
        run = ask(server, who="bob", datasource="sales")
        finished(server, run["run_id"], who="bob")
        with httpx.Client(base_url=server.url, headers=server.headers("bob"), timeout=60) as client:
            for _ in range(55):
                assert client.post("/tools/current_time", json={"arguments": {}}).status_code == 200
            listed = client.get("/runs", params={"limit": 50}).json()["runs"]
            one = client.get("/runs", params={"limit": 1}).json()["runs"]
    finally:
        server.stop()
    assert [r["run_id"] for r in listed] == [run["run_id"]]
    assert [r["run_id"] for r in one] == [run["run_id"]]
