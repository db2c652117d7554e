"""Fixtures for the report renderer tests: a run with a local store and a few real artifacts."""

from __future__ import annotations

import pytest

from assay import Kernel
from assay.kernel.evidence import capture_file, capture_python_execution, capture_sql_execution

RENDERER_PLUGINS = "local_store,markdown_report,html_report,json_report,pdf_report,sql"


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
        run.artifacts,
        columns=["region", "revenue", "orders"],
        rows=iter([["north", 1234.5, 10], ["south", 99.25, 3], ["east", None, 0]]),
        sql="select region, sum(amount) as revenue, count(*) as orders from sales group by region",
        database="warehouse",
        dialect="postgresql",
        elapsed_ms=1.5,
    )


def analysis(run, result):
    return capture_python_execution(
        run.artifacts,
        code="REPORT_RESULT = ...",
        result=result,
        result_set=True,
        stdout="",
        stderr="",
        status="succeeded",
    )


def chart(run, data: bytes = b"\x89PNG fake", media_type: str = "image/png"):
    name = "chart.svg" if media_type == "image/svg+xml" else "chart.png"
    return capture_file(run.artifacts, data=data, name=name, media_type=media_type, kind="chart")


INJECTED = [
    "<script>alert('x')</script>",
    '"><img src=x onerror=alert(1)>',
    "</table><h1>forged</h1>",
    "a & b",
]


@pytest.fixture
def shop(tmp_path, monkeypatch):
    """A real SQLite database whose text values try to inject markup, served through ``sql_query``."""
    import sqlite3

    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "create table stores (id integer, name text, region text, revenue real, orders integer)"
        )
        rows = [
            (
                i,
                INJECTED[i % len(INJECTED)] if i < 8 else f"store {i}",
                ["north", "south", "east"][i % 3],
                1000.0 + i * 12.5 if i != 5 else None,
                10 * i,
            )
            for i in range(300)
        ]
        db.executemany("insert into stores values (?, ?, ?, ?, ?)", rows)
    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"shop=sqlite:///{path}")
    return path


def query(run, sql: str) -> str:
    """Run ``sql`` through the real ``sql_query`` tool; the artifact id of its captured result."""
    result = run.kernel.call_tool("sql_query", {"sql": sql, "datasource": "shop"}, run=run)
    assert result.success, result.message
    return result.artifacts[0].artifact_id


CHROMIUM_FLAGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def browser(tmp_path):
    """The system's headless Chromium (Debian's package) driven by Playwright: no browser download."""
    import os

    from assay.plugins.reports.pdf import find_chromium
    from tests.conftest import require

    binary = find_chromium()
    require(binary is not None, "Chromium (Debian's chromium package)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(False, "Playwright for Python (the test extra)")
    flags = CHROMIUM_FLAGS + (["--no-sandbox"] if os.geteuid() == 0 else [])
    with sync_playwright() as pw:
        launched = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=binary,
            headless=True,
            args=flags,
            viewport={"width": 1100, "height": 900},
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def pg_stores(monkeypatch):
    """A PostgreSQL table of 30 stores whose ``revenue`` is ``NUMERIC(12,2)`` (some whole, some not), in a
    schema of its own read by a least-privilege login, served as datasource ``pgshop`` through ``sql_query``."""
    import uuid

    import psycopg

    from tests.conftest import PG_DSN, postgres_available, require

    require(postgres_available(), "PostgreSQL on 127.0.0.1:5432")
    schema, role = "assay_rep_" + uuid.uuid4().hex[:10], "assay_rep_" + uuid.uuid4().hex[:10]
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
        admin.execute(f'CREATE TABLE "{schema}".stores (store text, revenue numeric(12,2))')
        # whole-number decimals are stored as ints, the others as {"$decimal": ...}: one column, both forms
        admin.execute(
            f"INSERT INTO \"{schema}\".stores SELECT 'store ' || i, "
            "CASE WHEN i % 3 = 0 THEN i * 1000 ELSE i * 1000 + 0.25 END FROM generate_series(1, 30) i"
        )
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
        admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        admin.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
    monkeypatch.setenv(
        "ASSAY_SQL_DATABASES",
        f"pgshop=postgresql://{role}@127.0.0.1:5432/test?options=-csearch_path%3D{schema}",
    )
    try:
        yield schema
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
            )
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
            admin.execute(f'DROP ROLE "{role}"')
