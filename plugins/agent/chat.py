"""``assay chat``: an interactive thread of questions, each one a run continuing the one before.

Each line typed is asked as ``assay ask --continue PREVIOUS`` would ask it
(the first continues ``--continue`` if given, else starts a thread). The
line editor is readline's, with its history kept in
``ASSAY_HOME/chat_history``. Ctrl-C during a step cancels that run (it is
recorded ``cancelled``; the earlier runs are untouched) and the loop goes
on; Ctrl-C at the prompt clears the line; Ctrl-D (end of input) ends the chat.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..agent.ask import AskOptions, ModelRecorder, UrlOpener

PROMPT = "assay> "
HISTORY_LINES = 1_000


def _readline(home: Path) -> Any:
    """readline with the chat's history loaded (None where there is no readline)."""
    try:
        import readline
    except ImportError:  # pragma: no cover - Windows without pyreadline
        return None
    path = home / "chat_history"
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(HISTORY_LINES)
    return readline


def _save_history(readline: Any, home: Path) -> None:
    if readline is None:
        return
    try:
        home.mkdir(parents=True, exist_ok=True)
        readline.write_history_file(home / "chat_history")
    except OSError:
        pass


def chat_loop(
    kernel: Any, base: AskOptions, *, parent: str | None = None, read: Any = input
) -> int:
    """Ask each line read as a follow-up of the previous run; returns the number of runs made."""
    from ..agent.ask import ask
    from ..agent.cli_ask import StepPrinter, print_result

    made = 0
    while True:
        try:
            line = read(PROMPT)
        except EOFError:
            click.echo("")
            return made
        except KeyboardInterrupt:  # at the prompt: a fresh line, as a shell does
            click.echo("")
            continue
        if not line.strip():
            continue
        printer = StepPrinter()
        options = replace(base, question=line.strip(), parent_run_id=parent)
        try:
            transcript = ask(kernel, options, observers=[printer])
        except KeyboardInterrupt:
            cancelled = _own_newest(kernel)
            click.echo("")
            if cancelled is not None:
                click.echo(
                    f"cancelled: run {cancelled.run_id} ({cancelled.status}); the thread goes on from it"
                )
                parent = cancelled.run_id
            else:
                click.echo("cancelled before the run started")
            made += cancelled is not None
            continue
        made += 1
        print_result(transcript, printer, "steps")
        parent = transcript.run_id


def _own_newest(kernel: Any) -> Any:
    import os

    return next((r for r in kernel.runs.list(limit=20) if r.pid == os.getpid()), None)


def make_chat_command(
    open_url: UrlOpener | None = None,
    record_model: ModelRecorder | None = None,
    reopen_files: Any = None,
) -> click.Command:
    """The ``chat`` command (the ``ask_cli`` plugin adds it beside ``ask``); ``reopen_files`` registers
    the files of the thread again for each question (the files plugin's)."""

    @click.command("chat")
    @click.option(
        "--db",
        "databases",
        multiple=True,
        help="A database URL or a configured datasource name (repeatable; default: every configured "
        "one, or the continued run's).",
    )
    @click.option(
        "--model", "model_spec", default=None, help="PROVIDER[:NAME] (default: ASSAY_AGENT_MODEL)."
    )
    @click.option(
        "--continue",
        "continue_run",
        metavar="RUN_ID|last",
        default=None,
        help="Continue that run's thread instead of starting one.",
    )
    @click.option(
        "--max-steps", type=click.IntRange(min=1), default=None, help="Model turns per question."
    )
    @click.option(
        "--allow-privileged",
        is_flag=True,
        help="Accept a --db login that can reach server files, other sessions or server settings.",
    )
    @click.pass_context
    def chat_cmd(
        ctx: click.Context,
        databases: tuple[str, ...],
        model_spec: str | None,
        continue_run: str | None,
        max_steps: int | None,
        allow_privileged: bool,
    ) -> None:
        """Ask questions one after another; each continues the thread (its answers and evidence).

        Ctrl-C cancels the current step (the run is recorded cancelled), Ctrl-D ends the chat.
        """
        from assay.kernel.cli import cli_kernel

        from ..agent.ask import AskOptions
        from ..runs.thread import resolve_parent
        from .loop import agent_settings

        kernel = cli_kernel(ctx)
        settings = agent_settings(kernel)
        if max_steps is not None:
            settings = settings.model_copy(update={"max_steps": max_steps})
        parent = resolve_parent(kernel.runs, continue_run).run_id if continue_run else None
        home = Path(kernel.settings.home)
        readline = _readline(home)
        base = AskOptions(
            question="",
            databases=list(databases),
            model=model_spec,
            settings=settings,
            allow_privileged=allow_privileged,
            open_url=open_url,
            record_model=record_model,
            reopen_files=reopen_files,
        )
        try:
            chat_loop(kernel, base, parent=parent)
        finally:
            _save_history(readline, home)
        sys.exit(0)

    return chat_cmd
