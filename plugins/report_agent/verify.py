"""``assay reports verify``: re-read every number of a stored report and re-render it.

A report artifact keeps its document and one citation per shown value
(artifact id, selector, SHA-256). Verification checks the report's own bytes,
that each cited artifact still has the recorded SHA-256 and reads back
(hash-verified) through its selector, and that rendering the document again
with the renderer that wrote it (Markdown with its provenance table, or the
HTML page kept beside it) gives the stored bytes exactly. Any difference is a
mismatch. A formal report (and any report outside the pipeline, such as
``render_report``'s) also fails when its prose states a figure that is not a
bound citation (:mod:`assay.plugins.reports.figures`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.kernel.evidence import (
    get_record,
    open_verified_content,
    read_artifact_result,
    resolve_catalog,
)
from assay.kernel.reports import ReportDocument
from assay.plugins.reports.html import HtmlRenderer
from assay.plugins.reports.markdown import MarkdownRenderer
from assay.plugins.reports.resolve import resolve_report

from .assemble import PhaseError, render
from .errors import REPORT_NOT_FOUND, report_error


@dataclass
class Verification:
    report_id: str
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    unbound: list[str] = field(
        default_factory=list
    )  # figures in a formal report's prose that are not citations

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unbound


def verify_report(reader: Any, report_id: str) -> Verification:
    catalog = resolve_catalog(reader)
    record = catalog.get(report_id)
    if record is None or record.kind != "report" or "document" not in record.provenance:
        raise report_error(
            REPORT_NOT_FOUND,
            f"{report_id!r} is not a stored report",
            "Give the artifact id generate_report returned (kind report).",
        )
    out = Verification(report_id)
    try:
        _, content = open_verified_content(catalog, report_id)
        stored = content if isinstance(content, bytes) else open(content, "rb").read()  # noqa: SIM115
    except Exception as exc:  # noqa: BLE001 - every failure is a finding
        out.problems.append(f"the report itself: {getattr(exc, 'code', type(exc).__name__)}: {exc}")
        return out
    doc = ReportDocument.coerce(record.provenance["document"])
    for n, c in enumerate(record.provenance.get("citations", []), 1):
        if c.get("unavailable"):
            continue  # a gap: shown as missing, nothing to re-read
        out.checked += 1
        aid = c["artifact_id"]
        try:
            cited = get_record(catalog, aid)
            if cited.sha256 != c.get("sha256"):
                out.problems.append(
                    f"#{n} {aid}: SHA-256 {cited.sha256[:12]} is not the cited {str(c.get('sha256'))[:12]}"
                )
                continue
            selector = c.get("selector") or {}
            if "path" in selector:
                read_artifact_result(catalog, aid, {"path": selector["path"]})
            else:  # a table, chart or image: its content re-hashed here; its selection by the re-render below
                open_verified_content(catalog, aid)
        except Exception as exc:  # noqa: BLE001
            out.problems.append(
                f"#{n} {aid}: {getattr(exc, 'code', type(exc).__name__)}: {getattr(exc, 'message', exc)}"
            )
    if out.problems:
        return out

    renderer = record.provenance.get("renderer") or "markdown"
    try:
        if renderer == "markdown" and record.provenance.get("provenance_table"):

            class _Run:  # render reads through the catalog when the run has no sink
                artifacts = None

            again, _ = render(doc, catalog, _Run())
        elif renderer == "markdown":
            again, _ = MarkdownRenderer().render_cited(doc, catalog)
        elif renderer == "html":
            again, _ = HtmlRenderer().render_cited(doc, catalog)
        else:
            out.problems.append(f"re-render: no way to re-render a {renderer!r} report here")
            return out
    except PhaseError as exc:
        out.problems.append(f"re-render: {exc.code}: {exc.error.message}")
        return out
    except Exception as exc:  # noqa: BLE001 - a renderer's failure is a finding
        out.problems.append(
            f"re-render: {getattr(exc, 'code', type(exc).__name__)}: {getattr(exc, 'message', exc)}"
        )
        return out
    if again != stored:
        out.problems.append("re-rendering the document does not give the stored report")
    if record.provenance.get("formal", True):
        for figure in resolve_report(doc, catalog).unbound:
            out.unbound.append(
                f"figure {figure.describe()} is not a bound citation: it was not read from the "
                "evidence (a formal report states every figure as a citation)"
            )
    return out
