"""The pdf renderer: the HTML report printed by the system's headless Chromium."""

from __future__ import annotations

import pytest

from assay import AssayError
from assay.plugins.reports.pdf import find_chromium
from tests.conftest import require
from tests.reports.conftest import sales


def test_register_report_renderers_pdf_prints_the_html_report(run):
    require(find_chromium() is not None, "Chromium (Debian's chromium package)")
    record = sales(run)
    doc = {
        "title": "Sales",
        "blocks": [
            {
                "type": "number",
                "label": "North",
                "artifact_id": record.artifact_id,
                "path": [0, "revenue"],
            },
            {
                "type": "chart",
                "chart": "bar",
                "artifact_id": record.artifact_id,
                "x": "region",
                "y": "orders",
            },
        ],
    }
    pdf = run.kernel.renderer("pdf").render(doc, run.artifacts)
    assert pdf.startswith(b"%PDF-") and b"/Type /Page" in pdf and len(pdf) > 2000


def test_pdf_without_chromium_fails_with_a_clear_code(run, monkeypatch, tmp_path):
    monkeypatch.setenv("ASSAY_CHROMIUM", str(tmp_path / "no-chromium-here"))
    record = sales(run)
    doc = {
        "title": "t",
        "blocks": [
            {"type": "number", "label": "n", "artifact_id": record.artifact_id, "path": [0, 1]}
        ],
    }
    with pytest.raises(AssayError) as caught:
        run.kernel.renderer("pdf").render(doc, run.artifacts)
    assert (
        caught.value.code == "REPORT_PDF_NO_CHROMIUM" and "no-chromium-here" in caught.value.message
    )
    assert "chromium" in caught.value.hint


def test_a_chromium_that_prints_nothing_fails_with_report_pdf_failed(run, monkeypatch, tmp_path):
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\necho 'crashed' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("ASSAY_CHROMIUM", str(fake))
    record = sales(run)
    doc = {
        "title": "t",
        "blocks": [
            {"type": "number", "label": "n", "artifact_id": record.artifact_id, "path": [0, 1]}
        ],
    }
    with pytest.raises(AssayError) as caught:
        run.kernel.renderer("pdf").render(doc, run.artifacts)
    assert caught.value.code == "REPORT_PDF_FAILED" and "exited 3" in caught.value.message
