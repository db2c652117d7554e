"""``assay ask``: a question answered by the main agent, step by step on screen.

The exit code says the run's status (docs/agent.md): 0 answered, 3
needs_analysis, 4 partial, 5 failed, 6 max_steps, 7 max_time, 8 max_tokens,
9 model_unreachable, 10 model_failed, 11 invalid_input, 12
answered_unverified (a figure of the answer is not found in the evidence),
130 cancelled (Ctrl-C); 1 an internal error, 2 a usage error.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import TYPE_CHECKING, Any

import click

from assay.kernel.cli import error_text

if TYPE_CHECKING:
    from .ask import ModelRecorder, UrlOpener
    from .transcript import AgentEvent, Transcript

EXIT_HELP = (
    "Exit codes: 0 answered, 3 needs_analysis, 4 partial, 5 failed, 6 max_steps, 7 max_time, "
    "8 max_tokens, 9 model_unreachable, 10 model_failed, 11 invalid_input, 12 answered_unverified "
    "(a figure of the answer is not found in the evidence), 130 cancelled."
)
SIGNAL_HELP = (
    " Ctrl-C or SIGTERM (timeout, kill, systemd) cancels the running call (a SQL query on its server) "
    "and records the run cancelled; after SIGTERM the process then ends as killed by it (143)."
)


def summarize_arguments(tool: str, arguments: Any, width: int = 90) -> str:
    """One line saying what a call asks for (the SQL for sql_query, else key=value pairs)."""
    if isinstance(arguments, str):
        text = arguments
    elif isinstance(arguments, dict):
        main = arguments.get("sql") or arguments.get("code")
        if isinstance(main, str):
            text = main
            rest = {k: v for k, v in arguments.items() if k not in ("sql", "code")}
            if rest:
                text += "  " + " ".join(f"{k}={_short(v)}" for k, v in rest.items())
        else:
            text = " ".join(f"{k}={_short(v)}" for k, v in arguments.items())
    else:
        text = str(arguments)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def outcome_line(data: dict[str, Any], *, report_status: bool = True) -> str:
    """``2 rows, art_..., 12 ms``, ``report needs_analysis, 40 ms`` (a tool that reports a status of its
    own, as ``generate_report`` does, is not just "ok") or ``error SQL_QUERY_FAILED, 30 ms``."""
    parts = []
    status = (data.get("metadata") or {}).get("report_status") if report_status else None
    if data.get("success"):
        if data.get("row_count") is not None:
            n = data["row_count"]
            parts.append(f"{n:,} row{'s' if n != 1 else ''}")
        elif status:
            parts.append(f"report {status}")
        else:
            parts.append("ok")
    else:
        parts.append(f"error {data.get('error_code') or 'unknown'}")
    parts.extend(data.get("artifact_ids") or [])
    if data.get("elapsed_ms") is not None:
        parts.append(f"{data['elapsed_ms']:.0f} ms")
    return ", ".join(parts)


class StepPrinter:
    """Prints a run as it goes: tool calls with their outcome, streamed text, limits, compactions."""

    def __init__(self, echo=click.echo) -> None:
        self.echo = echo
        self._lock = threading.Lock()
        self._streaming = False
        self.streamed_answer = False

    def __call__(self, event: AgentEvent) -> None:
        with self._lock:
            handler = getattr(self, f"_on_{event.kind}", None)
            if handler is not None:
                handler(event)

    def _end_stream(self) -> None:
        if self._streaming:
            self.echo("")
            self._streaming = False

    def _on_run_started(self, event: AgentEvent) -> None:
        self.echo(f"run {event.run_id} · model {event.data.get('model') or '-'}")

    def _on_model_request(self, event: AgentEvent) -> None:
        self.streamed_answer = False

    def _on_text(self, event: AgentEvent) -> None:
        self.echo(event.data.get("delta", ""), nl=False)
        self._streaming = True
        self.streamed_answer = True

    def _on_message(self, event: AgentEvent) -> None:
        message = event.data.get("message") or {}
        if message.get("role") == "assistant":
            self._end_stream()
            if message.get("tool_calls"):
                self.streamed_answer = False

    def _on_tool_started(self, event: AgentEvent) -> None:
        self._end_stream()

    def _on_tool_finished(self, event: AgentEvent) -> None:
        d = event.data
        self.echo(
            f"[{event.step}] {d['tool']}  {summarize_arguments(d['tool'], d.get('arguments'))}".rstrip()
        )
        self.echo(f"    -> {outcome_line(d)}")

    def _on_compaction(self, event: AgentEvent) -> None:
        d = event.data
        self.echo(
            f"    (compacted {len(d['call_ids'])} older tool result(s): ~{d['tokens_before']:,} -> "
            f"~{d['tokens_after']:,} tokens)"
        )

    def _on_limit(self, event: AgentEvent) -> None:
        d = event.data
        self.echo(f"    (limit reached: {d['limit']} = {d['value']})")

    def _on_figure_check(self, event: AgentEvent) -> None:
        d = event.data
        if d.get("correction_asked"):
            self._end_stream()
            self.echo(
                "    (figure check: "
                + unsupported_line(d)
                + "; the model is asked to correct or cite them)"
            )


def unsupported_line(figures: dict[str, Any] | None) -> str:
    """``not found in the evidence: 999,999; $12.3M``, highlighted on a terminal ("" when all were found)."""
    listed = list(dict.fromkeys(f["text"] for f in (figures or {}).get("unsupported") or []))
    if not listed:
        return ""
    return "not found in the evidence: " + "; ".join(
        click.style(text, fg="red", bold=True) for text in listed
    )


def highlight(answer: str, figures: dict[str, Any] | None) -> str:
    """The answer with each unsupported figure highlighted (on a terminal; plain text elsewhere)."""
    spans = sorted((f["start"], f["end"]) for f in (figures or {}).get("unsupported") or [])
    out, at = [], 0
    for start, end in spans:
        if start < at or end > len(answer):
            continue
        out += [
            answer[at:start],
            click.style(answer[start:end], fg="red", bold=True, underline=True),
        ]
        at = end
    return "".join(out) + answer[at:]


def print_result(transcript: Transcript, printer: StepPrinter | None, mode: str) -> None:
    if mode == "json":
        click.echo(json.dumps(transcript.summary(), default=str, ensure_ascii=False))
        return
    flagged = unsupported_line(transcript.figures)
    if mode == "quiet":
        if transcript.answer:
            click.echo(transcript.answer)
        else:  # no answer (max_steps, max_time, ...): say why, or --quiet would print nothing at all
            click.echo(f"status: {transcript.status} ({transcript.status_reason})", err=True)
        if flagged:
            click.echo(flagged, err=True)
        _error_line(transcript)
        return
    if transcript.answer and not (printer and printer.streamed_answer):
        click.echo("")
        click.echo(highlight(transcript.answer, transcript.figures))
    if flagged:
        click.echo(flagged)
    report = transcript.report()
    if report is not None:
        click.echo("")
        where = f", artifact {report['artifact_id']}" if report["artifact_id"] else ""
        click.echo(f"report: {report['status']}{where}")
        if report["text"]:
            click.echo(report["text"])
        if report.get("unbound_figures"):
            click.echo(
                "report figures not bound to evidence: "
                + "; ".join(click.style(f, fg="red", bold=True) for f in report["unbound_figures"])
            )
    click.echo("")
    usage = transcript.usage
    click.echo(
        f"status: {transcript.status} ({transcript.status_reason}) · {transcript.steps} step(s) · "
        f"{len(transcript.calls)} tool call(s) · tokens {usage.prompt_tokens:,}+{usage.completion_tokens:,}"
        f" · {transcript.elapsed_s:.1f} s"
    )
    click.echo(f"artifacts: {', '.join(transcript.artifact_ids) or 'none'}")
    click.echo(f"run: {transcript.run_id} (assay runs show {transcript.run_id})")
    _error_line(transcript)


def _error_line(transcript: Transcript) -> None:
    if transcript.error is not None:
        e = transcript.error
        click.echo(f"error: {error_text(e.code, e.message, e.hint)}", err=True)


def make_ask_command(
    open_url: UrlOpener | None = None,
    record_model: ModelRecorder | None = None,
    open_files: Any = None,
    reopen_files: Any = None,
) -> click.Command:
    """The ``ask`` command; ``open_url`` attaches a ``--db URL``, ``record_model`` serves ``--record``,
    ``open_files`` attaches ``--file`` and ``reopen_files`` a ``--continue``d run's files again (the
    ``ask_cli`` plugin passes the SQL, models and files plugins')."""

    @click.command("ask", epilog=EXIT_HELP + SIGNAL_HELP)
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
        help="A CSV/TSV, Parquet, JSON/NDJSON or Excel file as a table; NAME=PATH names it; a directory "
        "or glob adds each file (repeatable; docs/files.md).",
    )
    @click.option(
        "--model",
        "model_spec",
        default=None,
        help="PROVIDER[:NAME], e.g. openai_compatible:gpt-4o-mini (default: ASSAY_AGENT_MODEL).",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print one machine-readable run record.")
    @click.option("--quiet", "-q", is_flag=True, help="Print only the answer.")
    @click.option(
        "--max-steps",
        type=click.IntRange(min=1),
        default=None,
        help="Model turns (ASSAY_AGENT_MAX_STEPS).",
    )
    @click.option(
        "--record",
        "record",
        type=click.Path(dir_okay=False),
        default=None,
        help="Write every model exchange to this JSONL cassette (play it back with --model replay:PATH).",
    )
    @click.option(
        "--allow-privileged",
        is_flag=True,
        help="Accept a --db login that can reach server files, other sessions or server settings.",
    )
    @click.option(
        "--continue",
        "continue_run",
        metavar="RUN_ID|last",
        default=None,
        help="A follow-up: continue that run's thread (its questions, answers and evidence; "
        "default --db and --file: that run's, its files checked unchanged).",
    )
    @click.pass_context
    def ask_cmd(
        ctx: click.Context,
        question: str,
        databases: tuple[str, ...],
        files: tuple[str, ...],
        model_spec: str | None,
        as_json: bool,
        quiet: bool,
        max_steps: int | None,
        record: str | None,
        allow_privileged: bool,
        continue_run: str | None,
    ) -> None:
        """Ask QUESTION of your data; the agent answers from evidence, step by step."""
        from assay.kernel.exit_signals import Terminated, die_of

        from .ask import AskOptions, ask
        from .loop import agent_settings
        from .status import EXIT_CODES, RunStatus

        if as_json and quiet:
            raise click.UsageError("--json and --quiet exclude each other")
        kernel = (ctx.find_object(dict) or {})["kernel"]
        settings = agent_settings(kernel)
        if max_steps is not None:
            settings = settings.model_copy(update={"max_steps": max_steps})
        mode = "json" if as_json else "quiet" if quiet else "steps"
        printer = StepPrinter() if mode == "steps" else None
        parent = None
        if continue_run:
            from assay.plugins.runs.thread import resolve_parent

            parent = resolve_parent(kernel.runs, continue_run).run_id
        options = AskOptions(
            question=question,
            databases=list(databases),
            model=model_spec,
            allow_privileged=allow_privileged,
            settings=settings,
            open_url=open_url,
            record=record,
            record_model=record_model,
            files=list(files),
            open_files=open_files,
            parent_run_id=parent,
            reopen_files=reopen_files,
        )
        try:
            transcript = ask(kernel, options, observers=[printer] if printer else [])
        except KeyboardInterrupt:
            _print_cancelled(kernel, mode)
            sys.exit(EXIT_CODES[RunStatus.CANCELLED])
        except (
            Terminated
        ) as stop:  # SIGTERM (timeout, kill, systemd): cancelled the same way, then killed by it
            _print_cancelled(kernel, mode)
            sys.stdout.flush()
            sys.stderr.flush()
            die_of(stop.signum)
        print_result(transcript, printer, mode)
        sys.exit(EXIT_CODES.get(transcript.status, 1))

    return ask_cmd


def _print_cancelled(kernel: Any, mode: str) -> None:
    """After Ctrl-C: the run as the store kept it (the agent recorded it as cancelled)."""
    import os

    record = next((r for r in kernel.runs.list(limit=20) if r.pid == os.getpid()), None)
    if record is None:
        click.echo("cancelled before the run started", err=True)
        return
    if mode == "json":
        click.echo(
            json.dumps(record.summary or record.model_dump(), default=str, ensure_ascii=False)
        )
        return
    click.echo("")
    click.echo(
        f"status: {record.status} · {record.steps} step(s) · {record.tool_calls} tool call(s)",
        err=True,
    )
    click.echo(f"artifacts: {', '.join(record.artifact_ids) or 'none'}", err=True)
    click.echo(f"run: {record.run_id} (assay runs show {record.run_id})", err=True)
