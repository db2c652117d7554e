"""``assay reports verify REPORT`` and ``assay reports status RUN``."""

from __future__ import annotations

import json
import sys
from typing import Any

import click


def add_commands(cli: Any, kernel: Any) -> None:
    @cli.group("reports")
    def reports() -> None:
        """Verify stored reports; show a run's report state and counters."""

    @reports.command("verify")
    @click.argument("report_id")
    def verify_cmd(report_id: str) -> None:
        """Re-read every cited value of REPORT (hash-verified) and re-render it; exit 1 on any mismatch, or on a
        figure its prose states without a citation (a formal report)."""
        from .verify import verify_report

        catalog = kernel.evidence.catalog
        catalog.import_shared()
        result = verify_report(catalog, report_id)
        for problem in result.problems:
            click.echo(f"MISMATCH {problem}", err=True)
        for figure in result.unbound:
            click.echo(f"UNBOUND  {figure}", err=True)
        if not result.ok:
            click.echo(
                f"{report_id}: FAILED ({len(result.problems)} problem(s), {len(result.unbound)} figure(s) not "
                f"bound to evidence, {result.checked} citation(s) read)"
            )
            sys.exit(1)
        click.echo(
            f"{report_id}: OK ({result.checked} citation(s) re-read, re-rendered identically)"
        )

    @reports.command("status")
    @click.argument("run_id")
    @click.option("--json", "as_json", is_flag=True, help="The whole checkpoint as JSON.")
    def status_cmd(run_id: str, as_json: bool) -> None:
        """The report state of RUN_ID: status, requests, failures by phase, counters."""
        from .settings import ReportAgentSettings
        from .state import ReportStateStore

        state = ReportStateStore(kernel.evidence.catalog.db).load(run_id)
        if state is None:
            click.echo(f"no report state for run {run_id}", err=True)
            sys.exit(1)
        if as_json:
            click.echo(state.model_dump_json(indent=2))
            return
        settings = kernel.settings.section("report", ReportAgentSettings)
        click.echo(
            f"run {run_id}: {state.status}" + (f" ({state.stop_code})" if state.stop_code else "")
        )
        if state.report_artifact_id:
            click.echo(
                f"report: {state.report_artifact_id} ({'formal' if state.formal else 'not formal'})"
            )
        for r in state.requests:
            click.echo(
                f"request {r.request_id} {r.name!r}: {r.status}, attempts {r.attempts}/{state.max_attempts}"
                + (f", result {r.result_artifact_id}" if r.result_artifact_id else "")
            )
        for w in state.warnings:
            click.echo(f"warning: {w}")
        click.echo(
            "counters: "
            + json.dumps(
                state.counters(settings.max_steps, settings.max_tool_calls), sort_keys=True
            )
        )
