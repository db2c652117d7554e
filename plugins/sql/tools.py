"""The tools: ``sql_query``, ``list_tables`` and ``describe_table``.

``sql_query`` captures the full result as an artifact first, then shows the
model a bounded Markdown preview. Failures are results with stable codes,
and a failed, timed-out or cancelled attempt is recorded as a failed artifact.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Callable

from pydantic import Field

from assay import FunctionTool, RunContext, ToolResult
from assay.kernel.log import get_logger

from .capture import capture, capture_failure
from .errors import SQL_DATASOURCE_NOT_FOUND, SQL_DATASOURCE_REQUIRED, SqlError
from .execution import Attempt, QueryResult, RowStream
from .preview import markdown_table
from .resource import DatabaseResource, run_cancellable
from .settings import SqlSettings

log = get_logger("assay.sql")


class Datasources:
    """The databases a kernel holds (from settings, the CLI, other plugins or the host)."""

    def __init__(self, kernel: Any, settings: SqlSettings) -> None:
        self.kernel = kernel
        self.settings = settings

    def all(self, run: RunContext | None = None) -> dict[str, DatabaseResource]:
        kernel = self.kernel or (run.kernel if run is not None else None)
        if kernel is None:
            return {}
        return {n: r for n, r in kernel.resources.items() if isinstance(r, DatabaseResource)}

    def resolve(self, name: str | None, run: RunContext | None = None) -> DatabaseResource:
        found = self.all(run)
        if name:
            if name in found:
                return found[name]
            raise SqlError(
                SQL_DATASOURCE_NOT_FOUND,
                f"no datasource named {name!r}",
                f"Available datasources: {', '.join(sorted(found)) or 'none'}.",
            )
        if len(found) == 1:
            return next(iter(found.values()))
        if not found:
            raise SqlError(
                SQL_DATASOURCE_NOT_FOUND,
                "no datasource is configured",
                "Set ASSAY_SQL_DATABASES, add [sql.databases] to the config file, or pass --db URL.",
            )
        raise SqlError(
            SQL_DATASOURCE_REQUIRED,
            f"{len(found)} datasources exist and none was chosen",
            f"Pass datasource= one of: {', '.join(sorted(found))}.",
        )


# --- sql_query ---------------------------------------------------------------


def success_result(resource: DatabaseResource, result: QueryResult, record: Any, settings: SqlSettings) -> ToolResult:
    """The model-facing result of a finished query (the artifact is already captured)."""
    n = result.row_count
    artifact_id = getattr(record, "artifact_id", None)
    evidence = f"artifact {artifact_id}" if artifact_id else "no artifact (this run keeps no evidence)"
    head = f"{n:,} row{'s' if n != 1 else ''} from {resource.name} in {result.elapsed_ms:.0f} ms; {evidence}."
    if n == 0:
        content = f"no rows matched the query ({resource.name}, {result.elapsed_ms:.0f} ms; {evidence}).\n"
        content += "columns: " + ", ".join(result.columns)
        shown = 0
    else:
        table, shown = markdown_table(result.columns, result.head(settings.preview_rows),
                                      max_rows=settings.preview_rows, max_chars=settings.preview_chars)
        content = head + "\n\n" + table
        if shown < n:
            where = f"; the full result is in artifact {artifact_id}" if artifact_id else ""
            content += f"\n\nshowing {shown} of {n:,} rows{where}"
    data = {
        "artifact_id": artifact_id,
        "row_count": n,
        "columns": result.columns,
        "column_types": result.column_types,
        "elapsed_ms": round(result.elapsed_ms, 3),
        "datasource": resource.name,
        "dialect": resource.dialect,
        "preview_rows": shown,
        "truncated": shown < n,
    }
    return ToolResult.ok(data, content=content, artifacts=[record.ref()] if record is not None else [])


def failure_result(resource: DatabaseResource | None, sql: str, error: SqlError, sink: Any) -> ToolResult:
    """A failure envelope; attempts that reached the database are recorded as failed artifacts."""
    artifacts = []
    if resource is not None and error.code not in ("SQL_READ_ONLY_REQUIRED", "ARTIFACT_CAPTURE_FAILED"):
        record = capture_failure(sink, resource=resource, sql=sql, error=error,
                                 elapsed_ms=float(error.details.get("elapsed_ms", 0.0)))
        if record is not None:
            artifacts.append(record.ref())
    metadata = dict(error.details)
    if resource is not None:
        metadata.update(datasource=resource.name, dialect=resource.dialect)
    return ToolResult.fail(error.code, error.message, error.hint, metadata=metadata, artifacts=artifacts)


def finish_query(resource: DatabaseResource, sql: str, result: QueryResult, sink: Any, settings: SqlSettings) -> ToolResult:
    if result.total_rows is not None:  # captured on the worker while the rows streamed
        record = result.consumed
    else:
        record = capture(sink, resource=resource, sql=sql, columns=result.columns, rows=result.rows,
                         elapsed_ms=result.elapsed_ms, column_types=result.column_types,
                         decimal_text=result.decimal_text)
    return success_result(resource, result, record, settings)


def prepare_attempt(resource: DatabaseResource, sql: str, sink: Any, timeout_s: float | None,
                    settings: SqlSettings) -> Attempt:
    """An attempt whose rows are captured as they arrive (when the run keeps evidence)."""
    attempt = resource.new_attempt(timeout_s)
    attempt.decimal_text = True  # rows are only stored and previewed here
    attempt.keep_rows = settings.preview_rows
    if sink is not None:
        def consume(stream: RowStream) -> Any:
            return capture(sink, resource=resource, sql=sql, columns=stream.columns, rows=stream.rows,
                           elapsed_ms=stream.elapsed_ms, column_types=stream.column_types,
                           decimal_text=stream.decimal_text, value_kinds=stream.value_kinds)

        attempt.consume = consume
    return attempt


def _prepare(sources: Datasources, sql: str, datasource: str | None, timeout_s: float | None,
             run: RunContext | None) -> tuple[DatabaseResource, Attempt, Any] | ToolResult:
    """The checked statement's datasource, attempt and sink; or the failure result (nothing ran)."""
    sink = getattr(run, "artifacts", None)
    resource = None
    try:
        resource = sources.resolve(datasource, run)
        resource.check(sql)
        return resource, prepare_attempt(resource, sql, sink, timeout_s, sources.settings), sink
    except SqlError as exc:
        return failure_result(resource, sql, exc, sink)


def _execute(sources: Datasources, sql: str, resource: DatabaseResource, attempt: Attempt, sink: Any) -> ToolResult:
    """Run a checked statement; its failure (timeouts and cancellations too) is recorded and returned."""
    try:
        result = resource.query(sql, attempt=attempt, check=False)
        return finish_query(resource, sql, result, sink, sources.settings)
    except SqlError as exc:
        return failure_result(resource, sql, exc, sink)


def run_sql(sources: Datasources, sql: str, datasource: str | None, timeout_s: float | None,
            run: RunContext | None) -> ToolResult:
    prepared = _prepare(sources, sql, datasource, timeout_s, run)
    if isinstance(prepared, ToolResult):
        return prepared
    return _execute(sources, sql, *prepared)


async def arun_sql(sources: Datasources, sql: str, datasource: str | None, timeout_s: float | None,
                   run: RunContext | None) -> ToolResult:
    prepared = _prepare(sources, sql, datasource, timeout_s, run)
    if isinstance(prepared, ToolResult):
        return prepared
    attempt = prepared[1]
    return await run_cancellable(lambda: _execute(sources, sql, *prepared), attempt,
                                 grace_s=sources.settings.cancel_grace_s)


class SqlTool(FunctionTool):
    """A sync tool with a real async path (so task cancellation reaches the database)."""

    def __init__(self, func: Callable[..., Any], afunc: Callable[..., Any]) -> None:
        super().__init__(func)
        self._afunc = afunc

    async def ainvoke(self, validated: dict[str, Any], run: RunContext | None) -> Any:
        args, kwargs = self._bind(validated, run)
        return await self._afunc(*args, **kwargs)


def build_tools(sources: Datasources) -> list[FunctionTool]:
    def sql_query(
        sql: Annotated[str, Field(description="Exactly one read-only SQL statement (SELECT / WITH ... SELECT).")],
        datasource: Annotated[str | None, Field(description="Datasource name; required when several exist.")] = None,
        timeout_s: Annotated[float | None, Field(gt=0, description="Lower the time limit for this call (seconds).")] = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        """Run one read-only SQL query on a datasource.

        The full result is saved as an artifact (cite its artifact_id); you see a
        Markdown preview of at most 50 rows. Writes, DDL, several statements and
        file access are refused. Queries over the time limit are cancelled.
        """
        return run_sql(sources, sql, datasource, timeout_s, run)

    async def asql_query(sql: str, datasource: str | None = None, timeout_s: float | None = None,
                         run: RunContext | None = None) -> ToolResult:
        return await arun_sql(sources, sql, datasource, timeout_s, run)

    def list_tables(
        datasource: Annotated[str | None, Field(description="Datasource name; required when several exist.")] = None,
        pattern: Annotated[str | None, Field(description="Only tables whose name contains this text.")] = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        """List the tables and views of a datasource with row estimates and column counts."""
        try:
            resource = sources.resolve(datasource, run)
            tables = resource.tables()
        except SqlError as exc:
            return ToolResult.from_error(exc)
        chosen = [t for t in tables if not pattern or pattern.lower() in t.name.lower()]
        lines = [t.summary_line() for t in chosen[:1000]]
        more = f"\n... and {len(chosen) - 1000} more; narrow with pattern=" if len(chosen) > 1000 else ""
        head = f"{len(chosen)} of {len(tables)} tables in {resource.name} ({resource.dialect})"
        data = [{"name": t.name, "kind": t.kind, "row_estimate": t.row_estimate, "columns": len(t.columns)} for t in chosen]
        return ToolResult.ok(data, content=head + ":\n" + "\n".join(lines) + more)

    def describe_table(
        table: Annotated[str, Field(description="Table or view name, as list_tables shows it.")],
        datasource: Annotated[str | None, Field(description="Datasource name; required when several exist.")] = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        """Describe one table: columns, types, primary and foreign keys, row estimate."""
        try:
            resource = sources.resolve(datasource, run)
            info = resource.table(table)
        except SqlError as exc:
            return ToolResult.from_error(exc)
        return ToolResult.ok(info.model_dump(), content=info.render())

    async def alist_tables(datasource: str | None = None, pattern: str | None = None,
                           run: RunContext | None = None) -> ToolResult:
        return await asyncio.to_thread(list_tables, datasource, pattern, run)

    async def adescribe_table(table: str, datasource: str | None = None, run: RunContext | None = None) -> ToolResult:
        return await asyncio.to_thread(describe_table, table, datasource, run)

    return [SqlTool(sql_query, asql_query), SqlTool(list_tables, alist_tables), SqlTool(describe_table, adescribe_table)]


# --- lazy registration ---------------------------------------------------------
# The plugin registers ``Lazy("assay.plugins.sql.tools:sql_query_tool", factory=True)``
# and friends: each is called with the kernel on first use and returns that
# kernel's tool. (No per-kernel cache here: the tools hold the kernel, so a
# module-level cache would keep every kernel alive; building is cheap.)


def kernel_tool(kernel: Any, name: str) -> FunctionTool:
    """The SQL tool ``name`` bound to ``kernel`` and its SQL settings."""
    from . import sql_settings

    return {t.name: t for t in build_tools(Datasources(kernel, sql_settings(kernel.settings)))}[name]


def sql_query_tool(kernel: Any) -> FunctionTool:
    return kernel_tool(kernel, "sql_query")


def list_tables_tool(kernel: Any) -> FunctionTool:
    return kernel_tool(kernel, "list_tables")


def describe_table_tool(kernel: Any) -> FunctionTool:
    return kernel_tool(kernel, "describe_table")
