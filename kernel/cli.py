"""The ``assay`` command line. Plugins add sub-commands via ``register_commands``."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .errors import AssayError
from .log import configure_logging, get_logger

if TYPE_CHECKING:
    from .kernel import Kernel


def cli_kernel(ctx: click.Context) -> Kernel:
    """The kernel of the running ``assay`` command (a plugin's sub-command too); one made from
    the environment when the command runs outside the ``assay`` group (e.g. click's test runner)."""
    obj = ctx.ensure_object(dict)
    if obj.get("kernel") is None:
        from .kernel import Kernel

        obj["kernel"] = Kernel()
    return obj["kernel"]


def error_text(code: str, message: str, hint: str = "") -> str:
    """The one way the command line shows a coded error: ``CODE: message (hint)``."""
    return f"{code}: {message}" + (f" ({hint})" if hint else "")


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one clear line to stderr and exit non-zero."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


class AssayGroup(click.Group):
    """Runs every command with errors turned into one line, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AssayError as exc:
            fail(error_text(exc.code, exc.message, exc.hint))


@click.group(cls=AssayGroup)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """assay: a plugin-based microkernel for data-analysis agents."""
    ctx.ensure_object(dict)


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def plugins_cmd(ctx: click.Context, as_json: bool) -> None:
    """List every plugin found: distribution, version, hooks and status."""
    kernel = cli_kernel(ctx)
    infos = kernel.plugins()
    if as_json:
        click.echo(
            json.dumps(
                {"health": kernel.health(), "plugins": [i.to_dict() for i in infos]}, indent=2
            )
        )
        return
    rows: list[tuple[str, ...]] = [
        (
            i.name,
            i.distribution or "-",
            i.version or "-",
            i.status if i.status != "failed" else f"failed: {i.error['code'] if i.error else ''}",
            ", ".join(h.removeprefix("register_") for h in i.hooks) or "-",
        )
        for i in infos
    ]
    _table(("plugin", "distribution", "version", "status", "hooks"), rows)
    for info in infos:
        if info.error:
            click.echo(f"  {info.name}: {info.error['message']}", err=True)


@cli.command("tools")
@click.option("--json", "as_json", is_flag=True, help="Print definitions with JSON Schemas.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["assay", "openai", "mcp"]),
    default="assay",
    help="Shape of the --json definitions.",
)
@click.pass_context
def tools_cmd(ctx: click.Context, as_json: bool, fmt: str) -> None:
    """List the tools the model can call."""
    kernel = cli_kernel(ctx)
    tools = kernel.tools
    if as_json:
        if fmt == "openai":
            defs = [t.to_openai() for t in tools.values()]
        elif fmt == "mcp":
            defs = [t.to_mcp() for t in tools.values()]
        else:
            defs = [
                {
                    "name": n,
                    "plugin": kernel.provenance("tools", n),
                    "description": t.description,
                    "is_async": t.is_async,
                    "parameters": t.parameters,
                }
                for n, t in tools.items()
            ]
        click.echo(json.dumps(defs, indent=2))
        return
    _table(
        ("tool", "plugin", "description"),
        [
            (n, kernel.provenance("tools", n) or "-", (t.description.splitlines() or [""])[0])
            for n, t in tools.items()
        ],
    )


@cli.group("tool")
def tool_group() -> None:
    """Work with one tool."""


@tool_group.command("call")
@click.argument("name")
@click.option("--args", "args_json", default="{}", help="Arguments as a JSON object.")
@click.pass_context
def tool_call_cmd(ctx: click.Context, name: str, args_json: str) -> None:
    """Call tool NAME and print its result envelope as JSON.

    On failure the envelope still goes to stdout, one line saying why goes to
    stderr, and the exit status is 1.
    """
    kernel = cli_kernel(ctx)
    try:
        arguments = json.loads(args_json)
    except ValueError as exc:
        fail(f"--args is not valid JSON: {exc}")
    if not isinstance(arguments, dict):
        fail(f"--args must be a JSON object, got {type(arguments).__name__}")
    run = kernel.new_run()
    run.artifact_scope = lambda _run_id: True  # the host's operator reads the whole store anyway
    try:
        # The async channel serves both kinds: sync tools run in a worker thread.
        result = asyncio.run(kernel.acall_tool(name, arguments, run=run))
    finally:
        run.close()
    click.echo(result.model_dump_json(indent=2))
    if not result.success:
        fail(f"{result.error_code}: {result.message}", code=1)


@cli.command("config")
@click.pass_context
def config_cmd(ctx: click.Context) -> None:
    """Show the effective settings, secrets masked."""
    kernel = cli_kernel(ctx)
    kernel.start()
    click.echo(json.dumps(kernel.settings.masked(), indent=2, default=str))


# `assay ask` comes from the ask_cli plugin, `assay runs` from the runs plugin


def _table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max([len(h)] + [len(str(r[i])) for r in rows]) for i, h in enumerate(headers)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    for row in rows:
        click.echo("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())


def build_cli(kernel: Kernel) -> click.Group:
    """A root group for ``kernel``: the built-in commands plus every plugin's.

    A fresh group each time, so plugin commands never leak between kernels.
    A plugin command whose name is taken is ignored with a warning.
    """
    group = AssayGroup(
        name="assay", commands=dict(cli.commands), callback=cli.callback, help=cli.help
    )
    for plugin, command in kernel.commands():
        if command.name in group.commands:
            click.echo(
                f"warning: plugin {plugin!r} command {command.name!r} clashes with an existing one; ignored",
                err=True,
            )
            continue
        group.add_command(command)
    return group


def pause_collector() -> Callable[[], None]:
    """Pause the cyclic garbage collector for the start-up; returns the call that resumes it.

    Start-up makes tens of thousands of objects that live as long as the
    process (modules, classes, pydantic schemas, plugin registrations), and
    the collector would scan them again and again while they are made (~20 ms
    of CPU before an `assay ask` sends its first request). Resuming freezes
    them (``gc.freeze``): the collector runs as usual for what the command
    makes next, without rescanning them.
    """
    if not gc.isenabled():
        return lambda: None
    gc.disable()

    def resume() -> None:
        gc.freeze()
        gc.enable()

    return resume


def main(argv: list[str] | None = None) -> None:
    """The console script. Every failure is one line on stderr and a non-zero exit."""
    resume_collector = pause_collector()
    try:
        from .kernel import Kernel

        kernel = Kernel()
        configure_logging(kernel.settings.log_level, kernel.settings.log_format)
        group = build_cli(kernel)
    except AssayError as exc:
        fail(error_text(exc.code, exc.message, exc.hint))
    finally:
        resume_collector()
    try:
        group.main(args=argv, prog_name="assay", obj={"kernel": kernel}, standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # usage errors: one line, no usage block
        fail(exc.format_message().replace("\n", " "), code=exc.exit_code)
    except click.exceptions.Abort:
        fail("aborted", code=1)
    except AssayError as exc:
        fail(error_text(exc.code, exc.message, exc.hint))
    except Exception as exc:  # noqa: BLE001 - a bug: still one line, details in the debug log
        get_logger("assay.cli").debug(
            "cli_crashed", error=repr(exc), traceback=traceback.format_exc()
        )
        fail(
            f"internal error: {type(exc).__name__}: {exc} (set ASSAY_LOG_LEVEL=DEBUG for details)",
            code=1,
        )
    finally:
        kernel.close()


if __name__ == "__main__":
    main()
