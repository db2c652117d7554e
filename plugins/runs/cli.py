"""``assay runs ls | show | export``: read agent runs back from the runs store."""

from __future__ import annotations

import json
import sys
from typing import Any

import click


def _kernel(ctx: click.Context) -> Any:
    return ctx.ensure_object(dict)["kernel"]


@click.group("runs")
def runs_group() -> None:
    """List, show, export and prune agent runs (kept under ASSAY_HOME as they go)."""


@runs_group.command("ls")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--status", default=None, help="Only runs with this status.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run.")
@click.pass_context
def ls_cmd(ctx: click.Context, limit: int, status: str | None, as_json: bool) -> None:
    """The newest runs first: id, start, status, steps, tool calls, model, question.

    A run whose process ended without finishing it shows as ``interrupted``.
    """
    from .records import iso

    for record in _kernel(ctx).runs.list(limit=limit, status=status):
        if as_json:
            data = record.model_dump(exclude={"summary"})
            data["shown_status"], data["shown_reason"] = record.shown_status, record.shown_reason
            click.echo(json.dumps(data, default=str, ensure_ascii=False))
            continue
        question = " ".join(record.question.split())
        question = question if len(question) <= 60 else question[:57] + "..."
        click.echo(
            f"{record.run_id}  {iso(record.started_at)}  {record.shown_status:<17} "
            f"steps={record.steps:<3} calls={record.tool_calls:<3} {record.model or '-'}  {question}"
        )


@runs_group.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="The record and every event as JSON.")
@click.option(
    "--full",
    is_flag=True,
    help="Show whole messages (the system prompt too), not their first lines.",
)
@click.pass_context
def show_cmd(ctx: click.Context, run_id: str, as_json: bool, full: bool) -> None:
    """The transcript of RUN_ID: every message, tool call, result preview, artifact, token use and time."""
    from assay.kernel.errors import AssayError

    from .records import iso

    store = _kernel(ctx).runs
    record = store.get(run_id)
    if record is None:
        raise AssayError(
            "RUN_NOT_FOUND",
            f"no run {run_id!r} in the runs store",
            "List runs with `assay runs ls`.",
        )
    events = list(store.events(run_id))
    thread = _thread(_kernel(ctx), record, events)
    if as_json:
        click.echo(
            json.dumps(
                {"run": record.model_dump(), **thread, "events": [e.model_dump() for e in events]},
                default=str,
                ensure_ascii=False,
                indent=2,
            )
        )
        return
    click.echo(
        f"run {record.run_id}  model {record.model or '-'}  started {iso(record.started_at)}  "
        f"ended {iso(record.ended_at)}"
    )
    click.echo(f"question: {record.question}")
    click.echo(
        f"status: {record.shown_status}"
        + (f" ({record.shown_reason})" if record.shown_reason else "")
    )
    from assay.plugins.agent.cli_ask import unsupported_line

    if unsupported_line(record.summary.get("figures")):
        click.echo(unsupported_line(record.summary.get("figures")))
    if record.error:
        click.echo(
            f"error: {record.error.get('code')}: {record.error.get('message')}"
            + (f" ({record.error['hint']})" if record.error.get("hint") else "")
        )
    click.echo(
        f"steps {record.steps} · tool calls {record.tool_calls} · tokens "
        f"{record.prompt_tokens:,}+{record.completion_tokens:,}"
    )
    click.echo(f"artifacts: {', '.join(record.artifact_ids) or 'none'}")
    if thread:
        click.echo(f"thread: {' -> '.join(thread['thread'])} (this run last)")
        click.echo(f"cited from the thread: {', '.join(thread['thread_cited']) or 'none'}")
        for problem in (record.summary.get("thread") or {}).get("problems") or []:
            click.echo(
                f"unavailable in the thread: {problem['artifact_id']} (run {problem['run_id']}): "
                f"{problem['code']}: {problem['message']}"
            )
    click.echo("")
    started = events[0].at if events else record.started_at
    artifact = _artifact_reader(_kernel(ctx))
    for event in events:
        for line in _event_lines(event, full, artifact):
            click.echo(f"{event.at - started:8.3f}s  {line}")


def _thread(kernel: Any, record: Any, events: list[Any]) -> dict[str, Any]:
    """A follow-up's thread (chain of run ids) and the earlier artifacts it cites ({} for a run of its own)."""
    if not record.parent_run_id:
        return {}
    from .thread import cited_in_thread

    own = {}
    try:
        catalog = kernel.evidence.catalog
        own = {r.artifact_id: r for r in catalog.iter(record.run_id)}
    except Exception:  # noqa: BLE001 - the thread is shown without the run's report citations
        pass
    chain, cited = cited_in_thread(kernel, record, [e.model_dump() for e in events], own)
    return {"thread": chain, "thread_cited": list(cited)}


def _artifact_reader(kernel: Any) -> Any:
    """``artifact_id -> record or None`` from the evidence catalog (None when the kernel keeps no evidence)."""
    try:
        catalog = kernel.evidence.catalog if kernel.evidence.enabled else None
    except Exception:  # noqa: BLE001 - the transcript is shown without the artifacts' provenance
        catalog = None
    return catalog.get if catalog is not None else None


def _event_lines(event: Any, full: bool, artifact: Any = None) -> list[str]:
    d = event.data
    kind = event.kind
    if kind == "message":
        message = d.get("message") or {}
        role = message.get("role", "?")
        lines = []
        content = message.get("content") or ""
        if content:
            shown = (
                content
                if full or role != "system"
                else content.splitlines()[0]
                + f" ... ({len(content):,} characters; --full shows them)"
            )
            head = f"[{event.step}] {role}"
            if role == "tool":
                head += f" {message.get('name')} ({message.get('tool_call_id')})"
            lines.append(f"{head}: " + _indent(shown if full else _clip(shown, 1200)))
        for call in message.get("tool_calls") or []:
            args = call.get("arguments")
            args_text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            lines.append(
                f"[{event.step}] assistant calls {call.get('name')} ({call.get('id')}): "
                + _indent(args_text if full else _clip(args_text, 600))
            )
        usage = message.get("usage")
        if usage:
            lines.append(
                f"[{event.step}] tokens {usage.get('prompt_tokens', 0):,}+{usage.get('completion_tokens', 0):,}"
            )
        return lines
    if kind == "tool_finished":
        from assay.plugins.agent.cli_ask import outcome_line

        meta = d.get("metadata") or {}
        report = (
            f" · report {meta['report_status']}: {meta.get('report_counters', '')}"
            if meta.get("report_status")
            else ""
        )
        lines = [
            f"[{event.step}] {d.get('tool')} -> {outcome_line(d, report_status=not report)}{report}"
        ]
        for artifact_id in (d.get("artifact_ids") or []) if artifact is not None else []:
            # SQL evidence: what ran (written from the checked statement) beside what was submitted (the call)
            prov = getattr(artifact(artifact_id), "provenance", None) or {}
            if prov.get("submitted_sql") is not None and prov.get("sql"):
                text = str(prov["sql"])
                lines.append(
                    f"[{event.step}] executed SQL ({artifact_id}): "
                    + _indent(text if full else _clip(text, 600))
                )
        return lines
    if kind == "compaction":
        ids = ", ".join(d.get("artifact_ids") or []) or "none"
        return [
            (
                f"[{event.step}] compaction: {len(d.get('call_ids') or [])} tool result(s) stubbed, "
                f"~{d.get('tokens_before'):,} -> ~{d.get('tokens_after'):,} tokens; artifacts {ids}"
            )
        ]
    if kind == "limit":
        return [f"[{event.step}] limit reached: {d.get('limit')} = {d.get('value')}"]
    if kind == "figure_check":
        from assay.plugins.agent.cli_ask import unsupported_line

        found = (
            unsupported_line(d)
            or f"every figure found in the evidence ({d.get('checked', 0)} checked)"
        )
        asked = "; the model was asked to correct or cite them" if d.get("correction_asked") else ""
        return [f"[{event.step}] figure check: {found}{asked}"]
    if kind == "run_finished":
        summary = d.get("summary") or {}
        return [f"finished: {summary.get('status')} ({summary.get('status_reason', '')})"]
    if kind == "run_started":
        return [f"started: model {d.get('model') or '-'}"]
    return []


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width] + f" ... ({len(text):,} characters)"


def _indent(text: str) -> str:
    return text.replace("\n", "\n" + " " * 14)


@runs_group.command("export")
@click.argument("run_id")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="The zip to write (default: RUN_ID.zip).",
)
@click.pass_context
def export_cmd(ctx: click.Context, run_id: str, output: str | None) -> None:
    """Write RUN_ID as a zip: transcript, artifacts and a manifest (check it with `assay artifacts verify ZIP`)."""
    from .export import export_run

    report = export_run(_kernel(ctx), run_id, output or f"{run_id}.zip")
    click.echo(f"wrote {report.path}: run {run_id}, {report.artifacts} artifact(s)", err=True)
    sys.stdout.flush()


@runs_group.command("prune")
@click.option(
    "--older-than",
    "days",
    type=click.FloatRange(min=0),
    default=None,
    help="Days to keep runs for [default: ASSAY_RUN_RETENTION_DAYS].",
)
@click.option(
    "--apply", is_flag=True, help="Remove them; without it nothing is removed (a dry run)."
)
@click.option(
    "--json", "as_json", is_flag=True, help="What was (or would be) removed, as one JSON object."
)
@click.pass_context
def prune_cmd(ctx: click.Context, days: float | None, apply: bool, as_json: bool) -> None:
    """Remove runs older than the retention: agent runs, and tool calls' and MCP conversations' runs.

    A dry run unless --apply: it lists what would go. A run goes with its events and
    artifact records, then the content no record refers to any more; an artifact that a
    kept run cites (a newer report's source) is kept. A run still running is never pruned.
    """
    from .retention import prune, retention_days

    kernel = _kernel(ctx)
    report = prune(
        kernel.runs, kernel.evidence.catalog, retention_days(days, kernel.settings), apply=apply
    )
    if as_json:
        click.echo(
            json.dumps(
                {
                    "applied": report.applied,
                    "cutoff": report.cutoff,
                    "agent_runs": report.agent_runs,
                    "evidence_runs": report.evidence_runs,
                    "artifacts_removed": report.artifacts_removed,
                    "artifacts_kept_cited": report.artifacts_kept_cited,
                    "content_removed": report.content_removed,
                }
            )
        )
        return
    from .records import iso

    verb = "removed" if report.applied else "would remove"
    click.echo(
        f"runs started before {iso(report.cutoff)}: {verb} {len(report.agent_runs)} agent run(s), "
        f"{len(report.evidence_runs)} tool-call/MCP run(s), {report.artifacts_removed} artifact record(s)"
        + (f", {report.content_removed} content file(s)" if report.applied else "")
    )
    for run_id in report.agent_runs:
        click.echo(f"  agent run {run_id}")
    for run_id in report.evidence_runs:
        click.echo(f"  evidence run {run_id}")
    for artifact_id, by in report.artifacts_kept_cited.items():
        click.echo(f"  kept {artifact_id}: cited by {', '.join(by)}")
    if not report.applied and (report.agent_runs or report.evidence_runs):
        click.echo("(dry run: pass --apply to remove them)")
