"""The tools through the kernel: results, previews, evidence, datasources, concurrency, cancellation."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from assay import Kernel, RunContext
from assay.plugins.sql.errors import SQL_DATASOURCE_NOT_FOUND, SQL_DATASOURCE_REQUIRED
from tests.sql.conftest import RUNAWAY, new_db


def attach(kernel, engine, request, name="retail", **settings):
    return kernel.attach(new_db(engine, request, name=name, **settings))


def test_sql_query_captures_the_full_result_first_then_previews_50_rows(
    engine, request, kernel, recording_capture
):
    attach(kernel, engine, request)
    sink = recording_capture()
    run = RunContext(kernel=kernel, artifacts=sink)
    result = kernel.call_tool(
        "sql_query", {"sql": "SELECT order_id, status FROM orders ORDER BY order_id"}, run=run
    )
    assert result.success, result.message
    assert len(sink.captures) == 1
    captured = sink.captures[0]
    assert len(captured["rows"]) == result.data["row_count"] == 2000  # the artifact holds every row
    assert captured["status"] == "succeeded" and captured["database"] == "retail"
    assert result.data["artifact_id"] == "art_1"
    assert [a.artifact_id for a in result.artifacts] == ["art_1"]
    assert result.data["columns"] == ["order_id", "status"]
    table_lines = [line for line in result.content.splitlines() if line.startswith("| ")]
    assert len(table_lines) == 1 + 50  # the header and 50 rows
    assert "showing 50 of 2,000 rows" in result.content


def test_preview_is_cut_at_20000_characters_independently_of_rows(
    request, kernel, recording_capture
):
    attach(kernel, "sqlite", request)
    wide = ", ".join(
        f"printf('%.900c', '{c}') AS {c}" for c in "abc"
    )  # cells are cut at 300 chars each
    sql = f"SELECT order_id, {wide} FROM orders ORDER BY order_id LIMIT 40"
    result = kernel.call_tool(
        "sql_query", {"sql": sql}, run=RunContext(kernel=kernel, artifacts=recording_capture())
    )
    assert result.success
    table = result.content.split("\n\n")[1]
    assert len(table) <= 20_000
    shown = result.data["preview_rows"]
    assert 0 < shown < 40 and f"showing {shown} of 40 rows" in result.content


def test_zero_rows_says_no_rows_matched_the_query(engine, request, kernel):
    attach(kernel, engine, request)
    result = kernel.call_tool("sql_query", {"sql": "SELECT * FROM orders WHERE total < 0"})
    assert result.success and result.data["row_count"] == 0
    assert "no rows matched the query" in result.content
    assert "zero" not in result.content.lower()


def test_engine_error_is_sql_query_failed_and_records_a_failed_artifact(
    engine, request, kernel, recording_capture
):
    attach(kernel, engine, request)
    sink = recording_capture()
    result = kernel.call_tool(
        "sql_query",
        {"sql": "SELECT missing_col FROM orders"},
        run=RunContext(kernel=kernel, artifacts=sink),
    )
    assert not result.success and result.error_code == "SQL_QUERY_FAILED"
    assert "missing_col" in result.message
    assert [c["status"] for c in sink.captures] == ["failed"]
    assert "missing_col" in sink.captures[0]["error"]
    assert result.artifacts and result.artifacts[0].status == "failed"


def test_capture_failure_is_artifact_capture_failed_saying_the_query_ran(
    request, kernel, recording_capture
):
    attach(kernel, "sqlite", request)
    result = kernel.call_tool(
        "sql_query",
        {"sql": "SELECT count(*) FROM orders"},
        run=RunContext(kernel=kernel, artifacts=recording_capture(fail=True)),
    )
    assert not result.success and result.error_code == "ARTIFACT_CAPTURE_FAILED"
    assert "disk full" in result.message
    assert "do not re-run" in result.hint and "already ran" in result.hint


def test_sql_query_with_the_real_evidence_store_returns_a_readable_artifact(request, kernel):
    from assay.kernel.evidence import read_artifact_result

    attach(kernel, "sqlite", request)
    run = kernel.new_run()
    assert run.artifacts is not None
    result = kernel.call_tool(
        "sql_query", {"sql": "SELECT store_id, city FROM stores ORDER BY store_id"}, run=run
    )
    assert result.success, result.message
    selected = read_artifact_result(run.artifacts, result.data["artifact_id"])
    assert selected.verified and selected.columns == ["store_id", "city"]
    assert selected.total_rows == result.data["row_count"] == 8
    assert selected.rows[0] == [1, "Seattle"]
    run.close()


def test_timeout_through_the_tool_records_a_failed_attempt(
    engine, request, kernel, recording_capture
):
    attach(kernel, engine, request)
    sink = recording_capture()
    result = kernel.call_tool(
        "sql_query",
        {"sql": RUNAWAY[engine], "timeout_s": 0.5},
        run=RunContext(kernel=kernel, artifacts=sink),
    )
    assert result.error_code == "SQL_QUERY_TIMEOUT"
    assert result.metadata["stopped"] is True
    assert [c["status"] for c in sink.captures] == ["failed"]


def test_sql_datasource_required_when_several_exist_and_none_chosen(request, kernel):
    attach(kernel, "sqlite", request, name="one")
    attach(kernel, "duckdb", request, name="two")
    result = kernel.call_tool("sql_query", {"sql": "SELECT 1"})
    assert result.error_code == SQL_DATASOURCE_REQUIRED
    assert "one" in result.hint and "two" in result.hint
    assert kernel.call_tool("sql_query", {"sql": "SELECT 1", "datasource": "two"}).success
    assert (
        kernel.call_tool("sql_query", {"sql": "SELECT 1", "datasource": "three"}).error_code
        == SQL_DATASOURCE_NOT_FOUND
    )


def test_list_tables_and_describe_table_reach_the_whole_schema(engine, request, kernel):
    attach(kernel, engine, request)
    listed = kernel.call_tool("list_tables", {})
    assert listed.success
    names = {t["name"] for t in listed.data}
    assert {
        "stores",
        "products",
        "customers",
        "promotions",
        "orders",
        "order_items",
        "refunds",
    } <= names
    described = kernel.call_tool("describe_table", {"table": "orders"})
    assert described.success
    assert described.data["columns"][0]["primary_key"] is True
    assert {fk["ref_table"].split(".")[-1] for fk in described.data["foreign_keys"]} == {
        "customers",
        "stores",
        "promotions",
    }
    missing = kernel.call_tool("describe_table", {"table": "ordrs"})
    assert missing.error_code == "SQL_TABLE_NOT_FOUND"


def test_schema_prompt_shows_tables_keys_and_row_estimates(engine, request, kernel):
    db = attach(kernel, engine, request)
    prompt = db.get_prompt()
    assert "orders (" in prompt and "order_id" in prompt and "PK" in prompt
    assert "FK (customer_id) -> " in prompt
    if engine in ("sqlite", "duckdb", "postgresql"):
        assert "~2,000 rows" in prompt


def test_large_schema_is_cut_with_a_note_naming_list_tables(request, kernel):
    from assay import PromptBudget

    db = attach(kernel, "sqlite", request)
    prompt = db.get_prompt(PromptBudget(max_chars=700))
    assert len(prompt) <= 700
    assert "schema cut" in prompt and "list_tables" in prompt and "describe_table" in prompt


def test_password_never_appears_in_prompts_errors_or_logs(kernel, capsys):
    from assay.plugins.sql import open_datasource

    db = kernel.attach(
        open_datasource("secret", "postgresql://analyst:hunter2@127.0.0.1:1/nope", kernel=kernel)
    )
    assert "hunter2" not in db.url and "***" in db.url
    result = kernel.call_tool("sql_query", {"sql": "SELECT 1"})
    assert result.error_code == "SQL_DATASOURCE_UNAVAILABLE"
    prompt = kernel.system_prompt()
    out = capsys.readouterr()
    for text in (
        result.message,
        result.hint,
        prompt,
        repr(db),
        out.out,
        out.err,
        str(kernel.settings.masked()),
    ):
        assert "hunter2" not in text


def _count_statements(monkeypatch, hold=None):
    """Wrap every statement the executor runs: the most that were in flight at once, and an optional hold."""
    from assay.plugins.sql.execution import Executor

    real, lock, seen = Executor._statement, threading.Lock(), {"now": 0, "most": 0}

    def counted(self, *args, **kwargs):
        with lock:
            seen["now"] += 1
            seen["most"] = max(seen["most"], seen["now"])
        try:
            if hold is not None:
                hold()
            return real(self, *args, **kwargs)
        finally:
            with lock:
                seen["now"] -= 1

    monkeypatch.setattr(Executor, "_statement", counted)
    return seen


async def test_concurrent_queries_do_not_block_the_event_loop(request, kernel, monkeypatch):
    attach(kernel, "postgresql", request, pool_size=3)
    loop_turned = threading.Event()
    # each statement waits, holding its pooled connection, until the three are in flight at once and the
    # event loop has run a task meanwhile: a blocked loop or a smaller pool never releases them
    seen = _count_statements(monkeypatch, hold=lambda: loop_turned.wait(60))

    async def watch():
        for _ in range(6000):
            if seen["now"] == 3:
                loop_turned.set()
                return True
            await asyncio.sleep(0.01)
        return False

    watcher = asyncio.create_task(watch())
    results = await asyncio.gather(
        *[kernel.acall_tool("sql_query", {"sql": "SELECT count(*) FROM orders"}) for _ in range(3)]
    )
    loop_turned.set()
    assert all(r.success for r in results), [r.message for r in results]
    assert await watcher  # three ran at once on three pooled connections, and the loop kept turning
    assert seen["most"] == 3


async def test_pool_limit_queues_calls_beyond_the_pool_size(request, kernel, monkeypatch):
    attach(kernel, "postgresql", request, pool_size=1)
    seen = _count_statements(monkeypatch)
    results = await asyncio.gather(
        *[kernel.acall_tool("sql_query", {"sql": "SELECT pg_sleep(0.3)"}) for _ in range(3)]
    )
    assert all(r.success for r in results)
    assert seen["most"] == 1  # one connection: they ran one after another


async def test_pool_exhausted_beyond_the_wait_is_sql_datasource_busy(request, kernel):
    attach(kernel, "postgresql", request, pool_size=1, pool_timeout_s=0.2)
    holder = asyncio.create_task(kernel.acall_tool("sql_query", {"sql": "SELECT pg_sleep(1.5)"}))
    await asyncio.sleep(0.5)  # the holder has the only connection now
    refused = await kernel.acall_tool("sql_query", {"sql": "SELECT 1"})
    assert refused.error_code == "SQL_DATASOURCE_BUSY"
    assert "pool_size" in refused.hint
    assert (await holder).success


async def test_cancelling_the_task_cancels_the_query_and_records_a_cancelled_attempt(
    engine, request, kernel, recording_capture
):
    db = attach(kernel, engine, request)
    sink = recording_capture()
    run = RunContext(kernel=kernel, artifacts=sink)
    task = asyncio.create_task(
        kernel.acall_tool("sql_query", {"sql": RUNAWAY[engine], "timeout_s": 30}, run=run)
    )
    await asyncio.sleep(0.7)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 3.0
    assert [c["status"] for c in sink.captures] == ["failed"]
    assert (
        "SQL_QUERY_CANCELLED" in sink.captures[0]["error"]
        and "confirmed stopped" in sink.captures[0]["error"]
    )
    assert db.query("SELECT count(*) FROM stores").rows[0][0] > 0


async def test_cancelling_the_task_after_every_row_arrived_keeps_the_result_and_no_cancelled_record(
    request, kernel, monkeypatch
):
    from assay.kernel.evidence.staging import StagedFile

    attach(kernel, "sqlite", request)
    real_publish, publishing = StagedFile.publish, threading.Event()

    def slow_publish(self):
        publishing.set()  # every row is in; the capture is being published
        time.sleep(0.5)
        return real_publish(self)

    monkeypatch.setattr(StagedFile, "publish", slow_publish)
    run = kernel.new_run()
    task = asyncio.create_task(
        kernel.acall_tool("sql_query", {"sql": "SELECT * FROM stores"}, run=run)
    )
    assert await asyncio.to_thread(publishing.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    records = run.artifacts.records()
    assert [(r.status, r.complete) for r in records] == [
        ("succeeded", True)
    ]  # the query had finished
    assert records[0].row_count > 0 and records[0].provenance["error"] is None


def test_result_over_max_result_rows_is_sql_result_too_large(request, kernel):
    attach(kernel, "sqlite", request, max_result_rows=100)
    result = kernel.call_tool("sql_query", {"sql": "SELECT * FROM orders"})
    assert result.error_code == "SQL_RESULT_TOO_LARGE"
    assert "LIMIT" in result.hint
    assert kernel.call_tool("sql_query", {"sql": "SELECT * FROM orders LIMIT 100"}).success


def test_a_datasource_from_another_plugin_is_reachable_by_the_tools(sqlite_path):
    from assay import hookimpl
    from assay.plugins.sql.resource import DatabaseResource

    class WarehousePlugin:
        @hookimpl
        def register_resources(self, register):
            register(DatabaseResource("warehouse", f"sqlite:///{sqlite_path}"))

    k = Kernel(plugins=["assay.plugins.sql", WarehousePlugin()], load_entrypoints=False).start()
    try:
        result = k.call_tool("sql_query", {"sql": "SELECT count(*) AS n FROM stores"})
        assert result.success and result.data["datasource"] == "warehouse"
        assert "[database:warehouse]" in k.system_prompt()
    finally:
        k.close()
