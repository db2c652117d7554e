"""The page of `assay serve` in a real browser: Debian's Chromium driven by Playwright (no browser download).

The server runs in this process (uvicorn in a thread) so the scripted model
can be a Python script: its second step cites the artifact the first one
captured in a report.
"""

from __future__ import annotations

import pytest

from tests.conftest import require

pytest.importorskip("fastapi")
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def page_server(in_process_server):
    url, alice, _ = in_process_server()
    return url, alice


@pytest.fixture
def chromium(tmp_path):
    import os

    from assay.plugins.reports.pdf import find_chromium

    binary = find_chromium()
    require(binary is not None, "Chromium (Debian's chromium package)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(False, "Playwright for Python (the test extra)")
    flags = ["--headless", "--disable-gpu", "--disable-background-networking"]
    flags += ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=binary, headless=True, args=flags)
        try:
            yield browser
        finally:
            browser.close()


def ask_on_page(page, url: str, token: str) -> None:
    """Open the page, sign in with the token, choose the datasource and ask."""
    page.goto(url + "/")
    page.wait_for_selector("#signin:not([hidden])")
    page.fill("#token", token)
    page.click("#signin-button")
    page.wait_for_selector("#datasource option[value='sales']", state="attached")
    page.fill("#question", "Which region sold the most?")
    page.click("#ask-button")


def test_the_page_asks_streams_the_steps_and_shows_the_report(page_server, chromium, tmp_path):
    url, token = page_server
    page = chromium.new_page(viewport={"width": 1100, "height": 1400}, accept_downloads=True)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    ask_on_page(page, url, token)
    page.wait_for_selector("#steps li[data-kind='tool_finished']")
    page.wait_for_selector("#report-box:not([hidden])", timeout=60_000)
    steps = page.inner_text("#steps")
    assert "sql_query done" in steps and "render_report done" in steps and "FROM sales" in steps
    assert "finished: answered" in steps
    assert page.inner_text("#answer") == "West sold the most: 5,490."
    report = page.frame_locator("#report")
    assert "Sales by region" in report.locator("body").inner_text()
    assert "5,490" in report.locator("body").inner_text()
    links = page.locator("#steps a.artifact")
    assert links.count() >= 1
    with page.expect_download() as download:
        links.first.click()
    saved = tmp_path / "artifact"
    download.value.save_as(saved)
    assert saved.read_bytes().startswith(b'{"columns"')
    with page.expect_download() as export:
        page.click("#export-button")
    assert export.value.suggested_filename.endswith(".zip")
    assert all(r.startswith((url, "blob:", "data:")) for r in requests), (
        requests
    )  # nothing from elsewhere
    # ASSAY_SCREENSHOT=path keeps a picture of the page (docs/img/ holds those of tests/service/test_workspace.py)
    import os

    page.screenshot(
        path=os.environ.get("ASSAY_SCREENSHOT") or str(tmp_path / "page.png"), full_page=True
    )


def test_report_endpoint_serves_html_md_json_and_pdf(page_server):
    import httpx

    from assay.plugins.reports.pdf import find_chromium

    url, token = page_server
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
    got = {}
    for fmt in ("html", "md", "json", "pdf"):
        if fmt == "pdf" and find_chromium() is None:
            require(False, "Chromium (Debian's chromium package)")
        response = httpx.get(
            f"{url}/runs/{run['run_id']}/report",
            params={"format": fmt},
            headers=headers,
            timeout=120,
        )
        assert response.status_code == 200, (fmt, response.text[:300])
        got[fmt] = response
    assert (
        got["html"].headers["content-type"].startswith("text/html")
        and b"5,490" in got["html"].content
    )
    assert got["md"].text.startswith("# Sales by region") and "5,490" in got["md"].text
    assert got["json"].json()["title"] == "Sales by region"
    assert got["pdf"].content.startswith(b"%PDF")


def test_the_page_marks_the_figures_not_found_in_the_evidence(
    page_server, in_process_server, chromium, monkeypatch
):
    url, token = page_server
    monkeypatch.setitem(
        in_process_server.answer, "text", "West sold the most: 5,490, and 999,999 units in all."
    )
    page = chromium.new_page(viewport={"width": 1100, "height": 1400})
    ask_on_page(page, url, token)
    page.wait_for_selector("#answer-box:not([hidden])", timeout=60_000)
    assert page.inner_text("#status") == "answered_unverified"
    assert page.inner_text("#answer mark.unsupported") == "999,999"
    assert page.inner_text("#unsupported") == "not found in the evidence: 999,999"
    assert "figure check: not found in the evidence: 999,999" in page.inner_text("#steps")
