"""Fixtures for the report renderer tests: a run with a local store and a few real artifacts."""

from __future__ import annotations

import pytest
from assay.kernel.evidence import capture_file, capture_python_execution, capture_sql_execution

from assay import Kernel

RENDERER_PLUGINS = "local_store,markdown_report"


@pytest.fixture
def run(monkeypatch):
    monkeypatch.setenv("ASSAY_LOAD_PLUGINS", RENDERER_PLUGINS)
    kernel = Kernel()
    with kernel.new_run() as run:
        assert run.artifacts is not None
        yield run
    kernel.close()


def sales(run):
    return capture_sql_execution(
        run.artifacts, columns=["region", "revenue", "orders"],
        rows=iter([["north", 1234.5, 10], ["south", 99.25, 3], ["east", None, 0]]),
        sql="select region, sum(amount) as revenue, count(*) as orders from sales group by region",
        database="warehouse", dialect="postgresql", elapsed_ms=1.5,
    )


def analysis(run, result):
    return capture_python_execution(run.artifacts, code="REPORT_RESULT = ...", result=result, result_set=True,
                                    stdout="", stderr="", status="succeeded")


def chart(run, data: bytes = b"\x89PNG fake", media_type: str = "image/png"):
    name = "chart.svg" if media_type == "image/svg+xml" else "chart.png"
    return capture_file(run.artifacts, data=data, name=name, media_type=media_type, kind="chart")
