"""Sign-in once: a token exchanged for a session cookie (POST /session), CSRF by SameSite=Strict + Origin."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")


def sign_in(url: str, token: str, origin: str | None = None) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    answer = client.post("/session", json={"token": token}, headers={"Origin": origin or url})
    assert answer.status_code == 200, answer.text
    return client


def test_sign_in_sets_an_httponly_samesite_strict_cookie_that_authenticates_reads(
    in_process_server,
):
    url, alice, _ = in_process_server()
    client = httpx.Client(base_url=url, timeout=30)
    answer = client.post("/session", json={"token": alice}, headers={"Origin": url})
    cookie = answer.headers["set-cookie"]
    assert answer.json()["owner"] == "alice"
    assert (
        "HttpOnly" in cookie
        and "SameSite=Strict" in cookie
        and "Path=/" in cookie
        and "Max-Age=43200" in cookie
    )
    assert "Secure" not in cookie  # plain http on loopback; over TLS it is Secure
    assert alice not in cookie  # the cookie is a session id, never the token
    assert (
        client.get("/runs").status_code == 200 and client.get("/session").json()["owner"] == "alice"
    )
    assert httpx.get(url + "/runs").status_code == 401  # no cookie, no token


def test_a_state_changing_request_by_cookie_needs_this_servers_origin(in_process_server):
    url, alice, _ = in_process_server()
    client = sign_in(url, alice)
    body = {"question": "Which region sold the most?", "datasource": "sales"}
    for headers in ({}, {"Origin": "http://evil.example"}, {"Origin": "null"}):
        refused = client.post("/runs", json=body, headers=headers)
        assert refused.status_code == 403 and refused.json()["code"] == "SERVICE_CSRF_REFUSED", (
            headers
        )
    assert client.post("/runs", json=body, headers={"Origin": url}).status_code == 202
    assert (
        client.post("/runs", json=body, headers={"Sec-Fetch-Site": "same-origin"}).status_code
        == 202
    )


def test_signing_in_from_another_site_is_refused(in_process_server):
    url, alice, _ = in_process_server()
    answer = httpx.post(
        url + "/session", json={"token": alice}, headers={"Origin": "http://evil.example"}
    )
    assert answer.status_code == 403 and "set-cookie" not in answer.headers


def test_a_wrong_token_gets_no_session(in_process_server):
    url, _, _ = in_process_server()
    answer = httpx.post(url + "/session", json={"token": "assay_nope"}, headers={"Origin": url})
    assert answer.status_code == 401 and answer.json()["code"] == "SERVICE_AUTH_INVALID"
    assert "set-cookie" not in answer.headers


def test_logout_ends_the_session(in_process_server):
    url, alice, _ = in_process_server()
    client = sign_in(url, alice)
    out = client.delete("/session", headers={"Origin": url})
    assert out.status_code == 200 and "Max-Age=0" in out.headers["set-cookie"]
    kept = client.cookies.get("assay_session")
    assert (
        kept is None or httpx.get(url + "/runs", cookies={"assay_session": kept}).status_code == 401
    )


def test_revoking_the_token_ends_its_sessions(in_process_server, tmp_path):
    from assay import Settings
    from assay.plugins.service.tokens import TokenStore, store_path

    url, alice, _ = in_process_server()
    client = sign_in(url, alice)
    tokens = TokenStore(store_path(Settings().home))
    info = tokens.verify(alice)
    assert tokens.revoke(info.token_id)
    assert client.get("/runs").status_code == 401


def test_bearer_tokens_keep_working_beside_sessions(in_process_server):
    url, alice, bob = in_process_server()
    client = sign_in(url, alice)
    # a bearer header wins over the cookie: bob's request is bob's, and needs no Origin
    answer = client.post(
        "/runs",
        json={"question": "q", "datasource": "sales"},
        headers={"Authorization": f"Bearer {bob}"},
    )
    assert answer.status_code == 202
    assert answer.json()["run_id"] in [
        r["run_id"]
        for r in httpx.get(url + "/runs", headers={"Authorization": f"Bearer {bob}"}).json()["runs"]
    ]


def test_a_session_ends_at_its_expiry():
    from assay.plugins.service.web_session import SessionStore

    store = SessionStore(ttl_s=60)
    session_id, session = store.open("alice", "tok1", now=1000.0)
    assert store.get(session_id, now=1059.0) == session
    assert store.get(session_id, now=1061.0) is None
