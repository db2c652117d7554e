"""The pdf renderer keeps one Chromium across renders: started once, started again if it died, closed
on demand; every render in a fresh browser context."""

from __future__ import annotations

import os
import signal

import pytest

from assay.plugins.reports import browser
from assay.plugins.reports.pdf import find_chromium, html_to_pdf
from tests.conftest import require

PAGE = b"<!doctype html><title>t</title><p>hello</p>"


@pytest.fixture
def chromium():
    require(find_chromium() is not None, "Chromium (Debian's chromium package)")
    browser.close_shared()
    yield
    browser.close_shared()


def test_two_pdf_renders_share_one_browser(chromium):
    before = browser.starts
    first, second = html_to_pdf(PAGE), html_to_pdf(PAGE)
    assert first.startswith(b"%PDF-") and second.startswith(b"%PDF-")
    assert browser.starts == before + 1


def test_a_browser_that_died_is_started_again(chromium):
    html_to_pdf(PAGE)
    running = browser._shared
    os.killpg(running.process.pid, signal.SIGKILL)
    running.process.wait(timeout=10)
    before = browser.starts
    assert html_to_pdf(PAGE).startswith(b"%PDF-")
    assert browser.starts == before + 1 and browser._shared is not running


def test_close_shared_ends_the_browser_and_removes_its_profile(chromium):
    html_to_pdf(PAGE)
    running = browser._shared
    browser.close_shared()
    assert running.process.poll() is not None and not os.path.exists(running.home)
    assert browser._shared is None


def test_renders_do_not_share_state_between_reports(chromium):
    # each render opens a browser context of its own and disposes of it: nothing is left for the next report
    html_to_pdf(b"<!doctype html><p>one</p>")
    contexts = browser._shared.call("Target.getBrowserContexts")["browserContextIds"]
    assert contexts == []  # the render's context was disposed
