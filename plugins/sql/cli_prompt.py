"""``assay prompt [--db ...] [--file ...] "QUESTION"``: the system prompt the main agent would start with, and why.

It is built by the same code as ``assay ask`` builds it (the same resources,
settings and budget, the question passed through), without a model or a run.
``--json`` adds, per database, which tables were shown in full (and why),
which were named, which were left out, and the schema index's state.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from assay.kernel.cli import error_text


def system_prompt_for(
    kernel: Any,
    question: str,
    databases: list[str],
    allow_privileged: bool = False,
    files: list[str] | None = None,
) -> tuple[str, list[Any]]:
    """The main agent's system prompt for ``question`` and the resources it describes (as ``assay ask``;
    ``files`` as its ``--file``: one datasource over them)."""
    from assay.plugins.agent.ask import attach_databases, resources_for
    from assay.plugins.agent.loop import agent_settings
    from assay.plugins.agent.prompt import build_system_prompt

    from . import attach_url

    chosen = attach_databases(
        kernel,
        databases,
        allow_privileged=allow_privileged,
        open_url=lambda k, url, allow: attach_url(k, url, allow),
    )
    if files:  # one datasource over them, as `assay ask --file` attaches them (the files plugin)
        from assay.plugins.files import attach_files

        chosen.append(attach_files(kernel, list(files)))
    resources = (
        resources_for(kernel, chosen) if databases or files else list(kernel.resources.values())
    )
    return build_system_prompt(kernel, resources, agent_settings(kernel), question), resources


def layouts(resources: list[Any]) -> list[dict[str, Any]]:
    """What each database's part of the prompt holds (its ``last_layout``), packs' members included."""
    out: list[dict[str, Any]] = []
    for resource in resources:
        if resource.is_pack:
            out += layouts(resource.sub_resources)
            continue
        layout = getattr(resource, "last_layout", None)
        if layout is not None:
            out.append(layout.to_dict())
    return out


def add_prompt_command(cli: click.Group) -> None:
    @cli.command("prompt")
    @click.argument("question")
    @click.option(
        "--db",
        "databases",
        multiple=True,
        help="A database URL or a configured datasource name (repeatable; default: every configured one).",
    )
    @click.option(
        "--file",
        "files",
        multiple=True,
        help="A data file as a table, as `assay ask --file` takes it: NAME=PATH names it, a directory "
        "or glob adds each file (repeatable; docs/files.md).",
    )
    @click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print the prompt with, per database, the tables shown in full, named and left out, and why.",
    )
    @click.option(
        "--allow-privileged",
        is_flag=True,
        help="Accept a --db login that can reach server files, other sessions or server settings.",
    )
    @click.pass_context
    def prompt_cmd(
        ctx: click.Context,
        question: str,
        databases: tuple[str, ...],
        files: tuple[str, ...],
        as_json: bool,
        allow_privileged: bool,
    ) -> None:
        """Print exactly the system prompt `assay ask` would give the main agent for QUESTION."""
        from assay.kernel.cli import cli_kernel
        from assay.kernel.errors import AssayError

        if not question.strip():
            raise click.UsageError("the question is empty")
        kernel = cli_kernel(ctx)
        try:
            text, resources = system_prompt_for(
                kernel, question, list(databases), allow_privileged, list(files)
            )
        except AssayError as exc:
            click.echo(f"error: {error_text(exc.code, exc.message, exc.hint)}", err=True)
            sys.exit(2)
        if not as_json:
            click.echo(text)
            return
        click.echo(
            json.dumps(
                {
                    "question": question,
                    "system_prompt": text,
                    "chars": len(text),
                    "databases": layouts(resources),
                },
                ensure_ascii=False,
                indent=2,
            )
        )
