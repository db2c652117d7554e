"""``assay knowledge index|search|ls``."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from assay.kernel.cli import cli_kernel, error_text, fail


def _bases(ctx: click.Context, names: tuple[str, ...], paths: tuple[str, ...]) -> list[Any]:
    """The configured bases named (all when none), or one made of ``--path`` options."""
    from .errors import KnowledgeError
    from .tools import knowledge_bases, resolve

    kernel = cli_kernel(ctx)
    if paths:
        from . import open_base
        from .settings import KnowledgeBaseConfig, name_for_path

        name = names[0] if len(names) == 1 else name_for_path(paths[0])
        kernel.attach(open_base(name, KnowledgeBaseConfig(paths=list(paths)), kernel=kernel))
        return [knowledge_bases(kernel)[name]]
    try:
        return [b for n in names for b in resolve(kernel, n)] if names else resolve(kernel, None)
    except KnowledgeError as exc:
        fail(error_text(exc.code, exc.message, exc.hint))


PATH_HELP = "Index these paths as one base (named after the first, or the NAME given) instead of the configured ones."


def add_commands(cli: click.Group) -> None:
    @cli.group("knowledge")
    def knowledge_group() -> None:
        """Knowledge bases: business definitions the agent searches and cites (docs/knowledge.md)."""

    @knowledge_group.command("index")
    @click.argument("names", nargs=-1)
    @click.option("--path", "paths", multiple=True, help=PATH_HELP)
    @click.option("--json", "as_json", is_flag=True, help="Print what each update did as JSON.")
    @click.pass_context
    def index_cmd(
        ctx: click.Context, names: tuple[str, ...], paths: tuple[str, ...], as_json: bool
    ) -> None:
        """Bring the index of each base (all by default) in step with its files; only changed files are parsed."""
        from .errors import KnowledgeError

        failed = False
        out = {}
        for base in _bases(ctx, names, paths):
            try:
                report = base.refresh(force=True)
            except KnowledgeError as exc:
                click.echo(
                    f"{base.name}: error: {error_text(exc.code, exc.message, exc.hint)}", err=True
                )
                failed = True
                continue
            out[base.name] = {
                "index": str(base.index.path),
                **{
                    k: getattr(report, k)
                    for k in (
                        "files",
                        "passages",
                        "added",
                        "changed",
                        "unchanged",
                        "removed",
                        "elapsed_ms",
                    )
                },
                "failed": [{"file": f, "code": c, "message": m} for f, c, m in report.failed],
            }
            if not as_json:
                click.echo(f"{base.name}: {report.summary()}")
                for file, code, message in report.failed:
                    click.echo(f"  {file}: {code}: {message}")
        if as_json:
            click.echo(json.dumps(out, indent=2))
        if failed:
            sys.exit(1)

    @knowledge_group.command("search")
    @click.argument("query")
    @click.option("-k", "k", type=int, default=5, show_default=True, help="How many passages.")
    @click.option("--base", "-b", help="One base (default: every base).")
    @click.option("--path", "paths", multiple=True, help=PATH_HELP)
    @click.option("--json", "as_json", is_flag=True, help="Print the result envelope as JSON.")
    @click.pass_context
    def search_cmd(
        ctx: click.Context,
        query: str,
        k: int,
        base: str | None,
        paths: tuple[str, ...],
        as_json: bool,
    ) -> None:
        """Search the knowledge bases, keep the result as an artifact and print the passages."""
        kernel = cli_kernel(ctx)
        if paths:
            base = _bases(ctx, (base,) if base else (), paths)[0].name
        run = kernel.new_run()
        try:
            args: dict[str, Any] = {"query": query, "k": k}
            if base:
                args["base"] = base
            result = kernel.call_tool("knowledge_search", args, run=run)
        finally:
            run.close()
        if as_json:
            click.echo(result.model_dump_json(indent=2))
        else:
            click.echo(result.content if result.success else result.for_model())
        if not result.success:
            sys.exit(1)

    @knowledge_group.command("ls")
    @click.argument("names", nargs=-1)
    @click.option("--path", "paths", multiple=True, help=PATH_HELP)
    @click.pass_context
    def ls_cmd(ctx: click.Context, names: tuple[str, ...], paths: tuple[str, ...]) -> None:
        """List the bases, and each file with its status, passages and SHA-256 (indexing first if needed)."""
        from .errors import KnowledgeError

        for base in _bases(ctx, names, paths):
            try:
                report = base.refresh()
            except KnowledgeError as exc:
                click.echo(f"{base.name}: error: {error_text(exc.code, exc.message, exc.hint)}")
                continue
            click.echo(
                f"{base.name}: {report.files} files, {report.passages} passages ({base.index.path})"
                + (f" - {base.description}" if base.description else "")
            )
            for path in base.config.paths:
                click.echo(f"  path: {path}")
            for state in base.index.files():
                sha = (state.sha256 or "")[:12] or "-"
                line = f"  {state.status:<8} {state.passages:>5}  {sha:<12}  {state.display}"
                if state.error:
                    line += f"  ({state.error_code}: {state.error})"
                click.echo(line)
            for file, code, _message in report.failed:
                if code == "KNOWLEDGE_BASE_NOT_FOUND":
                    click.echo(f"  missing  {file}")
