"""Issue 14 through the SQL plugin: what sql_query and the configuration tell the reader is true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assay import Kernel
from tests.kernel.conftest import plugin_info
from tests.sql.conftest import new_db

ROOT = Path(__file__).resolve().parents[2]
REPORT_PLUGINS = [
    "assay.plugins.sql",
    "assay.plugins.evidence_tools",
    "assay.plugins.reports.markdown",
]


@pytest.fixture
def small_store_kernel(monkeypatch, request):
    """A kernel whose artifacts are cut at 20,000 bytes, with the retail data on SQLite."""
    monkeypatch.setenv("ASSAY_ARTIFACT_MAX_BYTES", "20000")
    kernel = Kernel(plugins=REPORT_PLUGINS, load_entrypoints=False)
    kernel.start()
    kernel.attach(new_db("sqlite", request))
    yield kernel
    kernel.close()


SQL = "SELECT order_id, total FROM orders ORDER BY order_id"


def test_sql_query_text_of_an_incomplete_artifact_says_kept_versus_returned(small_store_kernel):
    kernel = small_store_kernel
    run = kernel.new_run()
    result = kernel.call_tool("sql_query", {"sql": SQL}, run=run)
    assert result.success, result.message
    record = run.artifacts.catalog.get(result.data["artifact_id"])
    assert not record.complete and 0 < record.row_count < 2000
    assert "the full result is in artifact" not in result.content  # it is not the full result
    assert "INCOMPLETE" in result.content
    assert f"INCOMPLETE: {record.row_count:,} of 2,000 rows kept" in result.content
    assert (
        f"returned 2,000 rows but artifact {record.artifact_id} keeps only the first {record.row_count:,}"
        in result.content
    )
    assert (
        result.data["artifact_complete"] is False
        and result.data["artifact_row_count"] == record.row_count
    )
    assert record.provenance["rows_returned"] == 2000  # the record knows it too
    manifest = kernel.call_tool("report_evidence_manifest", {}, run=run)
    assert f"returned 2,000 rows; {record.row_count:,} were kept" in manifest.content
    read = kernel.call_tool(
        "read_artifact_result",
        {"artifact_id": record.artifact_id, "selectors": {"path": [3, "total"]}},
        run=run,
    )
    assert read.success and "INCOMPLETE" in read.content and "of 2000 returned" in read.content
    last = kernel.call_tool(
        "read_artifact_result",
        {"artifact_id": record.artifact_id, "selectors": {"path": [-1, "total"]}},
        run=run,
    )
    assert not last.success and last.error_code == "ARTIFACT_INCOMPLETE"
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "number",
                "label": "last order",
                "artifact_id": record.artifact_id,
                "path": [-1, "total"],
            }
        ],
    }
    report = kernel.call_tool("render_report", {"document": doc}, run=run)
    assert not report.success and "ARTIFACT_INCOMPLETE" in report.message
    run.close()


def test_failed_sql_attempt_has_row_count_null_everywhere(small_store_kernel):
    kernel = small_store_kernel
    run = kernel.new_run()
    result = kernel.call_tool("sql_query", {"sql": "SELECT missing_col FROM orders"}, run=run)
    assert not result.success and result.error_code == "SQL_QUERY_FAILED"
    ref = result.artifacts[0]
    assert ref.status == "failed" and ref.row_count is None
    assert run.artifacts.catalog.get(ref.artifact_id).row_count is None
    manifest = kernel.call_tool("report_evidence_manifest", {}, run=run)
    assert (
        manifest.data["artifacts"][0]["row_count"] is None and "failed rows=-" in manifest.content
    )
    run.close()


def test_sql_preview_says_the_character_limit_cut_it(small_store_kernel):
    kernel = small_store_kernel
    cols = ", ".join(
        f"printf('%.300c', 'x') AS c{i}" for i in range(25)
    )  # ~7,700 characters per row
    result = kernel.call_tool(
        "sql_query",
        {"sql": f"SELECT order_id, {cols} FROM orders ORDER BY order_id LIMIT 3"},
        run=kernel.new_run(capture=False),
    )
    assert result.success and result.data["preview_rows"] == 2
    assert "showing 2 of 3 rows (cut at 20,000 characters)" in result.content
    rows = kernel.call_tool(
        "sql_query", {"sql": "SELECT order_id FROM orders"}, run=kernel.new_run(capture=False)
    )
    assert "showing 50 of 2,000 rows (cut at the 50-row preview limit)" in rows.content


@pytest.mark.parametrize(
    ("value", "bad", "problem"),
    [
        (
            "a=sqlite:///x.db,b=sqlite:///y.db",
            "a=sqlite:///x.db,b=sqlite:///y.db",
            "more than one URL",
        ),
        ("a=sqlite:///x.db;a=sqlite:///y.db", "a=sqlite:///y.db", "a second time"),
        ("a=sqlite:///x.db;b=", "b=", "not a database URL"),
        ("retail.db", "retail.db", "not a database URL"),
        ("a b=sqlite:///x.db", "a", "not a database URL"),
        ('{"a": "sqlite:///x.db",}', "not valid JSON", "JSON"),
    ],
)
def test_malformed_sql_databases_fails_at_start_up_naming_the_variable_and_part(
    monkeypatch, value, bad, problem
):
    # As for any invalid [sql] setting, the plugin fails at start-up (status failed, its tools not
    # registered) with CONFIG_INVALID; before, this typo became one datasource with a bogus URL.
    monkeypatch.setenv("ASSAY_SQL_DATABASES", value)
    kernel = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False).start()
    try:
        info = plugin_info(kernel, "sql")
        assert info.status == "failed"
        message = info.error["message"]
        assert "CONFIG_INVALID" in message and "ASSAY_SQL_DATABASES" in message
        assert bad in message and problem in message
        assert "name=URL pairs separated by ';'" in message  # the expected form
        assert "sql_query" not in kernel.tools
    finally:
        kernel.close()
    with pytest.raises(ValueError, match="ASSAY_SQL_DATABASES"):
        from assay.plugins.sql.settings import parse_databases

        parse_databases(value)


def test_sql_databases_still_accepts_its_documented_forms():
    from assay.plugins.sql.settings import parse_databases

    assert parse_databases(
        "retail=sqlite:///retail.db; sales=postgresql://analyst@db/sales?sslmode=require"
    ) == {"retail": "sqlite:///retail.db", "sales": "postgresql://analyst@db/sales?sslmode=require"}
    assert parse_databases("postgresql://u@h1:5432,h2:5432/sales") == {
        "sales": "postgresql://u@h1:5432,h2:5432/sales"
    }
    assert parse_databases("duckdb:///:memory:") == {"duckdb": "duckdb:///:memory:"}


def test_docs_state_the_sqlite_deadline_check_interval_the_code_uses(monkeypatch):
    from assay.plugins.sql.engines.sqlite import SQLITE

    class Raw:
        steps = None

        def set_progress_handler(self, handler, n):
            Raw.steps = n

    class State:
        deadline = None

        def cancel_requested(self):
            return False

    SQLITE.begin(Raw(), State(), 1.0)
    documented = re.search(
        r"checks the deadline every ([\d,]+) VM steps", (ROOT / "docs" / "sql.md").read_text()
    )
    assert documented, "docs/sql.md no longer states the SQLite check interval"
    assert int(documented.group(1).replace(",", "")) == Raw.steps == 10_000
