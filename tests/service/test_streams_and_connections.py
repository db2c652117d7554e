"""What one token or one socket may hold of `assay serve`: event streams, revoked tokens, slow headers."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import pytest

from tests.service.conftest import LiveServer

pytest.importorskip("fastapi")

SLOW = [
    {
        "tool": "code_interpreter",
        "arguments": {"code": "import time\ntime.sleep(4)\nprint('slept')"},
    },
    {"text": "done"},
]


def start_run(server: LiveServer, who: str = "alice") -> str:
    response = httpx.post(
        f"{server.url}/runs",
        json={"question": "slow", "datasource": "sales"},
        headers=server.headers(who),
        timeout=30,
    )
    assert response.status_code == 202, response.text
    return response.json()["run_id"]


def token_id(token: str) -> str:
    return token.split("_")[1]


def test_a_stream_ends_with_an_error_event_once_its_token_is_revoked(tmp_path):
    server = LiveServer(tmp_path, script=SLOW)
    try:
        run_id = start_run(server)
        seen: list[str] = []
        with httpx.stream(
            "GET", f"{server.url}/runs/{run_id}/events", headers=server.headers(), timeout=60
        ) as response:
            lines = response.iter_lines()
            for line in lines:
                seen.append(line)
                if line == "event: run_started":
                    break
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "assay.kernel.cli",
                    "tokens",
                    "revoke",
                    token_id(server.alice),
                ],
                env=server.env,
                check=True,
                capture_output=True,
                timeout=60,
            )
            seen.extend(lines)
    finally:
        server.stop()
    after = seen[seen.index("event: run_started") :]
    assert "event: error" in after and "SERVICE_AUTH_INVALID" in "\n".join(after)
    assert (
        "event: run_finished" not in after
    )  # nothing of the run was delivered after the revocation


def test_event_streams_per_token_are_capped_and_released_when_they_end(tmp_path):
    server = LiveServer(tmp_path, {"ASSAY_SERVICE_MAX_STREAMS_PER_TOKEN": "1"}, script=SLOW)
    try:
        run_id = start_run(server)
        url = f"{server.url}/runs/{run_id}/events"
        with httpx.stream("GET", url, headers=server.headers(), timeout=60) as first:
            assert first.status_code == 200
            second = httpx.get(url, headers=server.headers(), timeout=30)
            other_token = httpx.get(
                url, headers=server.headers("bob"), timeout=30
            )  # bob's count is his own
        assert second.status_code == 429 and second.json()["code"] == "SERVICE_BUSY"
        assert "Retry-After" in second.headers
        assert other_token.status_code == 404  # not bob's run: the cap did not answer first
        deadline = time.monotonic() + 30
        while True:  # the first stream's slot comes back once it is closed
            third = httpx.get(url, headers=server.headers(), timeout=60)
            if third.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert third.status_code == 200
    finally:
        server.stop()


@pytest.mark.parametrize("sent", [b"", b"GET /health HTTP/1.1\r\nHost: x\r\n"])
def test_a_connection_that_does_not_finish_its_headers_is_closed(tmp_path, sent):
    server = LiveServer(tmp_path, {"ASSAY_SERVICE_HEADER_TIMEOUT_S": "1"})
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(sent)
            started = time.monotonic()
            assert sock.recv(1024) == b""  # closed by the server, nothing answered
            waited = time.monotonic() - started
        healthy = httpx.get(f"{server.url}/health", timeout=30)
    finally:
        server.stop()
    assert 0.5 <= waited <= 8
    assert (
        healthy.status_code == 200
    )  # a request that sends its headers in time is served as before


def test_tool_calls_going_at_once_per_token_are_capped_so_one_token_cannot_take_the_sandboxes(
    tmp_path,
):
    import concurrent.futures

    server = LiveServer(tmp_path, {"ASSAY_SERVICE_MAX_TOOL_CALLS_PER_TOKEN": "2"})
    slow = {"arguments": {"code": "import time\ntime.sleep(3)\nprint('done')"}}

    def call(who: str) -> httpx.Response:
        return httpx.post(
            f"{server.url}/tools/code_interpreter",
            json=slow,
            headers=server.headers(who),
            timeout=90,
        )

    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            alice = [pool.submit(call, "alice") for _ in range(3)]
            time.sleep(1.0)  # alice's calls are going
            bob = pool.submit(call, "bob").result()
            answers = [f.result() for f in alice]
    finally:
        server.stop()
    statuses = sorted(r.status_code for r in answers)
    assert statuses == [200, 200, 429]
    refused = next(r for r in answers if r.status_code == 429)
    assert refused.json()["code"] == "SERVICE_BUSY" and "Retry-After" in refused.headers
    assert bob.status_code == 200 and bob.json()["result"]["success"] is True


def test_tool_calls_past_the_per_minute_limit_are_429_with_retry_after(tmp_path):
    server = LiveServer(tmp_path, {"ASSAY_SERVICE_TOOL_CALLS_PER_MINUTE": "3"})
    try:
        answers = [
            httpx.post(
                f"{server.url}/tools/current_time",
                json={"arguments": {}},
                headers=server.headers(),
                timeout=30,
            )
            for _ in range(4)
        ]
    finally:
        server.stop()
    assert [r.status_code for r in answers] == [200, 200, 200, 429]
    assert (
        answers[-1].json()["code"] == "SERVICE_RATE_LIMITED"
        and int(answers[-1].headers["Retry-After"]) >= 1
    )


def test_every_request_leaves_an_access_log_line_with_the_token_id_never_the_secret(tmp_path):
    import json

    server = LiveServer(tmp_path, {"ASSAY_LOG_LEVEL": "INFO", "ASSAY_LOG_FORMAT": "json"})
    try:
        assert httpx.get(f"{server.url}/runs", timeout=30).status_code == 401
        assert (
            httpx.get(
                f"{server.url}/runs/run_0000000000000000", headers=server.headers(), timeout=30
            ).status_code
            == 404
        )
        assert (
            httpx.get(f"{server.url}/runs", headers=server.headers(), timeout=30).status_code == 200
        )
        time.sleep(0.5)
    finally:
        server.stop()
    text = (tmp_path / "serve.log").read_text()
    lines = [json.loads(line) for line in text.splitlines() if '"http_request"' in line]
    seen = {(entry["path"], entry["status"]): entry for entry in lines}
    refused = seen[("/runs", 401)]
    probe = seen[("/runs/run_0000000000000000", 404)]
    assert refused["level"] == "warning" and refused["token_id"] == ""
    assert (
        probe["level"] == "info"
        and probe["token_id"] == token_id(server.alice)
        and probe["method"] == "GET"
    )
    assert ("/runs", 200) in seen and probe["client"] == "127.0.0.1" and probe["duration_ms"] >= 0
    assert (
        server.alice not in text and server.alice.split("_", 2)[2] not in text
    )  # the secret is never logged


def _run_with_a_report(url: str, token: str) -> str:
    """An agent run of the in-process server's scripted model: a query, then a report citing it."""
    headers = {"Authorization": f"Bearer {token}"}
    run_id = httpx.post(
        f"{url}/runs", json={"question": "q", "datasource": "sales"}, headers=headers, timeout=30
    ).json()["run_id"]
    deadline = time.monotonic() + 120
    while httpx.get(f"{url}/runs/{run_id}", headers=headers, timeout=30).json()["status"] in (
        "queued",
        "running",
    ):
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.2)
    return run_id


def test_report_renders_per_token_are_capped(in_process_server):
    import concurrent.futures

    url, alice, _ = in_process_server(max_reports_per_token=1)
    run_id = _run_with_a_report(url, alice)

    def pdf(_: int) -> httpx.Response:
        return httpx.get(
            f"{url}/runs/{run_id}/report",
            params={"format": "pdf"},
            headers={"Authorization": f"Bearer {alice}"},
            timeout=180,
        )

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(pdf, range(3)))
    statuses = sorted(r.status_code for r in answers)
    assert statuses[0] == 200 and 429 in statuses
    assert next(r for r in answers if r.status_code == 200).content.startswith(b"%PDF-")
    assert next(r for r in answers if r.status_code == 429).json()["code"] == "SERVICE_BUSY"


def test_pdf_renders_do_not_hold_the_threads_tool_calls_run_in(in_process_server):
    import concurrent.futures

    url, alice, bob = in_process_server(max_reports_per_token=8, report_workers=1)
    run_id = _run_with_a_report(url, alice)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        pdfs = [
            pool.submit(
                httpx.get,
                f"{url}/runs/{run_id}/report",
                params={"format": "pdf"},
                headers={"Authorization": f"Bearer {alice}"},
                timeout=600,
            )
            for _ in range(8)
        ]
        time.sleep(1.0)  # the renders hold whatever threads they run in
        started = time.monotonic()
        answer = httpx.post(
            f"{url}/tools/sql_query",
            json={"arguments": {"sql": "SELECT 1 AS one"}},
            headers={"Authorization": f"Bearer {bob}"},
            timeout=600,
        )
        waited = time.monotonic() - started
        pending = sum(1 for f in pdfs if not f.done())
        done = [f.result() for f in pdfs]
    assert answer.status_code == 200 and answer.json()["result"]["success"] is True
    assert pending > 0, "the PDFs were done before the tool call: nothing was measured"
    assert waited < 5, f"a tool call waited {waited:.1f} s behind PDF renders"
    assert all(r.status_code == 200 and r.content.startswith(b"%PDF-") for r in done)
