"""The analyst's path through the page, in Debian's Chromium driven by Playwright (no browser download):
sign in, ask, watch the steps, sort a table, download its CSV, open the chart, read the report, click a
citation, reload, find the run in history; the keyboard, a 375 px screen, no console errors, and
axe-core (vendored: tests/service/vendor) finding no serious or critical violation.

The server runs in this process with a scripted model: a query of every sale (120 rows, more than a
table shows), a chart, a report citing both, an answer streamed in pieces. ``ASSAY_SCREENSHOTS=DIR``
keeps pictures of the main screens (docs/img/ was made so).
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest

from assay import RunContext, ToolResult, tool
from tests.conftest import require
from tests.service.conftest import free_port, make_sales

pytest.importorskip("fastapi")
pytestmark = pytest.mark.timeout(300)

AXE = Path(__file__).with_name("vendor") / "axe.min.js"
ALL_SALES = "SELECT id, region, amount FROM sales ORDER BY id"
ANSWER = "**West** sold the most.\n\n- 120 sales in all\n- see the report"
SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="320" height="160"><rect width="320" height="160" '
    b'fill="#fff"/><rect x="20" y="40" width="60" height="120" fill="#2456c9"/></svg>'
)


def report(messages):
    text = "\n".join(m.content or "" for m in messages if m.role == "tool")
    sales, chart = list(dict.fromkeys(re.findall(r"art_[0-9a-f]{20}", text)))[
        :2
    ]  # in the order captured
    return {
        "tool": "render_report",
        "arguments": {
            "document": {
                "title": "Sales",
                "blocks": [
                    {
                        "type": "text",
                        "text": "The first sale was in {region}.",
                        "cite": {"region": {"artifact_id": sales, "path": [0, "region"]}},
                    },
                    {
                        "type": "table",
                        "artifact_id": sales,
                        "columns": ["id", "region", "amount"],
                        "max_rows": 5,
                    },
                    {"type": "image", "artifact_id": chart, "caption": "Sales chart"},
                ],
            }
        },
    }


@tool
def draw_chart(run: RunContext) -> ToolResult:
    """Draw the sales chart (a test tool)."""
    from assay.kernel.evidence import capture_file

    record = capture_file(
        run.artifacts, data=SVG, name="chart.svg", media_type="image/svg+xml", kind="chart"
    )
    return ToolResult.ok({"artifact_id": record.artifact_id}, artifacts=[record.ref()])


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """``(url, alice's token, gate, script)``: the app in this process; the model waits at its answer until
    ``gate`` is set (a test sets it at once, or after a reload to see a run in progress reattach).
    ``script`` is the model's script, which a test may change before it asks."""
    import uvicorn

    from assay import Kernel, hookimpl
    from assay.plugins.models.scripted import ScriptedModel
    from assay.plugins.service.server import build
    from assay.plugins.service.settings import ServiceSettings
    from assay.plugins.service.tokens import TokenStore, store_path

    gate = threading.Event()

    def answer(messages):
        gate.wait(120)
        return {"text": ANSWER}

    script = [
        {"tool": "sql_query", "arguments": {"sql": ALL_SALES}},
        {"tool": "draw_chart"},
        report,
        answer,
    ]

    class Streaming(ScriptedModel):
        model_id = "web_workspace"

        def __init__(self, **_: object) -> None:
            super().__init__(list(script))

        def complete(self, messages, tools, *, on_text=None):
            reply = super().complete(messages, tools, on_text=on_text)
            if on_text is not None and reply.content and not reply.tool_calls:
                for piece in re.findall(
                    r".{1,12}", reply.content, re.S
                ):  # the answer as it streams
                    on_text(piece)
            return reply

    class Plugin:
        __name__ = "web_workspace"

        @hookimpl
        def register_models(self, register):
            register(Streaming)

        @hookimpl
        def register_tools(self, register):
            register(draw_chart)

    db = make_sales(tmp_path / "sales.db")
    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"sales=sqlite:///{db}")
    kernel = Kernel(plugins=[Plugin()])
    tokens = TokenStore(store_path(kernel.settings.home))
    alice, _ = tokens.create("alice")
    app, _ = build(kernel, ServiceSettings(model="web_workspace"), tokens)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", alice, gate, script
    gate.set()
    server.should_exit = True
    thread.join(timeout=60)
    kernel.close()


@pytest.fixture
def chromium():
    from assay.plugins.reports.pdf import find_chromium

    binary = find_chromium()
    require(binary is not None, "Chromium (Debian's chromium package)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(False, "Playwright for Python (the test extra)")
    flags = [
        "--headless",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ] + (["--no-sandbox"] if os.geteuid() == 0 else [])
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=binary, headless=True, args=flags)
        try:
            yield browser
        finally:
            browser.close()


def watched(context, url):
    """A new page, and the list its console errors, page errors and requests elsewhere go to.

    Not counted: Chromium's notice that script was blocked in the report's frame. The report holds no
    script (its CSP forbids any); the script is Playwright's own, which it runs in a frame after a
    navigation in it (a citation click), and the frame's sandbox (no allow-scripts) refuses it."""
    page = context.new_page()
    problems: list[str] = []

    def console(message):
        if message.type == "error" and not (
            message.text.startswith("Blocked script execution in 'blob:")
            and "frame is sandboxed" in message.text
        ):
            problems.append(f"console {message.type}: {message.text}")

    page.on("console", console)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on(
        "request",
        lambda r: None if r.url.startswith((url, "blob:", "data:")) else problems.append(r.url),
    )
    return page, problems


def sign_in(page, url, token):
    page.goto(url + "/")
    page.wait_for_selector("#signin:not([hidden])")
    page.fill("#token", token)
    page.click("#signin-button")
    page.wait_for_selector("#datasource option[value='sales']", state="attached")


def axe_violations(page):
    page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    found = page.evaluate(
        "async () => (await axe.run(document)).violations.map(v => "
        "({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' '))}))"
    )
    return [v for v in found if v["impact"] in ("serious", "critical")]


def shoot(page, name):
    where = os.environ.get("ASSAY_SCREENSHOTS")
    if where:
        page.screenshot(path=str(Path(where) / name), full_page=True)


def test_the_analyst_path_through_the_workspace(workspace, chromium, tmp_path):
    url, token, gate, _ = workspace
    context = chromium.new_context(viewport={"width": 1280, "height": 1000}, accept_downloads=True)
    page, problems = watched(context, url)
    sign_in(page, url, token)
    shoot(page, "workspace-empty.png")
    page.fill("#question", "Which region sold the most?")
    page.press("#question", "Control+Enter")  # the keyboard asks

    # the steps: SQL highlighted, a table of 50 of the 120 rows, sortable, elapsed time, the chart inline
    page.wait_for_selector("table.data")
    sql = page.locator("#steps pre.code code.language-sql")
    assert "SELECT" in sql.first.inner_text() and sql.first.locator("span.kw").count() >= 3
    table = page.locator("table.data").first
    assert table.locator("caption").inner_text().startswith("50 of 120 rows")
    assert page.locator("#steps .elapsed").count() >= 1
    table.locator("th button", has_text="amount").click()
    table.locator("th button", has_text="amount").click()  # twice: descending
    assert (
        table.locator("tbody tr").first.locator("td").nth(2).inner_text() == "147"
    )  # 49 * 3, of the 50 shown
    assert table.locator("th", has_text="amount").get_attribute("aria-sort") == "descending"
    chart = page.locator("#steps figure.chart img")
    chart.wait_for()
    assert chart.evaluate("i => i.complete && i.naturalWidth") == 320
    with context.expect_page() as opened:  # the chart opens on its own in a new tab
        chart.click()
    assert opened.value.url.startswith("blob:" + url)
    opened.value.close()
    # the model is still at its answer: the thinking indicator says so; a reload reattaches to the run
    page.wait_for_selector("#thinking:not([hidden])")
    run_id = page.inner_text("#run-id")
    page.reload()
    page.wait_for_selector(f"#history-list button[data-run='{run_id}']")
    page.wait_for_selector("table.data")  # the steps so far, from the run's event stream
    assert page.inner_text("#run-id") == run_id and page.inner_text("#status") in (
        "running",
        "queued",
    )
    gate.set()
    page.wait_for_selector("#report-box:not([hidden])", timeout=60_000)

    # the answer, streamed and rendered as Markdown; the report inline
    assert page.inner_text("#answer strong") == "West"
    assert page.locator("#answer li").count() == 2
    assert page.inner_text("#status") == "answered"
    with page.expect_download() as download:
        table.locator("xpath=ancestor::div[@data-artifact]").locator(
            "button", has_text="Download CSV"
        ).click()
    saved = tmp_path / "sales.csv"
    download.value.save_as(saved)
    lines = saved.read_text().splitlines()
    assert (
        lines[0] == "id,region,amount" and len(lines) == 121
    )  # the whole artifact, not the 50 shown

    frame = page.frame_locator("#report")
    assert "The first sale was in north" in frame.locator("body").inner_text()
    assert frame.locator("figure img").bounding_box()["width"] > 100  # the chart, cited
    shoot(page, "workspace-run.png")
    # a citation moves within the report, not to the app; clicked as a person does (mouse at its place:
    # Playwright's own click runs its checks as script in the frame, which the sandbox refuses, noisily)
    frame.locator("sup.ref a").first.scroll_into_view_if_needed()
    box = frame.locator("sup.ref a").first.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    report_frame = next(f for f in page.frames if f.url.startswith("blob:"))
    page.wait_for_function(
        "() => document.getElementById('report').contentWindow.location.hash === '#src-1'"
    )
    assert report_frame.url.endswith("#src-1")
    assert frame.locator("#src-1").is_visible() and page.url.endswith("#run=" + run_id)
    page.click("#report-verify")
    page.wait_for_selector("#verify-result.ok")
    assert page.inner_text("#verify-result").startswith("verified:")
    assert page.get_attribute("#report-open", "href").startswith("blob:")
    with page.expect_download(timeout=120_000) as pdf:
        page.click("#report-pdf")
    assert Path(pdf.value.path()).read_bytes().startswith(b"%PDF-")

    # history: newest first, searchable, with its badge; a run reopens with steps, answer and report
    page.reload()
    page.wait_for_selector("#report-box:not([hidden])", timeout=60_000)
    entry = page.locator(f"#history-list button[data-run='{run_id}']")
    assert entry.locator(".badge").inner_text() == "answered"
    page.fill("#history-search", "nothing like it")
    assert page.locator("#history-list li").count() == 0
    page.fill("#history-search", "which REGION")
    assert page.locator("#history-list li").count() == 1
    assert axe_violations(page) == []
    assert problems == [], "\n".join(problems)


def test_the_workspace_at_375_px_keeps_to_the_screen_and_passes_axe(workspace, chromium):
    url, token, gate, _ = workspace
    gate.set()
    context = chromium.new_context(viewport={"width": 375, "height": 800}, is_mobile=True)
    page, problems = watched(context, url)
    page.goto(url + "/")
    page.wait_for_selector("#signin:not([hidden])")
    assert axe_violations(page) == []  # the sign-in screen
    shoot(page, "signin-375.png")
    sign_in(page, url, token)
    page.fill("#question", "Which region sold the most?")
    page.click("#ask-button")
    page.wait_for_selector("#report-box:not([hidden])", timeout=60_000)
    assert (
        page.evaluate("document.documentElement.scrollWidth") <= 375
    )  # nothing wider than the screen
    assert axe_violations(page) == []
    shoot(page, "workspace-375.png")
    assert problems == [], "\n".join(problems)


def test_escape_cancels_the_running_run(workspace, chromium):
    url, token, gate, _ = (
        workspace  # the gate stays shut: the run waits at its answer until cancelled
    )
    page, problems = watched(chromium.new_context(), url)
    sign_in(page, url, token)
    page.fill("#question", "Which region sold the most?")
    page.click("#ask-button")
    page.wait_for_selector("#thinking:not([hidden])")
    page.wait_for_selector("#cancel-button:not([disabled])")
    page.keyboard.press("Escape")
    page.wait_for_function(
        "document.getElementById('status').textContent === 'cancelled'", timeout=60_000
    )
    assert problems == [], "\n".join(problems)


def test_signing_out_ends_the_session(workspace, chromium):
    url, token, _, _ = workspace
    page, problems = watched(chromium.new_context(), url)
    sign_in(page, url, token)
    page.click("#signout-button")
    page.wait_for_selector("#signin:not([hidden])")
    page.reload()
    page.wait_for_selector("#signin:not([hidden])")  # the cookie no longer signs in
    assert problems == [], "\n".join(problems)


def test_a_failed_step_shows_its_code_message_and_hint(workspace, chromium):
    url, token, gate, script = workspace
    gate.set()
    script[:] = [
        {"tool": "sql_query", "arguments": {"sql": "SELECT nothing FROM nowhere"}},
        {"text": "No answer."},
    ]
    page, problems = watched(chromium.new_context(), url)
    sign_in(page, url, token)
    page.fill("#question", "Which region sold the most?")
    page.click("#ask-button")
    problem = page.locator("#steps li.failed .problem")
    problem.wait_for()
    code = problem.locator("strong").inner_text()
    assert code.startswith("SQL_") and "Hint: " in problem.inner_text()
    assert page.locator("#steps li.failed .kind").inner_text() == "sql_query failed: " + code
    assert problems == [], "\n".join(problems)
