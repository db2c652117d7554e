"""``assay sql --db URL "SELECT ..."``, ``assay db schema --db URL`` and ``assay prompt`` (:mod:`.cli_prompt`)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from assay.kernel.cli import cli_kernel


def _choose(
    kernel: Any, db_url: str | None, datasource: str | None, allow_privileged: bool = False
) -> str | None:
    """Attach ``--db URL`` as a datasource and return the name to use."""
    if not db_url:
        if allow_privileged:
            raise click.UsageError(
                "--allow-privileged applies to --db URL; a configured datasource says "
                "allow_privileged = true in its own table"
            )
        return datasource
    from . import open_datasource
    from .settings import DatasourceConfig, name_for_url

    name = datasource or name_for_url(db_url)
    existing = kernel.resources.get(name)
    if existing is not None and getattr(existing, "url", None) is not None:
        name = f"{name}_cli"
    config = DatasourceConfig(url=db_url, allow_privileged=allow_privileged)
    kernel.attach(open_datasource(name, db_url, kernel=kernel, config=config))
    return name


ALLOW_PRIVILEGED_HELP = (
    "Accept a --db login that can reach server files, other sessions or server settings "
    "(refused by default; every result then says privileged_login)."
)


def add_commands(cli: click.Group) -> None:
    from .cli_prompt import add_prompt_command

    add_prompt_command(cli)

    @cli.command("sql")
    @click.argument("sql")
    @click.option("--db", "db_url", help="Database URL (password is never printed).")
    @click.option("--datasource", "-d", help="A configured datasource name (or the name for --db).")
    @click.option(
        "--timeout",
        "timeout_s",
        type=float,
        help="Time limit in seconds (never above the maximum).",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the result envelope as JSON.")
    @click.option("--allow-privileged", is_flag=True, help=ALLOW_PRIVILEGED_HELP)
    @click.option(
        "--file",
        "files",
        multiple=True,
        help="A data file as a table (NAME=PATH names it; repeatable; docs/files.md).",
    )
    @click.pass_context
    def sql_cmd(
        ctx: click.Context,
        sql: str,
        db_url: str | None,
        datasource: str | None,
        timeout_s: float | None,
        as_json: bool,
        allow_privileged: bool,
        files: tuple[str, ...],
    ) -> None:
        """Run one read-only SQL query and print the preview and the artifact id."""
        kernel = cli_kernel(ctx)
        name = _choose(kernel, db_url, datasource, allow_privileged)
        if files:
            if db_url:
                raise click.UsageError("--file and --db each name the datasource: give one of them")
            from assay.plugins.files import attach_files

            name = attach_files(kernel, list(files)).name
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
                click.echo(
                    f"artifact_id: {result.data.get('artifact_id') or '(none: no evidence store)'}"
                )
        if not result.success:
            sys.exit(1)

    @cli.group("db")
    def db_group() -> None:
        """Inspect databases."""

    @db_group.command("schema")
    @click.option("--db", "db_url", help="Database URL (password is never printed).")
    @click.option("--datasource", "-d", help="A configured datasource name.")
    @click.option("--json", "as_json", is_flag=True, help="Print tables, columns and keys as JSON.")
    @click.option(
        "--max-chars", type=int, default=None, help="Cut the text at this many characters."
    )
    @click.option("--allow-privileged", is_flag=True, help=ALLOW_PRIVILEGED_HELP)
    @click.pass_context
    def schema_cmd(
        ctx: click.Context,
        db_url: str | None,
        datasource: str | None,
        as_json: bool,
        max_chars: int | None,
        allow_privileged: bool,
    ) -> None:
        """Print the schema of a datasource: tables, columns, keys, row estimates."""
        from assay import PromptBudget

        from .tools import Datasources

        kernel = cli_kernel(ctx)
        name = _choose(kernel, db_url, datasource, allow_privileged)
        from . import sql_settings

        resource = Datasources(kernel, sql_settings(kernel.settings)).resolve(name)
        tables = resource.tables()
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "datasource": resource.name,
                        "url": resource.url,
                        "dialect": resource.dialect,
                        "tables": [t.model_dump() for t in tables],
                    },
                    indent=2,
                )
            )
            return
        if max_chars:
            click.echo(resource.get_prompt(PromptBudget(max_chars=max_chars)))
            return
        click.echo(
            f"{resource.dialect} database {resource.name!r} ({resource.url}): {len(tables)} tables\n"
        )
        click.echo("\n\n".join(t.render() for t in tables))

    @db_group.command("doctor")
    @click.argument("url", required=False)
    @click.option("--datasource", "-d", help="A configured datasource name (instead of URL).")
    @click.option(
        "--allow-privileged", is_flag=True, help="Judge URL as if it were marked allow_privileged."
    )
    @click.pass_context
    def doctor_cmd(
        ctx: click.Context, url: str | None, datasource: str | None, allow_privileged: bool
    ) -> None:
        """Print what the datasource's login can do and why it is or is not accepted (exit 1: refused),
        and whether the session settings the read-only check relies on (and PostgreSQL temp_file_limit) are set."""
        from . import sql_settings
        from .errors import SqlError
        from .tools import Datasources

        kernel = cli_kernel(ctx)
        if not url and not datasource:
            raise click.UsageError("give a database URL or --datasource NAME")
        try:
            name = _choose(kernel, url, datasource, allow_privileged) if url else datasource
            resource = Datasources(kernel, sql_settings(kernel.settings)).resolve(name)
            report = resource.inspect_login()
        except SqlError as exc:
            click.echo(f"error {exc.code}: {exc.message}")
            sys.exit(2)
        click.echo(f"datasource: {resource.name} ({resource.url})")
        if report is None:
            click.echo(
                f"engine: {resource.engine.name}: no logins (a file opened read-only); accepted"
            )
            return
        allowed = resource.config.allow_privileged
        click.echo(report.render(allowed=allowed))
        if report.is_privileged and not allowed:
            sys.exit(1)
