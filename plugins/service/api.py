"""The HTTP API of ``assay serve`` (FastAPI): runs, their events, reports, artifacts, tool calls.

FastAPI, because the API's request and response bodies are pydantic models
already, and it makes the OpenAPI document (``/openapi.json``) the tests hold
the server to; it sits on Starlette, which the MCP SDK uses too.
Authentication is the :class:`~.auth.BearerAuth` wrapper around the whole app
(only ``/health`` and the page's static files are open); every run and
artifact lookup is scoped to the token's owner and answers 404 otherwise.

Here: :func:`create_app` and its routes. The error shape is :mod:`.api_errors`; the report, export
and artifact downloads are :mod:`.downloads`; the event stream's response :mod:`.event_stream`.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Header, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse

from assay import __version__
from assay.kernel import evidence as ev
from assay.kernel.errors import AssayError

from .api_errors import (
    AUTH,
    BAD_BODY,
    LIMITED,
    NOT_FOUND,
    SERVICE_DATASOURCE_UNKNOWN,
    artifact_missing,
    error,
    install_error_handlers,
    install_openapi_error_bodies,
    run_missing,
)
from .api_models import (
    ArtifactSelection,
    Datasource,
    ErrorBody,
    Health,
    Options,
    RunCreate,
    RunList,
    RunView,
    ToolCall,
    ToolCallResult,
)
from .downloads import MEDIA, artifact_response, close_pdf_browser, export_response, report_response
from .event_stream import SSE_EVENT, ReleasingStream, run_stream, while_token_active
from .limits import InFlight, ToolCallLimits
from .runner import RunManager, RunRequest
from .settings import ServiceSettings
from .sse import run_event
from .tool_calls import call_in_own_run, visible_artifact

WEB = Path(__file__).with_name("web")
PUBLIC = ("/health", "/", "/app.js", "/app.css", "/favicon.ico")


def owner(request: Request) -> str:
    return request.scope.get("assay.owner") or ""


def create_app(kernel: Any, settings: ServiceSettings, tokens: Any) -> FastAPI:
    manager: RunManager | None = None

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        nonlocal manager
        manager = RunManager(kernel, settings, tokens)
        manager.open_uploads = uploads.open if uploads is not None else None  # POST /runs files
        manager.reopen_uploads = (
            uploads.reopen if uploads is not None else None
        )  # a follow-up's: its parent's
        app.state.manager = manager
        try:
            yield
        finally:
            await manager.drain(settings.drain_s)
            report_pool.shutdown(wait=False, cancel_futures=True)
            await asyncio.to_thread(
                close_pdf_browser
            )  # the Chromium the report pool kept, if it started one
            if manager.remote is not None:
                manager.remote.close()
            await asyncio.to_thread(kernel.close)  # sandbox containers, pools, catalogs

    app = FastAPI(
        title="assay",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        description="Ask questions of configured datasources; read runs, reports and evidence. "
        "Every endpoint but /health needs 'Authorization: Bearer TOKEN'.",
    )
    install_openapi_error_bodies(app)
    install_error_handlers(app)

    streams = InFlight(
        settings.max_streams_per_token, "event streams", "ASSAY_SERVICE_MAX_STREAMS_PER_TOKEN"
    )
    reports = InFlight(
        settings.max_reports_per_token, "report renders", "ASSAY_SERVICE_MAX_REPORTS_PER_TOKEN"
    )
    report_pool = ThreadPoolExecutor(settings.report_workers, thread_name_prefix="assay-report")
    tool_call_limits = ToolCallLimits(settings)

    def mgr() -> RunManager:
        assert manager is not None, "the app's lifespan did not start"
        return manager

    async def seen(run_id: str, request: Request) -> bool:
        """Whether the run is the token owner's (the catalog is read on a thread, not on the event loop)."""
        return await asyncio.to_thread(mgr().visible, run_id, owner(request))

    # --- open ----------------------------------------------------------------

    @app.get("/health", response_model=Health, tags=["service"])
    async def health() -> Health:
        """Liveness (no token needed)."""
        return Health(ok=True, runs_live=len(mgr().live))

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(WEB / "index.html", media_type="text/html")

    @app.get("/app.js", include_in_schema=False)
    async def page_js() -> FileResponse:
        return FileResponse(WEB / "app.js", media_type="text/javascript")

    @app.get("/app.css", include_in_schema=False)
    async def page_css() -> FileResponse:
        return FileResponse(WEB / "app.css", media_type="text/css")

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return Response(
            status_code=204
        )  # no icon; a browser's automatic request is not an auth failure

    uploads: Any = None
    try:  # POST/GET/DELETE /files when the files plugin is installed (docs/files.md)
        from assay.plugins.files.routes import add_file_routes
    except ImportError:
        pass
    else:
        uploads = add_file_routes(app, kernel, owner, error)

    # --- runs --------------------------------------------------------------------

    @app.get("/options", response_model=Options, responses=AUTH, tags=["runs"])
    async def options() -> Options:
        """The datasources configured on the server and the models a run may name."""

        def listing() -> list[Datasource]:
            return [
                Datasource(name=n, description=getattr(r, "description", "") or "")
                for n, r in kernel.resources.items()
                if r.type == "database"
            ]

        sources = await asyncio.to_thread(listing)
        default = mgr()._model_spec(None)
        return Options(
            datasources=sources, models=[default, *settings.models], default_model=default
        )

    @app.post(
        "/runs",
        status_code=202,
        response_model=RunView,
        responses={
            **AUTH,
            **LIMITED,
            **BAD_BODY,
            503: {
                "model": ErrorBody,
                "description": "Shutting down, or the catalog or the broker "
                "does not answer (CATALOG_UNAVAILABLE, "
                "BROKER_UNAVAILABLE).",
            },
            404: {
                "model": ErrorBody,
                "description": "No such datasource or model on this server, or no such file of "
                "yours (FILE_NOT_FOUND).",
            },
            409: {
                "model": ErrorBody,
                "description": "An Idempotency-Key used for another request.",
            },
        },
        tags=["runs"],
    )
    async def create_run(
        body: RunCreate,
        request: Request,
        idempotency_key: str | None = Header(
            None,
            min_length=1,
            max_length=200,
            pattern=r"^[\x21-\x7e]+$",
            description=(
                "Any printable key of the client's: a POST repeated with the same key (by the same "
                "owner, within ASSAY_SERVICE_IDEMPOTENCY_TTL_S) answers the run the first one "
                "started, with 'Idempotent-Replayed: true', and starts none."
            ),
        ),
    ) -> Any:
        """Ask a question; the run goes on in the background (watch GET /runs/{id}/events)."""
        if body.datasource is not None:
            resource = kernel.resources.get(body.datasource)
            if resource is None or resource.type != "database":
                return error(
                    404,
                    SERVICE_DATASOURCE_UNKNOWN,
                    f"no datasource named {body.datasource!r}",
                    "GET /options lists the datasources this server offers.",
                )
        parent = None
        if body.parent_run_id is not None:
            if await seen(body.parent_run_id, request):
                parent = await asyncio.to_thread(kernel.runs.get, body.parent_run_id)
            if parent is None:  # another owner's run is the same 404 as an unknown one
                return run_missing(body.parent_run_id)
        files: list[str] = []
        inherits = False
        if parent and not body.files and uploads is not None:
            try:  # a follow-up given no files gets its parent's: still the owner's (one deleted: 404)
                inherits = await asyncio.to_thread(
                    uploads.inherited,
                    owner(request),
                    parent.run_id,
                    (parent.summary or {}).get("files"),
                )
            except AssayError as exc:  # the files plugin's FileError (FILE_NOT_FOUND)
                return error(404, exc.code, exc.message, exc.hint)
        if body.files:
            if uploads is None:
                return error(
                    400,
                    "FILE_READER_MISSING",
                    "this server does not open files as data",
                    "Install the files plugin: pip install 'assay[files]'.",
                )
            try:  # another owner's file id is the same 404 as an unknown one, as on /files/{id}
                files = await asyncio.to_thread(uploads.patterns, owner(request), body.files)
            except AssayError as exc:  # the files plugin's FileError (FILE_NOT_FOUND)
                code = exc.code
                return error(404 if code == "FILE_NOT_FOUND" else 400, code, exc.message, exc.hint)
        live = await mgr().start(
            owner(request),
            request.scope.get("assay.token_id", ""),
            RunRequest(
                question=body.question,
                datasource=body.datasource,
                model=body.model,
                max_steps=body.max_steps,
                max_wall_s=body.max_wall_s,
                parent_run_id=body.parent_run_id,
                files=files,
                inherits_files=inherits,
            ),
            key=idempotency_key,
        )
        if live.replayed:
            found = await asyncio.to_thread(view, live.run_id)
            found = found or RunView(run_id=live.run_id, status="queued", question=body.question)
            return JSONResponse(
                found.model_dump(mode="json"),
                status_code=202,
                headers={"Idempotent-Replayed": "true"},
            )
        return RunView(
            run_id=live.run_id, status="queued", question=body.question, started_at=time.time()
        )

    @app.get("/runs", response_model=RunList, responses=AUTH, tags=["runs"])
    async def list_runs(request: Request, limit: int = Query(50, ge=1, le=500)) -> RunList:
        """Your newest runs first (agent runs: a tool call's evidence run is not listed)."""
        who = owner(request)

        def newest() -> list[RunView]:
            # the owner's ids hold tool calls' evidence runs too, which have no run record: read on
            # past them until `limit` runs are found, so they never crowd the agent runs out
            shown: list[RunView] = []
            offset = 0
            while len(shown) < limit:
                ids = tokens.runs_of(who, max(limit, 100), offset)
                shown.extend(v for v in (view(i) for i in ids) if v is not None)
                if len(ids) < max(limit, 100):
                    break
                offset += len(ids)
            return shown[:limit]

        return RunList(runs=await asyncio.to_thread(newest))

    def view(run_id: str) -> RunView | None:
        """The run as the API shows it (reads the catalog: call it on a thread)."""
        live = mgr().live.get(run_id)
        record = kernel.runs.get(run_id)
        if record is None:
            if live is None:
                return None
            return RunView(run_id=run_id, status="queued")
        data = record.model_dump(include=set(RunView.model_fields))
        data["unsupported_figures"] = (record.summary.get("figures") or {}).get("unsupported") or []
        data["report_unbound_figures"] = (record.summary.get("report") or {}).get(
            "unbound_figures"
        ) or []
        if live is not None and live.state == "queued":
            data["status"] = "queued"
        elif live is None and record.status == "running" and mgr().remote is None:
            data["status"] = record.shown_status  # "interrupted" when its process is gone
            data["status_reason"] = record.shown_reason
            # (on workers, a run whose worker died is marked failed by a sweep once its lease lapses)
        if mgr().remote is not None:
            data["queued_s"] = mgr().remote.queued_s(run_id)
        if record.parent_run_id:
            from assay.plugins.runs.thread import thread_ids

            data["thread"] = thread_ids(kernel.runs, run_id)
        return RunView(**data)

    @app.get(
        "/runs/{run_id}", response_model=RunView, responses={**AUTH, **NOT_FOUND}, tags=["runs"]
    )
    async def get_run(run_id: str, request: Request) -> Any:
        """Status, answer and counters of one run."""
        found = await asyncio.to_thread(view, run_id) if await seen(run_id, request) else None
        return found if found is not None else run_missing(run_id)

    @app.delete(
        "/runs/{run_id}", response_model=RunView, responses={**AUTH, **NOT_FOUND}, tags=["runs"]
    )
    async def cancel_run(run_id: str, request: Request) -> Any:
        """Cancel a run: its SQL is cancelled on the server and its sandbox closed. An ended run is left as is."""
        if not await seen(run_id, request):
            return run_missing(run_id)
        if (
            mgr().remote is not None
        ):  # the run is on a worker: flagged in the catalog, its status awaited
            await mgr().remote.cancel(run_id)
            found = await asyncio.to_thread(view, run_id)
            return found if found is not None else run_missing(run_id)
        live = mgr().live.get(run_id)
        if mgr().cancel(run_id) and live is not None and live.task is not None:
            await asyncio.wait([live.task], timeout=30)
        found = await asyncio.to_thread(view, run_id)
        return found if found is not None else run_missing(run_id)

    @app.get(
        "/runs/{run_id}/events",
        responses={
            **AUTH,
            **NOT_FOUND,
            **LIMITED,
            200: {
                "content": {"text/event-stream": {"schema": SSE_EVENT}},
                "description": "Server-sent events: one per step (id = sequence, event = kind, data = JSON).",
            },
        },
        response_class=StreamingResponse,
        tags=["runs"],
    )
    async def run_events(run_id: str, request: Request) -> Any:
        """Every event of the run, from the start, then each new one as it happens; ends with the run."""
        if not await seen(run_id, request):
            return run_missing(run_id)
        token_id = request.scope.get("assay.token_id", "")
        streams.admit(token_id)  # Refused: 429
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        queue = None

        def release() -> None:  # once the response is over: sent, failed, or its client gone
            streams.release(token_id)
            if queue is not None:
                mgr().unwatch(run_id, queue)

        try:
            if (
                mgr().remote is not None
            ):  # events written by a worker, read back from the shared catalog
                stream = mgr().remote.stream(run_id, settings.run_wall_s + 60)
            else:
                history, queue = mgr().watch(run_id)
                if queue is None:
                    history = await asyncio.to_thread(
                        lambda: [
                            run_event(e.kind, run_id, e.step, e.at, e.data)
                            for e in kernel.runs.events(run_id)
                        ]
                    )
                stream = run_stream(mgr(), run_id, history, queue)
        except (
            BaseException
        ):  # e.g. the catalog did not answer: nothing was streamed, the slot is free again
            release()
            raise
        return ReleasingStream(
            while_token_active(stream, tokens, token_id),
            release,
            media_type="text/event-stream",
            headers=headers,
        )

    @app.get(
        "/runs/{run_id}/report",
        responses={
            **AUTH,
            **NOT_FOUND,
            **LIMITED,
            200: {
                "content": {
                    m.split(";")[0]: {"schema": {"type": "string"}} for m in MEDIA.values()
                },
                "description": "The run's report in the format asked for.",
            },
        },
        tags=["runs"],
    )
    async def run_report(
        run_id: str, request: Request, format: str = Query("html", pattern="^(html|md|json|pdf)$")
    ) -> Any:
        """The run's last report, rendered from its cited, hash-verified artifacts."""
        if not await seen(run_id, request):
            return run_missing(run_id)
        token_id = request.scope.get("assay.token_id", "")
        reports.admit(token_id)  # Refused: 429
        try:  # a pool of its own: PDFs printed by Chromium never hold the threads tool calls run in
            return await asyncio.get_running_loop().run_in_executor(
                report_pool, report_response, kernel, run_id, format
            )
        finally:
            reports.release(token_id)

    @app.get(
        "/runs/{run_id}/export",
        responses={
            **AUTH,
            **NOT_FOUND,
            200: {
                "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
                "description": "A verifiable zip of the run: transcript, artifacts, manifest.",
            },
        },
        tags=["runs"],
    )
    async def run_export(run_id: str, request: Request) -> Any:
        """The run as a bundle `assay artifacts verify` checks."""
        if (
            not await seen(run_id, request)
            or await asyncio.to_thread(kernel.runs.get, run_id) is None
        ):
            return run_missing(run_id)
        return await asyncio.to_thread(export_response, kernel, run_id)

    # --- artifacts and tools -----------------------------------------------------

    @app.get(
        "/artifacts/{artifact_id}",
        responses={
            **AUTH,
            **NOT_FOUND,
            200: {
                "content": {
                    "application/json": {"schema": ArtifactSelection.model_json_schema()},
                    "*/*": {"schema": {"type": "string", "format": "binary"}},
                },
                "description": "The stored bytes (ETag and Digest of their SHA-256), or a verified selection as JSON.",
            },
            304: {"description": "Not modified (If-None-Match)."},
            409: {
                "model": ErrorBody,
                "description": "The content no longer hashes to its record (or is gone).",
            },
        },
        tags=["artifacts"],
    )
    async def get_artifact(
        artifact_id: str,
        request: Request,
        rows: str | None = Query(
            None,
            max_length=40,
            pattern=r"^-?[0-9]*:-?[0-9]*$",
            description="START:STOP, 0-based, stop exclusive.",
        ),
        field: str | None = Query(None, max_length=200, description="One column."),
        path: str | None = Query(None, max_length=200, description="ROW.COLUMN-or-KEY..."),
    ) -> Any:
        """An artifact of one of your runs, read through its SHA-256 check."""
        if not await asyncio.to_thread(
            visible_artifact, kernel, tokens, owner(request), artifact_id
        ):
            return artifact_missing(artifact_id)
        selectors = {
            k: v for k, v in (("rows", rows), ("field", field), ("path", path)) if v is not None
        }
        try:
            return await asyncio.to_thread(
                artifact_response,
                kernel,
                artifact_id,
                selectors,
                settings,
                request.headers.get("if-none-match"),
            )
        except ev.ArtifactError as exc:
            # altered or lost content is a conflict with its record; a selection naming rows, columns or
            # keys the artifact does not have selects nothing there: 404
            status = (
                409 if exc.code in ("ARTIFACT_INTEGRITY_FAILED", "ARTIFACT_FILE_MISSING") else 404
            )
            return error(status, exc.code, exc.message, exc.hint)

    @app.post(
        "/tools/{name}",
        response_model=ToolCallResult,
        responses={**AUTH, **NOT_FOUND, **BAD_BODY, **LIMITED},
        tags=["tools"],
    )
    async def call_tool(name: str, body: ToolCall, request: Request) -> Any:
        """One tool call, in a run of its own (its artifacts are yours). A failure is a result, not an HTTP error."""
        if kernel.get_tool(name) is None:
            return error(
                404,
                "TOOL_NOT_FOUND",
                f"no tool named {name!r}",
                "GET /openapi.json lists none; `assay tools` lists the tools.",
            )
        token_id = request.scope.get("assay.token_id", "")
        tool_call_limits.admit(token_id)  # Refused: 429
        try:
            payload = await call_in_own_run(kernel, tokens, owner(request), name, body.arguments)
        finally:
            tool_call_limits.release(token_id)
        return Response(payload, media_type="application/json")

    return app
