"""``assay sql --db URL "SELECT ..."`` and ``assay db schema --db URL``."""

from __future__ import annotations

import json
import sys
from typing import Any

import click


def _kernel(ctx: click.Context) -> Any:
    obj = ctx.find_object(dict) or {}
    kernel = obj.get("kernel")
    if kernel is None:
        from assay import Kernel

        kernel = Kernel()
        ctx.ensure_object(dict)["kernel"] = kernel
    return kernel


def _choose(kernel: Any, db_url: str | None, datasource: str | None) -> str | None:
    """Attach ``--db URL`` as a datasource and return the name to use."""
    if not db_url:
        return datasource
    from . import open_datasource
    from .settings import name_for_url

    name = datasource or name_for_url(db_url)
    existing = kernel.resources.get(name)
    if existing is not None and getattr(existing, "url", None) is not None:
        name = f"{name}_cli"
    kernel.attach(open_datasource(name, db_url, kernel=kernel))
    return name


def add_commands(cli: click.Group) -> None:
    @cli.command("sql")
    @click.argument("sql")
    @click.option("--db", "db_url", help="Database URL (password is never printed).")
    @click.option("--datasource", "-d", help="A configured datasource name (or the name for --db).")
    @click.option("--timeout", "timeout_s", type=float, help="Time limit in seconds (never above the maximum).")
    @click.option("--json", "as_json", is_flag=True, help="Print the result envelope as JSON.")
    @click.pass_context
    def sql_cmd(ctx: click.Context, sql: str, db_url: str | None, datasource: str | None,
                timeout_s: float | None, as_json: bool) -> None:
        """Run one read-only SQL query and print the preview and the artifact id."""
        kernel = _kernel(ctx)
        name = _choose(kernel, db_url, datasource)
        run = kernel.new_run()
        try:
            args: dict[str, Any] = {"sql": sql}
            if name:
                args["datasource"] = name
            if timeout_s:
                args["timeout_s"] = timeout_s
            result = kernel.call_tool("sql_query", args, run=run)
        finally:
            run.close()
        if as_json:
            click.echo(result.model_dump_json(indent=2))
        else:
            click.echo(result.for_model() if not result.success else result.content)
            if result.success:
                click.echo(f"artifact_id: {result.data.get('artifact_id') or '(none: no evidence store)'}")
        if not result.success:
            sys.exit(1)

    @cli.group("db")
    def db_group() -> None:
        """Inspect databases."""

    @db_group.command("schema")
    @click.option("--db", "db_url", help="Database URL (password is never printed).")
    @click.option("--datasource", "-d", help="A configured datasource name.")
    @click.option("--json", "as_json", is_flag=True, help="Print tables, columns and keys as JSON.")
    @click.option("--max-chars", type=int, default=None, help="Cut the text at this many characters.")
    @click.pass_context
    def schema_cmd(ctx: click.Context, db_url: str | None, datasource: str | None, as_json: bool,
                   max_chars: int | None) -> None:
        """Print the schema of a datasource: tables, columns, keys, row estimates."""
        from assay import PromptBudget

        from .tools import Datasources

        kernel = _kernel(ctx)
        name = _choose(kernel, db_url, datasource)
        from . import sql_settings

        resource = Datasources(kernel, sql_settings(kernel.settings)).resolve(name)
        tables = resource.tables()
        if as_json:
            click.echo(json.dumps({"datasource": resource.name, "url": resource.url, "dialect": resource.dialect,
                                   "tables": [t.model_dump() for t in tables]}, indent=2))
            return
        if max_chars:
            click.echo(resource.get_prompt(PromptBudget(max_chars=max_chars)))
            return
        click.echo(f"{resource.dialect} database {resource.name!r} ({resource.url}): {len(tables)} tables\n")
        click.echo("\n\n".join(t.render() for t in tables))
