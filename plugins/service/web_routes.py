"""The endpoints the page needs beyond the run API: a whole artifact as CSV or Parquet, what an
artifact is, whether a run has a report and its verification, and the page's own static files (``/static/...``, open like the page itself).

Added to the API app by :func:`add_web_routes` (``server.build``); every lookup is scoped to the
token's (or the session's) owner like the rest of the API and answers 404 otherwise.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response

from .api_errors import (
    SERVICE_REPORT_FORMAT_UNAVAILABLE,
    SERVICE_ROUTE_NOT_FOUND,
    artifact_missing,
    error,
    run_missing,
)
from .api_models import ErrorBody
from .downloads import run_reports

STATIC = Path(__file__).with_name("web") / "static"
STATIC_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Not found (or not the token owner's)."}
}


def add_web_routes(app: FastAPI, kernel: Any, tokens: Any) -> None:
    from .tool_calls import visible_artifact

    def who(request: Request) -> str:
        return request.scope.get("assay.owner") or ""

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Any:
        path = STATIC / name
        if (
            "/" in name
            or name.startswith(".")
            or path.suffix not in STATIC_TYPES
            or not path.is_file()
        ):
            return error(404, SERVICE_ROUTE_NOT_FOUND, f"no static file {name!r}", "")
        return FileResponse(
            path, media_type=STATIC_TYPES[path.suffix], headers={"Cache-Control": "no-cache"}
        )

    @app.get(
        "/artifacts/{artifact_id}/download",
        tags=["artifacts"],
        response_class=Response,
        responses={
            200: {
                "description": "The whole artifact.",
                "content": {"text/csv": {}, "application/vnd.apache.parquet": {}},
            },
            400: {"model": ErrorBody, "description": "Not a tabular or Python artifact."},
            404: {
                "model": ErrorBody,
                "description": "Not found (or not the token owner's); "
                "Parquet without pyarrow on the server.",
            },
            409: {"model": ErrorBody, "description": "Its content is missing or altered."},
        },
    )
    async def download(
        artifact_id: str, request: Request, format: str = Query("csv", pattern="^(csv|parquet)$")
    ) -> Any:
        """The whole artifact (every row kept, not a preview) as CSV or Parquet, hash-verified first."""
        if not await asyncio.to_thread(visible_artifact, kernel, tokens, who(request), artifact_id):
            return artifact_missing(artifact_id)
        from assay.kernel import evidence as ev

        if format == "parquet":
            try:
                import pyarrow  # noqa: F401 - the analysis extra, not the serve one
            except ImportError:
                return error(
                    404,
                    "SERVICE_DEPENDENCY_MISSING",
                    "Parquet needs pyarrow, which this server lacks",
                    "Download CSV, or install 'assay[analysis]' on the server.",
                )
        try:
            data = await asyncio.to_thread(
                _csv if format == "csv" else _parquet, kernel.evidence.catalog, artifact_id
            )
        except ev.ArtifactError as exc:
            return error(
                409 if exc.code in ("ARTIFACT_INTEGRITY_FAILED", "ARTIFACT_FILE_MISSING") else 400,
                exc.code,
                exc.message,
                exc.hint,
            )
        media = "text/csv; charset=utf-8" if format == "csv" else "application/vnd.apache.parquet"
        return Response(
            data,
            media_type=media,
            headers={"Content-Disposition": f'attachment; filename="{artifact_id}.{format}"'},
        )

    @app.get("/artifacts/{artifact_id}/meta", responses=NOT_FOUND, tags=["artifacts"])
    async def meta(artifact_id: str, request: Request) -> Any:
        """What the page needs to show an artifact: kind, status, media type, rows and columns."""

        def read() -> Any:
            if not visible_artifact(kernel, tokens, who(request), artifact_id):
                return None
            return kernel.evidence.catalog.get(artifact_id)

        record = await asyncio.to_thread(read)
        if record is None:
            return artifact_missing(artifact_id)
        return {
            "artifact_id": record.artifact_id,
            "kind": record.kind,
            "status": record.status,
            "media_type": record.media_type,
            "row_count": record.row_count,
            "columns": record.columns,
            "tabular": record.is_tabular,
            "byte_size": record.byte_size,
        }

    @app.get("/runs/{run_id}/report/info", responses=NOT_FOUND, tags=["reports"])
    async def report_info(run_id: str, request: Request) -> Any:
        """Whether the run has a report (so the page asks for one only when there is one)."""

        def read() -> Any:
            if tokens.owner_of(run_id) != who(request):
                return None
            return any(
                r.kind == "report" and r.status == "succeeded"
                for r in kernel.evidence.catalog.iter(run_id)
            )

        found = await asyncio.to_thread(read)
        if found is None:
            return run_missing(run_id)
        return {"run_id": run_id, "has_report": found}

    @app.get("/runs/{run_id}/report/verify", responses=NOT_FOUND, tags=["reports"])
    async def verify(run_id: str, request: Request) -> Any:
        """``assay reports verify`` of the run's last report: every citation re-read, the page re-rendered."""
        if not await asyncio.to_thread(lambda: tokens.owner_of(run_id) == who(request)):
            return run_missing(run_id)
        return await asyncio.to_thread(_verify, kernel, run_id)


def _csv(catalog: Any, artifact_id: str) -> bytes:
    from assay.kernel.evidence.maintenance import export

    out = io.BytesIO()
    export(catalog, artifact_id, "csv", out)
    return out.getvalue()


def _parquet(catalog: Any, artifact_id: str) -> bytes:
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    # the CSV export's rows, typed again column by column (pyarrow infers each column's type)
    text = io.StringIO(_csv(catalog, artifact_id).decode("utf-8"))
    reader = csv.reader(text)
    columns = next(reader, [])
    rows = list(reader)
    values = [
        [_typed(row[i]) if i < len(row) else None for row in rows] for i in range(len(columns))
    ]
    arrays = []
    for column in values:
        try:
            arrays.append(pa.array(column))
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed types: kept as text
            arrays.append(pa.array([None if v is None else str(v) for v in column]))
    out = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(arrays, names=columns), out)
    return out.getvalue()


def _typed(cell: str) -> Any:
    if cell == "":
        return None
    for kind in (int, float):
        try:
            return kind(cell)
        except ValueError:
            pass
    return cell


def _verify(kernel: Any, run_id: str) -> Any:
    reports = run_reports(kernel, run_id)
    if isinstance(reports, JSONResponse):
        return reports
    try:
        from assay.plugins.report_agent.verify import verify_report
    except ImportError:
        return error(
            404,
            SERVICE_REPORT_FORMAT_UNAVAILABLE,
            "report verification is not installed here",
            "Install the report_agent plugin.",
        )
    record = next((r for r in reversed(reports) if "document" in r.provenance), reports[-1])
    try:
        found = verify_report(kernel.evidence.catalog, record.artifact_id)
    except Exception as exc:  # noqa: BLE001 - a report it cannot read is a finding, told as such
        return JSONResponse(
            {
                "report_id": record.artifact_id,
                "ok": False,
                "checked": 0,
                "problems": [f"{getattr(exc, 'code', type(exc).__name__)}: {exc}"],
                "unbound": [],
            }
        )
    return JSONResponse(
        json.loads(
            json.dumps(
                {
                    "report_id": found.report_id,
                    "ok": found.ok,
                    "checked": found.checked,
                    "problems": found.problems,
                    "unbound": found.unbound,
                },
                default=str,
            )
        )
    )
