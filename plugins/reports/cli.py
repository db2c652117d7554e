"""``assay report show|render``: open a run's saved report, or render its document in another format.

A run's saved report is the last ``report`` artifact of the run with
``text/html`` content (``render_report`` keeps one beside the Markdown). Both
commands read it back hash-verified; ``render`` re-reads every citation of
the kept document from the evidence store.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from assay import AssayError
from assay.kernel.evidence import open_verified_content

REPORT_NOT_FOUND = "REPORT_NOT_FOUND"
FORMATS = ("html", "json", "pdf", "markdown")


def saved_reports(catalog: Any, run_id: str, media_type: str | None = None) -> list[Any]:
    """The run's report artifacts (oldest first), of ``media_type`` when given."""
    catalog.import_shared(run_id)
    return [
        r
        for r in catalog.iter(run_id)
        if r.kind == "report"
        and r.status == "succeeded"
        and (media_type is None or r.media_type == media_type)
    ]


def latest_document(catalog: Any, run_id: str) -> dict[str, Any]:
    """The document of the run's last report (kept in its provenance)."""
    kept = [
        r for r in saved_reports(catalog, run_id) if isinstance(r.provenance.get("document"), dict)
    ]
    if not kept:
        raise AssayError(
            REPORT_NOT_FOUND,
            f"run {run_id} has no saved report",
            "List the run's artifacts with `assay artifacts ls --run RUN_ID`; a report is "
            "saved when the agent calls render_report.",
        )
    return kept[-1].provenance["document"]


def export_saved_html(kernel: Any, run_id: str) -> Path:
    """A verified copy of the run's last HTML report at ``$ASSAY_HOME/reports/RUN_ID/report.html``."""
    catalog = kernel.evidence.catalog
    pages = saved_reports(catalog, run_id, "text/html")
    target = Path(kernel.settings.home) / "reports" / _safe(run_id) / "report.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    if pages:
        _, content = open_verified_content(catalog, pages[-1].artifact_id)
        data = content if isinstance(content, bytes) else content.read_bytes()
    else:  # an older run kept only Markdown: render its kept document now
        try:
            document = latest_document(catalog, run_id)
        except AssayError:
            raise AssayError(
                REPORT_NOT_FOUND,
                f"run {run_id} has no saved report",
                "A report is saved when the agent calls render_report; list the run's "
                "artifacts with `assay artifacts ls --run RUN_ID`.",
            ) from None
        data = kernel.renderer("html").render(document, catalog)
    target.write_bytes(data)
    return target


def _safe(run_id: str) -> str:
    if not run_id or not all(c.isalnum() or c in "-_" for c in run_id):
        raise AssayError(
            REPORT_NOT_FOUND, f"{run_id!r} is not a run id", "Run ids look like run_0123abcd..."
        )
    return run_id


def browser_available() -> bool:
    """A graphical browser can be opened: a display on Linux (``BROWSER`` counts too), always elsewhere."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def add_report_commands(cli: Any, kernel: Any) -> None:
    @cli.group("report")
    def report() -> None:
        """Open a run's saved report, or render it in another format."""

    @report.command("show")
    @click.argument("run_id")
    @click.option("--no-browser", is_flag=True, help="Only print the report's path.")
    def show_cmd(run_id: str, no_browser: bool) -> None:
        """Open RUN_ID's saved HTML report in a browser (its path is printed either way)."""
        path = export_saved_html(kernel, run_id)
        click.echo(str(path))
        if no_browser or not browser_available():
            return
        import webbrowser

        if not webbrowser.open(path.as_uri()):
            click.echo("no browser could be opened; open the path above", err=True)

    @report.command("render")
    @click.argument("run_id")
    @click.option("--format", "fmt", type=click.Choice(FORMATS), default="html", show_default=True)
    @click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False),
        default=None,
        help="Write here (default: stdout; a PDF needs a file or a pipe).",
    )
    def render_cmd(run_id: str, fmt: str, output: str | None) -> None:
        """Render RUN_ID's last report document as FORMAT, every citation read again from the evidence."""
        catalog = kernel.evidence.catalog
        data = kernel.renderer(fmt).render(latest_document(catalog, _safe(run_id)), catalog)
        if output:
            Path(output).write_bytes(data)
            click.echo(output)
        elif fmt == "pdf" and sys.stdout.isatty():
            raise click.UsageError("a PDF is binary: give -o FILE or pipe the output")
        else:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
