"""The page's follow-ups and files, in Debian's Chromium driven by Playwright (the launch, the server and
the scripted model of test_workspace.py): a follow-up shows the earlier turn above it; a file picked
for the question box is uploaded with a progress bar, shown as a chip, and the next question's step
queries it."""

from __future__ import annotations

import re

import pytest

from tests.service import test_workspace as ws
from tests.service.test_workspace import axe_violations, sign_in, watched

workspace = ws.workspace  # the fixtures of the workspace tests: server, scripted model, browser
chromium = ws.chromium

pytest.importorskip("fastapi")
pytestmark = pytest.mark.timeout(300)

CSV = b"region,amount\nnorth,1\nsouth,2\nnorth,4\n"


def test_a_follow_up_continues_the_thread_and_shows_both_turns(workspace, chromium):
    url, token, gate, script = workspace
    gate.set()
    context = chromium.new_context(viewport={"width": 1280, "height": 1000})
    page, problems = watched(context, url)
    sign_in(page, url, token)
    page.fill("#question", "Which region sold the most?")
    page.click("#ask-button")
    page.wait_for_selector("#report-box:not([hidden])", timeout=60_000)
    first = page.inner_text("#run-id")
    assert page.is_visible("#thread-note") and page.is_visible("#new-thread-button")

    script[:] = [
        {"tool": "sql_query", "arguments": {"sql": "SELECT COUNT(*) AS n FROM sales"}},
        {"text": "There were 120 sales in all."},
    ]
    page.fill("#question", "And how many sales were there?")
    page.click("#ask-button")
    page.wait_for_function(
        "document.querySelector('#answer').textContent.includes('120 sales in all')",
        timeout=60_000,
    )
    page.wait_for_selector(f"#turns li[data-run='{first}']")
    turn = page.locator("#turns li.turn")
    assert turn.count() == 1
    assert "Which region sold the most?" in turn.first.inner_text()
    assert "West" in turn.first.inner_text()  # the earlier answer
    assert page.inner_text("#run-question") == "And how many sales were there?"
    assert page.inner_text("#run-id") != first
    assert axe_violations(page) == []

    # "New thread": the next question has no parent and no earlier turns
    script[:] = [{"text": "Hello."}]
    page.click("#new-thread-button")
    assert page.is_hidden("#thread-note")
    page.fill("#question", "A fresh question")
    page.click("#ask-button")
    page.wait_for_function(
        "document.querySelector('#run-question').textContent === 'A fresh question' && "
        "!document.querySelector('#answer-box').hidden",
        timeout=60_000,
    )
    assert page.locator("#turns li.turn").count() == 0
    assert problems == [], "\n".join(problems)


def files_query(messages):
    """Query the run's uploads datasource (its name is in the system prompt)."""
    text = "\n".join(m.content or "" for m in messages)
    name = re.search(r"uploads_[a-z0-9]+", text).group(0)
    sql = "SELECT region, SUM(amount) AS total FROM orders GROUP BY region ORDER BY region"
    return {"tool": "sql_query", "arguments": {"sql": sql, "datasource": name}}


def test_a_picked_csv_is_uploaded_shown_as_a_chip_and_queried(workspace, chromium):
    url, token, gate, script = workspace
    gate.set()
    script[:] = [files_query, {"text": "North sold 5, south 2."}]
    context = chromium.new_context(viewport={"width": 375, "height": 800}, is_mobile=True)
    page, problems = watched(context, url)
    sign_in(page, url, token)
    page.set_input_files(
        "#file-input", files=[{"name": "orders.csv", "mimeType": "text/csv", "buffer": CSV}]
    )
    chip = page.wait_for_selector("#chips li.chip")
    assert "orders.csv" in chip.inner_text()
    assert page.is_hidden("#upload-progress")  # shown while it uploads, hidden once done
    assert axe_violations(page) == []
    page.fill("#question", "Which region sold most in my file?")
    page.click("#ask-button")
    page.wait_for_function(
        "document.querySelector('#answer').textContent.includes('North sold 5')", timeout=60_000
    )
    sql = page.locator("#steps pre.code code.language-sql").first.inner_text()
    assert "FROM orders" in sql
    assert "north" in page.locator("table.data").first.inner_text()
    assert page.locator("#chips li.chip").count() == 0  # the files went with that question
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    assert problems == [], "\n".join(problems)


def test_a_chip_can_be_removed_before_asking(workspace, chromium):
    url, token, _, _ = workspace
    context = chromium.new_context(viewport={"width": 1280, "height": 1000})
    page, problems = watched(context, url)
    sign_in(page, url, token)
    page.set_input_files(
        "#file-input", files=[{"name": "orders.csv", "mimeType": "text/csv", "buffer": CSV}]
    )
    page.wait_for_selector("#chips li.chip")
    page.click("#chips button[aria-label='Remove orders.csv']")
    assert page.locator("#chips li.chip").count() == 0 and page.is_hidden("#chips")
    assert problems == [], "\n".join(problems)


def test_a_csv_dropped_on_the_question_box_shows_its_upload_progress_then_a_chip(
    workspace, chromium
):
    url, token, _, _ = workspace
    context = chromium.new_context(viewport={"width": 1280, "height": 1000})
    page, problems = watched(context, url)
    sign_in(page, url, token)
    page.evaluate(
        """() => { window.seenProgress = [];
        new MutationObserver(() => { const b = document.getElementById('upload-progress');
          window.seenProgress.push([b.hidden, b.value]); })
          .observe(document.getElementById('upload-progress'), {attributes: true}); }"""
    )
    page.evaluate(
        """(text) => { const data = new DataTransfer();
        data.items.add(new File([text], 'orders.csv', {type: 'text/csv'}));
        const ask = document.getElementById('ask');
        ask.dispatchEvent(new DragEvent('dragover', {dataTransfer: data, bubbles: true, cancelable: true}));
        ask.dispatchEvent(new DragEvent('drop', {dataTransfer: data, bubbles: true, cancelable: true})); }""",
        CSV.decode(),
    )
    chip = page.wait_for_selector("#chips li.chip")
    assert "orders.csv" in chip.inner_text()
    seen = page.evaluate("window.seenProgress")
    assert [False, 100] in seen  # the bar was shown and reached 100 %
    assert page.is_hidden("#upload-progress")
    assert problems == [], "\n".join(problems)


def test_a_refused_upload_shows_its_code_and_leaves_no_chip(workspace, chromium):
    url, token, _, _ = workspace
    context = chromium.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    sign_in(page, url, token)
    page.set_input_files(
        "#file-input", files=[{"name": "empty.csv", "mimeType": "text/csv", "buffer": b""}]
    )
    page.wait_for_selector("#error:not([hidden])")
    assert "FILE_EMPTY" in page.inner_text("#error")
    assert page.locator("#chips li.chip").count() == 0 and page.is_hidden("#upload-progress")
