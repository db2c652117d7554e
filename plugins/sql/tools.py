"""The tools: ``sql_query``, ``list_tables`` and ``describe_table``.

``sql_query`` captures the full result as an artifact first, then shows the
model a bounded Markdown preview. Failures are results with stable codes,
and a failed, timed-out or cancelled attempt is recorded as a failed artifact.

The model's SQL text goes down once, and a result comes back up once:

1. :class:`SqlQueryCall` resolves the datasource and makes the attempt: the
   time limit, numeric columns as decimal text, and (when the run keeps
   evidence) a consumer that captures the rows as they stream
   (:func:`.capture.stream_capture`).
2. :meth:`.DatabaseResource.query` -> :meth:`.Executor.run`: the read-only
   check, then a worker thread runs the statement through the engine while
   the caller's thread waits, cancelling it on the server at the deadline
   (:mod:`.execution`, :mod:`.engines`).
3. Back here: :func:`success_result`, or :func:`failure_result`, which
   records the failed attempt. The async path runs steps 2-3 in a thread
   (:func:`.execution.run_cancellable`), so cancelling the task cancels the
   statement and the cancelled attempt is still recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from assay import FunctionTool, RunContext, ToolResult

from . import sql_settings
from .capture import capture_failure, stream_capture
from .errors import (
    ARTIFACT_CAPTURE_FAILED,
    NOTHING_SENT,
    SQL_DATASOURCE_NOT_FOUND,
    SQL_DATASOURCE_REQUIRED,
    SQL_TABLE_NOT_FOUND,
    SqlError,
)
from .execution import run_cancellable
from .preview import markdown_table
from .resource import DatabaseResource
from .results import QueryResult
from .settings import SqlSettings


class Datasources:
    """The databases a kernel holds (from settings, the CLI, other plugins or the host)."""

    def __init__(self, kernel: Any, settings: SqlSettings) -> None:
        self.kernel = kernel
        self.settings = settings

    def all(self, run: RunContext | None = None) -> dict[str, DatabaseResource]:
        """The kernel's databases and the run's own (a service run's uploads: no other run sees them)."""
        kernel = self.kernel or (run.kernel if run is not None else None)
        found = {} if kernel is None else dict(kernel.resources.items())
        if run is not None:
            found.update(run.own_resources())
        return {n: r for n, r in found.items() if isinstance(r, DatabaseResource)}

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


class SqlQueryCall:
    """One ``sql_query`` call: the datasource and attempt (step 1), then :meth:`run` or :meth:`arun`."""

    def __init__(
        self,
        sources: Datasources,
        sql: str,
        datasource: str | None,
        timeout_s: float | None,
        run: RunContext | None,
    ) -> None:
        self.sql = sql
        self.settings = sources.settings
        self.sink = getattr(run, "artifacts", None)  # None: this run keeps no evidence
        self.resource: DatabaseResource | None = None
        try:
            self.resource = sources.resolve(datasource, run)
        except SqlError as exc:
            self.unresolved: ToolResult | None = failure_result(None, sql, exc, self.sink)
            return
        self.unresolved = None
        consume = (
            stream_capture(self.sink, resource=self.resource, sql=sql)
            if self.sink is not None
            else None
        )
        # The rows are only stored and previewed: numeric columns may stay decimal text.
        cap = (
            getattr(getattr(self.sink, "settings", None), "max_bytes", None)
            if self.sink is not None
            else None
        )
        self.attempt = self.resource.new_attempt(
            timeout_s,
            consume=consume,
            keep_rows=self.settings.preview_rows,
            decimal_text=True,
            max_value_bytes=cap,
        )

    def run(self) -> ToolResult:
        """Steps 2-3 on this thread: the success, or the failure (recorded as a failed artifact)."""
        if self.unresolved is not None:
            return self.unresolved
        assert self.resource is not None
        try:
            result = self.resource.query(self.sql, attempt=self.attempt)
        except SqlError as exc:  # refused, timed out, cancelled, failed, or its capture failed
            return failure_result(
                self.resource, self.sql, exc, self.sink, executed=self.attempt.sql
            )
        return success_result(self.resource, result, self.settings, executed=self.attempt.sql)

    async def arun(self) -> ToolResult:
        """:meth:`run` off the event loop; cancelling the task cancels the statement (and re-raises)."""
        if self.unresolved is not None:
            return self.unresolved
        return await run_cancellable(self.run, self.attempt, grace_s=self.settings.cancel_grace_s)


def success_result(
    resource: DatabaseResource,
    result: QueryResult,
    settings: SqlSettings,
    executed: str | None = None,
) -> ToolResult:
    """The model-facing result of a finished query (its artifact, if any, was captured as the rows streamed);
    ``executed``: the SQL that ran (written from the checked statement)."""
    record = result.consumed
    n = result.row_count
    # The capture stops at ASSAY_ARTIFACT_MAX_BYTES: the artifact then holds only the first rows.
    complete = getattr(record, "complete", True) is not False
    kept = getattr(record, "row_count", n) if record is not None else n
    artifact_id = getattr(record, "artifact_id", None)
    evidence = (
        f"artifact {artifact_id}" if artifact_id else "no artifact (this run keeps no evidence)"
    )
    if not complete:
        evidence += f" (INCOMPLETE: {kept:,} of {n:,} rows kept)"
    head = f"{n:,} row{'s' if n != 1 else ''} from {resource.name} in {result.elapsed_ms:.0f} ms; {evidence}."
    if n == 0:
        content = f"no rows matched the query ({resource.name}, {result.elapsed_ms:.0f} ms; {evidence}).\n"
        content += "columns: " + ", ".join(result.columns)
        shown = 0
    else:
        head_rows = result.head(settings.preview_rows)
        table, shown = markdown_table(
            result.columns,
            head_rows,
            max_rows=settings.preview_rows,
            max_chars=settings.preview_chars,
        )
        content = head + "\n\n" + table
        if shown < n:
            # say which limit cut the table: a row cut and a character cut read differently
            cut = (
                f"cut at {settings.preview_chars:,} characters"
                if shown < min(settings.preview_rows, len(head_rows))
                else f"cut at the {settings.preview_rows}-row preview limit"
            )
            where = (
                f"; the full result is in artifact {artifact_id}"
                if artifact_id and complete
                else ""
            )
            content += f"\n\nshowing {shown} of {n:,} rows ({cut}){where}"
    data = {
        "artifact_id": artifact_id,
        "row_count": n,
        "columns": result.columns,
        "column_types": result.column_types,
        "elapsed_ms": round(result.elapsed_ms, 3),
        "datasource": resource.name,
        "dialect": resource.dialect,
        "preview_rows": shown,
        "truncated": shown < n or not complete,
        "privileged_login": resource.privileged_login,
        "executed_sql": executed,
    }
    if not complete:
        data["artifact_row_count"] = kept
        data["artifact_complete"] = False
        content += (
            f"\n\nTRUNCATED EVIDENCE: the query returned {n:,} row{'s' if n != 1 else ''} but artifact "
            f"{artifact_id} keeps only the first {kept:,} (the capture stopped at "
            "ASSAY_ARTIFACT_MAX_BYTES); cite only those, or narrow the query."
        )
    content += privileged_note(resource)
    return ToolResult.ok(
        data, content=content, artifacts=[record.ref()] if record is not None else []
    )


def privileged_note(resource: DatabaseResource | None) -> str:
    """The line every result of a datasource allowed a privileged login carries ('' otherwise)."""
    if resource is None or not resource.privileged_login:
        return ""
    assert resource.login is not None
    return (
        f"\n\nWARNING privileged_login: datasource {resource.name!r} runs as {resource.login.login!r} "
        f"({resource.login.summary()}), allowed by allow_privileged; only the SQL parser keeps it read-only."
    )


def failure_result(
    resource: DatabaseResource | None,
    sql: str,
    error: SqlError,
    sink: Any,
    executed: str | None = None,
) -> ToolResult:
    """A failure envelope; attempts that reached the database are recorded as failed artifacts (with the SQL
    that was sent, ``executed``, beside the submitted ``sql``)."""
    artifacts = []
    if (
        resource is not None
        and error.code not in NOTHING_SENT
        and error.code != ARTIFACT_CAPTURE_FAILED
    ):
        record = capture_failure(
            sink,
            resource=resource,
            sql=sql,
            error=error,
            elapsed_ms=float(error.details.get("elapsed_ms", 0.0)),
            executed=executed,
        )
        if record is not None:
            artifacts.append(record.ref())
    metadata = dict(error.details)
    message = error.message
    if resource is not None:
        # A refused login is privileged too (its refusal says so beside the privileges); nothing ran as it.
        privileged = bool(error.details.get("privileged_login", resource.privileged_login))
        metadata.update(
            datasource=resource.name, dialect=resource.dialect, privileged_login=privileged
        )
        message += privileged_note(resource)
    return ToolResult.fail(error.code, message, error.hint, metadata=metadata, artifacts=artifacts)


class SqlTool(FunctionTool):
    """A sync tool with a real async path (so task cancellation reaches the database).

    Calls may run concurrently: each statement takes its own pooled connection.
    """

    concurrent = True

    def __init__(self, func: Callable[..., Any], afunc: Callable[..., Any]) -> None:
        super().__init__(func)
        self._afunc = afunc

    async def ainvoke(self, validated: dict[str, Any], run: RunContext | None) -> Any:
        args, kwargs = self._bind(validated, run)
        return await self._afunc(*args, **kwargs)


def build_tools(sources: Datasources) -> list[FunctionTool]:
    def sql_query(
        sql: Annotated[
            str,
            Field(description="Exactly one read-only SQL statement (SELECT / WITH ... SELECT)."),
        ],
        datasource: Annotated[
            str | None, Field(description="Datasource name; required when several exist.")
        ] = None,
        timeout_s: Annotated[
            float | None, Field(gt=0, description="Lower the time limit for this call (seconds).")
        ] = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        """Run one read-only SQL query on a datasource.

        The full result is saved as an artifact (cite its artifact_id); you see a
        Markdown preview of at most 50 rows. Writes, DDL, several statements and
        file access are refused. Queries over the time limit are cancelled.
        """
        return SqlQueryCall(sources, sql, datasource, timeout_s, run).run()

    async def asql_query(
        sql: str,
        datasource: str | None = None,
        timeout_s: float | None = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        return await SqlQueryCall(sources, sql, datasource, timeout_s, run).arun()

    def list_tables(
        datasource: Annotated[
            str | None, Field(description="Datasource name; required when several exist.")
        ] = None,
        pattern: Annotated[
            str | None, Field(description="Only tables whose name contains this text.")
        ] = None,
        search: Annotated[
            str | None,
            Field(
                description="Words to look for in table and column names, comments "
                "and definitions; the best matches come first (at most 20)."
            ),
        ] = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        """List the tables and views of a datasource with row estimates and column counts."""
        try:
            resource = sources.resolve(datasource, run)
            tables = resource.tables()
            found = resource.search_tables(search) if search else tables
        except SqlError as exc:
            return ToolResult.from_error(exc)
        chosen = [t for t in found if not pattern or pattern.lower() in t.name.lower()]
        lines = [
            t.summary_line() + (f"  -- {t.comment}" if search and t.comment else "")
            for t in chosen[:1000]
        ]
        more = (
            f"\n... and {len(chosen) - 1000} more; narrow with pattern="
            if len(chosen) > 1000
            else ""
        )
        head = f"{len(chosen)} of {len(tables)} tables in {resource.name} ({resource.dialect})"
        if search:
            head += f" matching {search!r}, best first" + (
                "" if chosen else " (none: try other words)"
            )
        data = [
            {
                "name": t.name,
                "kind": t.kind,
                "row_estimate": t.row_estimate,
                "columns": len(t.columns),
            }
            for t in chosen
        ]
        return ToolResult.ok(
            data,
            content=head + ":\n" + "\n".join(lines) + more + privileged_note(resource),
            metadata={"privileged_login": resource.privileged_login},
        )

    def describe_table(
        table: Annotated[
            str | None, Field(description="Table or view name, as list_tables shows it.")
        ] = None,
        datasource: Annotated[
            str | None, Field(description="Datasource name; required when several exist.")
        ] = None,
        search: Annotated[
            str | None,
            Field(
                description="Instead of a name: describe the (at most 3) tables "
                "these words match best."
            ),
        ] = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        """Describe one table: columns, types, comments, primary and foreign keys, row estimate."""
        try:
            resource = sources.resolve(datasource, run)
            if table:
                infos = [resource.table(table)]
            elif search:
                infos = resource.search_tables(search, limit=3)
            else:
                raise SqlError(
                    SQL_TABLE_NOT_FOUND,
                    "describe_table needs table= or search=",
                    "Pass a table name from list_tables, or search= words.",
                )
        except SqlError as exc:
            return ToolResult.from_error(exc)
        if not infos:
            return ToolResult.from_error(
                SqlError(
                    SQL_TABLE_NOT_FOUND,
                    f"no table of {resource.name!r} matches {search!r}",
                    "Try other words, or call list_tables.",
                )
            )
        data = infos[0].model_dump() if table else [i.model_dump() for i in infos]
        return ToolResult.ok(
            data,
            content="\n\n".join(i.render() for i in infos) + privileged_note(resource),
            metadata={"privileged_login": resource.privileged_login},
        )

    async def alist_tables(
        datasource: str | None = None,
        pattern: str | None = None,
        search: str | None = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        return await asyncio.to_thread(list_tables, datasource, pattern, search, run)

    async def adescribe_table(
        table: str | None = None,
        datasource: str | None = None,
        search: str | None = None,
        run: RunContext | None = None,
    ) -> ToolResult:
        return await asyncio.to_thread(describe_table, table, datasource, search, run)

    return [
        SqlTool(sql_query, asql_query),
        SqlTool(list_tables, alist_tables),
        SqlTool(describe_table, adescribe_table),
    ]


# --- lazy registration ---------------------------------------------------------
# The plugin registers ``Lazy("assay.plugins.sql.tools:sql_query_tool", factory=True)``
# and friends: each is called with the kernel on first use and returns that
# kernel's tool. (No per-kernel cache here: the tools hold the kernel, so a
# module-level cache would keep every kernel alive; building is cheap.)


def kernel_tool(kernel: Any, name: str) -> FunctionTool:
    """The SQL tool ``name`` bound to ``kernel`` and its SQL settings."""
    return {t.name: t for t in build_tools(Datasources(kernel, sql_settings(kernel.settings)))}[
        name
    ]


def sql_query_tool(kernel: Any) -> FunctionTool:
    return kernel_tool(kernel, "sql_query")


def list_tables_tool(kernel: Any) -> FunctionTool:
    return kernel_tool(kernel, "list_tables")


def describe_table_tool(kernel: Any) -> FunctionTool:
    return kernel_tool(kernel, "describe_table")
