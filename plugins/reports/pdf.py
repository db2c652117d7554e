"""The ``pdf`` report renderer (plugin ``pdf_report``, registered lazily by :mod:`.plugins`): the HTML
report printed by headless Chromium.

Chromium is the system's (Debian's ``chromium`` package; ``scripts/setup-system.sh``
installs it), never a browser download. ``ASSAY_CHROMIUM`` names another
binary. Without one the render fails with ``REPORT_PDF_NO_CHROMIUM``; a
Chromium that fails or produces no PDF gives ``REPORT_PDF_FAILED``. The page
has no script and no network access (the HTML's Content-Security-Policy),
and Chromium runs with a fresh profile that is removed when it is closed.
One browser is kept across renders (:mod:`.browser`): starting Chromium is
most of a cold render's time.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from assay import AssayError

from .html import HtmlRenderer

REPORT_PDF_NO_CHROMIUM = "REPORT_PDF_NO_CHROMIUM"
REPORT_PDF_FAILED = "REPORT_PDF_FAILED"

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = (
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--mute-audio",
)
PDF_TIMEOUT_S = 120


def find_chromium() -> str | None:
    """``ASSAY_CHROMIUM`` if set (it must be an executable), else the first Chromium on PATH."""
    chosen = os.environ.get("ASSAY_CHROMIUM")
    if chosen:
        return chosen if os.path.isfile(chosen) and os.access(chosen, os.X_OK) else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_args(binary: str) -> list[str]:
    """The command line: the flags above and ``--no-sandbox`` only as root (where Chromium refuses to
    start without it; the pages it loads have no script and no network). :mod:`.browser` adds a fresh
    profile and the DevTools pipe."""
    args = [binary, *CHROMIUM_FLAGS]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")
    return args


def html_to_pdf(page: bytes, *, timeout: float = PDF_TIMEOUT_S) -> bytes:
    """Print an HTML page to PDF in the process's headless Chromium (:mod:`.browser`: one browser kept
    across renders, started again if it died; each render in a fresh context and page)."""
    from . import browser as chromium

    binary = find_chromium()
    if binary is None:
        where = os.environ.get("ASSAY_CHROMIUM") or "PATH (" + ", ".join(CHROMIUM_NAMES) + ")"
        raise AssayError(
            REPORT_PDF_NO_CHROMIUM,
            f"no Chromium to print the PDF with: none found on {where}",
            "Install Debian's chromium package (scripts/setup-system.sh does), or set "
            "ASSAY_CHROMIUM to a Chromium binary; --format html gives the same report without it.",
        )
    with tempfile.TemporaryDirectory(prefix="assay-pdf-") as tmp:
        source = Path(tmp) / "report.html"
        source.write_bytes(page)
        for attempt in (1, 2):  # a browser that died since the last render is started again once
            browser = chromium.shared(chromium_args(binary), _environment)
            try:
                data = browser.print_pdf(source.as_uri(), timeout=timeout)
                break
            except chromium.BrowserGone:
                if attempt == 2:
                    raise AssayError(
                        REPORT_PDF_FAILED,
                        "Chromium ended while printing the PDF: " + browser.stderr_tail(),
                        "Render --format html to check the page.",
                    ) from None
            except TimeoutError:
                chromium.discard(browser)  # a stuck page: the next render starts a new browser
                raise AssayError(
                    REPORT_PDF_FAILED,
                    f"Chromium did not finish the PDF within {timeout:.0f} s",
                    "Try again on a less busy machine, or use --format html.",
                ) from None
        if not data.startswith(b"%PDF-"):
            raise AssayError(
                REPORT_PDF_FAILED,
                "Chromium printed something that is not a PDF",
                "Run the same with --format html to check the page.",
            )
        return data


def _environment(tmp: str) -> dict[str, str]:
    """Chromium's environment: PATH and locale only, a private HOME (nothing of the caller's leaks in)."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    return keep | {"HOME": tmp, "XDG_CONFIG_HOME": tmp, "XDG_CACHE_HOME": tmp}


class PdfRenderer:
    """Renders a report document as PDF: the ``html`` renderer's page, printed by headless Chromium."""

    name = "pdf"
    media_type = "application/pdf"

    def render(self, document: Any, reader: Any) -> bytes:
        return self.render_cited(document, reader)[0]

    def render_cited(self, document: Any, reader: Any) -> tuple[bytes, list[dict[str, Any]]]:
        if (
            find_chromium() is None
        ):  # fail before any reading: the cause is the machine, not the report
            html_to_pdf(b"")
        page, citations = HtmlRenderer().render_cited(document, reader)
        return html_to_pdf(page), citations


RENDERER = PdfRenderer()  # what the plugin registers (lazily: assay.plugins.reports.plugins)
