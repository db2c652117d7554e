"""Fixtures for the knowledge plugin's tests: real files (Markdown, CSV, a generated PDF) and kernels."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.knowledge.files import DICTIONARY, GLOSSARY, PLUGINS, POLICY_PAGES, pdf_bytes


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A knowledge base directory: Markdown, a CSV data dictionary, a PDF, and a file type it ignores."""
    root = tmp_path / "metrics"
    (root / "sub").mkdir(parents=True)
    (root / "glossary.md").write_text(GLOSSARY)
    (root / "columns.csv").write_text(DICTIONARY)
    (root / "sub" / "policy.pdf").write_bytes(pdf_bytes(POLICY_PAGES))
    (root / "notes.json").write_text('{"ignored": true}')
    (root / ".hidden.md").write_text("# Hidden\nnever indexed")
    return root


@pytest.fixture
def kernel(make_assay_kernel, docs: Path, monkeypatch: pytest.MonkeyPatch):
    """A started kernel with ``ASSAY_KNOWLEDGE=metrics=DOCS`` and the evidence and report plugins."""
    monkeypatch.setenv("ASSAY_KNOWLEDGE", f"metrics={docs}")
    return make_assay_kernel(*PLUGINS).start()


@pytest.fixture
def base(kernel):
    return kernel.resources["metrics"]
