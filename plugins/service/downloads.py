"""The API's download responses: a run's report in a format asked for (:func:`report_response`), a run
as a verifiable zip (:func:`export_response`), an artifact's bytes or a verified selection of them
(:func:`artifact_response`), every stored byte read through its SHA-256 check; and the Chromium the
PDF renderer keeps, closed when the app stops (:func:`close_pdf_browser`).

Each reads the catalog and the store: call it on a thread (a report on the report pool).
"""

from __future__ import annotations

import base64
import sys
import tempfile
from pathlib import Path
from typing import Any

from fastapi.responses import FileResponse, JSONResponse, Response

from assay.kernel import evidence as ev
from assay.kernel.errors import AssayError
from assay.plugins.runs.export import export_run

from .api_errors import SERVICE_REPORT_FORMAT_UNAVAILABLE, SERVICE_REPORT_NOT_FOUND, error
from .settings import ServiceSettings

MEDIA = {
    "md": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "json": "application/json",
    "pdf": "application/pdf",
}
STORED = {
    "md": "text/markdown",
    "html": "text/html",
}  # report formats kept as artifacts by render_report
RENDERERS = {"md": "markdown", "html": "html", "json": "json", "pdf": "pdf"}


def run_reports(kernel: Any, run_id: str) -> list[Any] | JSONResponse:
    """The run's succeeded report records, oldest first, or the 404 that says it has none."""
    records = [
        r
        for r in kernel.evidence.catalog.iter(run_id)
        if r.kind == "report" and r.status == "succeeded"
    ]
    if not records:
        return error(
            404,
            SERVICE_REPORT_NOT_FOUND,
            f"run {run_id!r} has no report",
            "A run has a report when its agent wrote one (generate_report / render_report).",
        )
    return records


def report_response(kernel: Any, run_id: str, fmt: str) -> Response:
    """The run's last report: the saved artifact of that format (hash-verified), else rendered again
    from the report's document by the registered renderer."""
    records = run_reports(kernel, run_id)
    if isinstance(records, JSONResponse):
        return records
    saved = [r for r in records if r.media_type == STORED.get(fmt)]
    if saved:
        record = saved[-1]
        _, content = ev.open_verified_content(kernel.evidence.catalog, record.artifact_id)
        data = content.read_bytes() if isinstance(content, Path) else content
        return Response(data, media_type=MEDIA[fmt], headers={"ETag": f'"{record.sha256}"'})
    document = next(
        (r.provenance["document"] for r in reversed(records) if r.provenance.get("document")), None
    )
    if document is None:
        return error(
            404,
            SERVICE_REPORT_NOT_FOUND,
            f"the report keeps no document to render as {fmt}",
            "Ask for the format it was saved in (md).",
        )
    try:
        renderer = kernel.renderer(RENDERERS[fmt])
    except AssayError:
        known = ", ".join(sorted(kernel.registry("report_renderers"))) or "none"
        return error(
            404,
            SERVICE_REPORT_FORMAT_UNAVAILABLE,
            f"no {fmt} renderer is installed here",
            f"Renderers: {known}.",
        )
    data = renderer.render(document, kernel.evidence.catalog)
    return Response(data, media_type=MEDIA[fmt])


def export_response(kernel: Any, run_id: str) -> Response:
    """The run as the zip ``assay artifacts verify`` checks, sent as an attachment."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{run_id}.zip"
        export_run(kernel, run_id, path)
        data = path.read_bytes()
    return Response(
        data,
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{run_id}.zip"'},
    )


def artifact_response(
    kernel: Any,
    artifact_id: str,
    selectors: dict[str, Any],
    settings: ServiceSettings,
    if_none_match: str | None,
) -> Response:
    """The artifact's verified selection as JSON (``selectors``), else its bytes with their SHA-256 as
    ETag and digests (304 for a matching ``If-None-Match``, once the content still hashes to it)."""
    catalog = kernel.evidence.catalog
    if selectors:
        selected = ev.read_artifact_result(
            catalog, artifact_id, selectors, max_rows=settings.max_read_rows
        )
        return JSONResponse(
            selected.model_dump(mode="json"), headers={"X-Assay-Artifact-SHA256": selected.sha256}
        )
    record = ev.get_record(catalog, artifact_id)
    etag = f'"{record.sha256}"'
    digest = "sha-256=:" + base64.b64encode(bytes.fromhex(record.sha256)).decode() + ":"
    headers = {
        "ETag": etag,
        "Repr-Digest": digest,
        "Digest": "SHA-256=" + digest[9:-1],
        "X-Assay-Artifact-SHA256": record.sha256,
    }
    if if_none_match and etag in [t.strip() for t in if_none_match.split(",")]:
        ev.verify(catalog, record)  # 304 only for content that still hashes to its record
        return Response(status_code=304, headers=headers)
    record, content = ev.open_verified_content(catalog, artifact_id)
    inline = record.media_type.startswith("image/")  # the page shows charts inline
    headers["Content-Disposition"] = "inline" if inline else f'attachment; filename="{artifact_id}"'
    if isinstance(
        content, Path
    ):  # streamed from the store's file, verified above: memory stays flat
        return FileResponse(content, media_type=record.media_type, headers=headers)
    return Response(content, media_type=record.media_type, headers=headers)


def close_pdf_browser() -> None:
    """Close the Chromium the PDF renderer kept, if a PDF was rendered."""
    browser = sys.modules.get(
        "assay.plugins.reports.browser"
    )  # imported only if a PDF was rendered
    if browser is not None:
        browser.close_shared()
