"""The ``pdf`` report renderer (plugin ``pdf_report``, registered lazily by :mod:`.plugins`): the HTML
report printed by headless Chromium.

Chromium is the system's (Debian's ``chromium`` package; ``scripts/setup-system.sh``
installs it), never a browser download. ``ASSAY_CHROMIUM`` names another
binary. Without one the render fails with ``REPORT_PDF_NO_CHROMIUM``; a
Chromium that fails or produces no PDF gives ``REPORT_PDF_FAILED``. The page
has no script and no network access (the HTML's Content-Security-Policy),
and Chromium runs with a fresh profile that is removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from assay import AssayError

from .html import HtmlRenderer

REPORT_PDF_NO_CHROMIUM = "REPORT_PDF_NO_CHROMIUM"
REPORT_PDF_FAILED = "REPORT_PDF_FAILED"

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = ("--headless", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-extensions", "--mute-audio")
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


def chromium_args(binary: str, profile: str) -> list[str]:
    """The command line: the flags above, a fresh profile, and ``--no-sandbox`` only as root (where
    Chromium refuses to start without it; the page it loads has no script and no network)."""
    args = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")
    return args


def html_to_pdf(page: bytes, *, timeout: float = PDF_TIMEOUT_S) -> bytes:
    """Print an HTML page to PDF with headless Chromium."""
    binary = find_chromium()
    if binary is None:
        where = os.environ.get("ASSAY_CHROMIUM") or "PATH (" + ", ".join(CHROMIUM_NAMES) + ")"
        raise AssayError(REPORT_PDF_NO_CHROMIUM, f"no Chromium to print the PDF with: none found on {where}",
                         "Install Debian's chromium package (scripts/setup-system.sh does), or set "
                         "ASSAY_CHROMIUM to a Chromium binary; --format html gives the same report without it.")
    with tempfile.TemporaryDirectory(prefix="assay-pdf-") as tmp:
        source, target = Path(tmp) / "report.html", Path(tmp) / "report.pdf"
        source.write_bytes(page)
        args = chromium_args(binary, str(Path(tmp) / "profile"))
        args += ["--no-pdf-header-footer", f"--print-to-pdf={target}", source.as_uri()]
        try:
            done = subprocess.run(args, check=False, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL,
                                  env=_environment(tmp))
        except subprocess.TimeoutExpired:
            raise AssayError(REPORT_PDF_FAILED, f"Chromium did not finish the PDF within {timeout:.0f} s",
                             "Try again on a less busy machine, or use --format html.") from None
        except OSError as exc:
            raise AssayError(REPORT_PDF_FAILED, f"Chromium could not start: {exc}",
                             "Check ASSAY_CHROMIUM / the chromium package.") from None
        data = target.read_bytes() if target.is_file() else b""
        if not data.startswith(b"%PDF-"):
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
            raise AssayError(REPORT_PDF_FAILED, f"Chromium exited {done.returncode} without a PDF: "
                             + " | ".join(tail)[:400], "Run the same with --format html to check the page.")
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
        if find_chromium() is None:  # fail before any reading: the cause is the machine, not the report
            html_to_pdf(b"")
        page, citations = HtmlRenderer().render_cited(document, reader)
        return html_to_pdf(page), citations


RENDERER = PdfRenderer()  # what the plugin registers (lazily: assay.plugins.reports.plugins)
