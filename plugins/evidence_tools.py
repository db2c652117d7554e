"""Model-facing evidence tools and the ``assay artifacts`` commands.

Tools (in :mod:`assay.plugins.evidence_read_tools`, imported on first use):
``read_artifact_result`` (a verified, bounded selection of one artifact),
``report_evidence_manifest`` (what the run captured) and
``artifact_details`` (full records of up to 12 artifacts).

Commands: ``assay artifacts ls|show|verify|export|gc``; each imports the
evidence store when it runs, so building the command line stays cheap.

The tools stay in their own module: importing them loads the evidence store
(~30 ms measured), which kernel start-up must not.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from assay import Lazy, hookimpl

_TOOLS = "assay.plugins.evidence_read_tools"


@hookimpl
def register_tools(register):
    register(Lazy(f"{_TOOLS}:read_artifact_result_tool", name="read_artifact_result"))
    register(f"{_TOOLS}:report_evidence_manifest")
    register(f"{_TOOLS}:artifact_details")


def _parse_select(values: tuple[str, ...]) -> dict[str, Any] | None:
    if not values:
        return None
    out: dict[str, Any] = {}
    for value in values:
        value = value.strip()
        if value.startswith("{"):
            out.update(json.loads(value))
            continue
        key, sep, rest = value.partition("=")
        if not sep or key not in ("field", "rows", "path"):
            from assay.kernel.evidence import ArtifactSelectorInvalid

            raise ArtifactSelectorInvalid(
                f"--select {value!r}: use field=NAME, rows=A:B, path=216.name or a JSON object"
            )
        out[key] = rest
    return out


@hookimpl
def register_commands(cli, kernel):
    """Add the ``artifacts`` group to ``cli`` for ``kernel``."""
    import click

    @cli.group("artifacts")
    def artifacts() -> None:
        """Inspect, verify, export and clean up captured evidence."""

    @artifacts.command("ls")
    @click.option("--run", "run_id", default=None, help="Only this run's artifacts.")
    @click.option("--json", "as_json", is_flag=True, help="Print records as JSON lines.")
    def ls_cmd(run_id: str | None, as_json: bool) -> None:
        """List artifacts (oldest first)."""
        from assay.kernel import evidence as ev

        catalog = kernel.evidence.catalog
        catalog.import_shared(run_id)  # records other workers kept in a shared store
        for r in catalog.iter(run_id):
            if as_json:
                click.echo(
                    json.dumps(
                        ev.manifest_entry(r)
                        | {
                            "run_id": r.run_id,
                            "sha256": r.sha256,
                            "created_at": r.created_at.isoformat(),
                        }
                    )
                )
            else:
                rows = "-" if r.row_count is None else str(r.row_count)
                flag = "" if r.complete else f" [{r.incomplete_note()}]"
                click.echo(
                    f"{r.artifact_id}  {r.run_id}  {r.kind:<6} {r.status:<9} rows={rows:<8} "
                    f"{r.byte_size:>10}B  {r.summary(60)}{flag}"
                )

    @artifacts.command("show")
    @click.argument("artifact_id")
    @click.option(
        "--select",
        "select",
        multiple=True,
        help="field=NAME, rows=A:B, path=216.name, or a JSON object. Repeatable.",
    )
    @click.option("--max-rows", default=100, show_default=True)
    @click.option("--json", "as_json", is_flag=True, help="Print the record and selection as JSON.")
    def show_cmd(artifact_id: str, select: tuple[str, ...], max_rows: int, as_json: bool) -> None:
        """Show a record and a verified selection of its content."""
        from assay.kernel import evidence as ev

        catalog = kernel.evidence.catalog
        record = ev.get_record(catalog, artifact_id)
        selected = ev.read_artifact_result(
            catalog, artifact_id, _parse_select(select), max_rows=max_rows
        )
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "record": record.model_dump(mode="json"),
                        "selection": selected.model_dump(mode="json"),
                    },
                    indent=2,
                )
            )
            return
        click.echo(
            f"{record.artifact_id} kind={record.kind} status={record.status} run={record.run_id} "
            f"rows={'-' if record.row_count is None else record.row_count} bytes={record.byte_size} "
            f"complete={record.complete}"
        )
        if not record.complete:
            click.echo(record.incomplete_note())
        click.echo(f"sha256={record.sha256}")
        summary = record.summary(400)
        if summary:
            click.echo(f"source: {summary}")
        click.echo(selected.text())

    @artifacts.command("verify")
    @click.argument("bundle", required=False, type=click.Path(exists=True, dir_okay=False))
    def verify_cmd(bundle: str | None) -> None:
        """Re-hash every artifact; list missing or corrupt ones (exit 1 if any).

        With BUNDLE (a zip from `assay runs export`), check that instead: every
        file against its manifest, every artifact against its record, and every
        artifact the run cites present.
        """
        from assay.kernel.evidence.maintenance import verify_all

        if bundle is not None:
            from assay.plugins.runs.export import verify_bundle

            checked = verify_bundle(bundle)
            for problem in checked.problems:
                click.echo(problem)
            click.echo(
                f"bundle {bundle} (run {checked.run_id or '?'}): {checked.checked} files checked, "
                f"{len(checked.problems)} problem(s)"
            )
            if not checked.healthy:
                sys.exit(1)
            return

        report = verify_all(kernel.evidence.catalog)
        for artifact_id in report.missing:
            click.echo(f"MISSING  {artifact_id}")
        for artifact_id in report.corrupt:
            click.echo(f"CORRUPT  {artifact_id}")
        click.echo(
            f"checked {report.checked}: {report.ok} ok, {len(report.missing)} missing, "
            f"{len(report.corrupt)} corrupt"
        )
        if not report.healthy:
            sys.exit(1)

    @artifacts.command("export")
    @click.argument("artifact_id")
    @click.option(
        "--format", "fmt", type=click.Choice(["csv", "jsonl"]), default="jsonl", show_default=True
    )
    @click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False),
        default=None,
        help="File (default stdout).",
    )
    def export_cmd(artifact_id: str, fmt: str, output: str | None) -> None:
        """Write an artifact's verified content as CSV or JSON Lines."""
        from assay.kernel.evidence import get_record
        from assay.kernel.evidence.maintenance import export

        catalog = kernel.evidence.catalog
        note = get_record(catalog, artifact_id).incomplete_note()
        if note:  # the rows written are the kept ones, not the whole result
            click.echo(note, err=True)
        if output:
            with open(output, "wb") as fh:
                n = export(catalog, artifact_id, fmt, fh)
            click.echo(f"wrote {n} rows to {output}", err=True)
        else:
            export(catalog, artifact_id, fmt, sys.stdout.buffer)
            sys.stdout.flush()

    @artifacts.command("gc")
    @click.option(
        "--grace",
        default=3600.0,
        show_default=True,
        help="Keep unreferenced content younger than this (s).",
    )
    @click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
    def gc_cmd(grace: float, dry_run: bool) -> None:
        """Remove content that no record references, and stale staging files."""
        from assay.kernel.evidence.maintenance import collect_garbage

        report = collect_garbage(kernel.evidence.catalog, grace_s=grace, dry_run=dry_run)
        verb = "would remove" if dry_run else "removed"
        for sha in report.removed:
            click.echo(f"{verb} {sha}")
        click.echo(
            f"{verb} {len(report.removed)} content objects, {report.staging_removed} staging files; "
            f"kept {report.kept_recent} younger than {grace:g}s"
        )
