"""The HTTP API of ``assay serve`` (FastAPI): runs, their events, reports, artifacts, tool calls.

FastAPI, because the API's request and response bodies are pydantic models
already, and it makes the OpenAPI document (``/openapi.json``) the tests hold
the server to; it sits on Starlette, which the MCP SDK uses too.
Authentication is the :class:`~.auth.BearerAuth` wrapper around the whole app
(only ``/health`` and the page's static files are open); every run and
artifact lookup is scoped to the token's owner and answers 404 otherwise.
"""

from __future__ import annotations

import asyncio
import base64
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from assay.kernel import evidence as ev
from assay.kernel.errors import AssayError

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
from .auth import OUTAGES
from .limits import InFlight, Refused, ToolCallLimits
from .runner import RunManager, RunRequest
from .settings import ServiceSettings
from .sse import END, KEEPALIVE, KEEPALIVE_S, event_frame, frame, run_event
from .tool_calls import call_in_own_run, visible_artifact

SERVICE_RUN_NOT_FOUND = "SERVICE_RUN_NOT_FOUND"
SERVICE_REPORT_NOT_FOUND = "SERVICE_REPORT_NOT_FOUND"
SERVICE_REPORT_FORMAT_UNAVAILABLE = "SERVICE_REPORT_FORMAT_UNAVAILABLE"
SERVICE_DATASOURCE_UNKNOWN = "SERVICE_DATASOURCE_UNKNOWN"
SERVICE_REQUEST_INVALID = "SERVICE_REQUEST_INVALID"
SERVICE_METHOD_NOT_ALLOWED = "SERVICE_METHOD_NOT_ALLOWED"
SERVICE_ROUTE_NOT_FOUND = "SERVICE_ROUTE_NOT_FOUND"
WEB = Path(__file__).with_name("web")
PUBLIC = ("/health", "/", "/app.js", "/app.css", "/favicon.ico")

# OpenAPI's extra responses of a route (FastAPI's ``responses=``), by status code.
Responses = dict[int | str, dict[str, Any]]
AUTH: Responses = {401: {"model": ErrorBody, "description": "No bearer token, or not a valid one."}}
NOT_FOUND: Responses = {
    404: {"model": ErrorBody, "description": "Not found (or not the token owner's)."}
}
LIMITED: Responses = {429: {"model": ErrorBody, "description": "Over a limit; see Retry-After."}}
BAD_BODY: Responses = {
    400: {"model": ErrorBody, "description": "A body that does not parse."},
    413: {"model": ErrorBody, "description": "Body too large."},
}
SSE_EVENT = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "event": {"type": "string"},
        "data": {"type": "string"},
    },
}
MEDIA = {
    "md": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "json": "application/json",
    "pdf": "application/pdf",
}


def error(
    status: int, code: str, message: str, hint: str = "", headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        ErrorBody(code=code, message=message, hint=hint).model_dump(),
        status_code=status,
        headers=headers,
    )


def run_missing(run_id: str) -> JSONResponse:
    return error(404, SERVICE_RUN_NOT_FOUND, f"no run {run_id!r}", "List your runs with GET /runs.")


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
                _close_pdf_browser
            )  # the Chromium the report pool kept, if it started one
            if manager.remote is not None:
                manager.remote.close()
            await asyncio.to_thread(kernel.close)  # sandbox containers, pools, catalogs

    app = FastAPI(
        title="assay",
        version=_version(),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        description="Ask questions of configured datasources; read runs, reports and evidence. "
        "Every endpoint but /health needs 'Authorization: Bearer TOKEN'.",
    )

    def openapi() -> dict[str, Any]:
        """FastAPI's document, with its validation errors (422, and 400 for a body that is not JSON)
        described as the API answers them: an ErrorBody."""
        if app.openapi_schema is None:
            doc = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
            for operations in doc.get("paths", {}).values():
                for operation in operations.values():
                    responses = operation.get("responses", {})
                    if "422" in responses:
                        responses["422"] = {
                            "description": "The request does not match its schema.",
                            "content": body,
                        }
                        responses.setdefault(
                            "400", {"description": "A body that does not parse.", "content": body}
                        )
            schemas = doc.get("components", {}).get("schemas", {})
            schemas.pop("HTTPValidationError", None)
            schemas.pop("ValidationError", None)
            schemas.setdefault("ErrorBody", ErrorBody.model_json_schema())
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

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

    @app.exception_handler(Refused)
    async def _refused(request: Request, exc: Refused) -> JSONResponse:
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        return error(exc.status, exc.code, exc.message, exc.hint, headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Starlette's own answers (405, a body that does not parse) in the API's error shape; a 405
        # lists every method the path has (GET and POST /runs are two routes to Starlette).
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            allowed = sorted(
                {
                    m
                    for r in app.routes
                    if r.matches(request.scope)[0] != Match.NONE
                    for m in (getattr(r, "methods", None) or ())
                }
                - {"HEAD"}
            )
            headers["Allow"] = ", ".join(allowed)
        code = {405: SERVICE_METHOD_NOT_ALLOWED, 404: SERVICE_ROUTE_NOT_FOUND}.get(
            exc.status_code, SERVICE_REQUEST_INVALID
        )
        return error(exc.status_code, code, str(exc.detail), "See /openapi.json.", headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own {"detail": [...]} in the API's error shape: a body that is not JSON is 400, a
        # request that does not match its schema 422 (the OpenAPI document says the same: see below)
        problems = exc.errors()
        status = 400 if any(p.get("type") == "json_invalid" for p in problems) else 422
        said = "; ".join(
            f"{'.'.join(str(x) for x in p.get('loc', ())) or 'request'}: {p.get('msg')} "
            f"({p.get('type')})"
            for p in problems[:5]
        )
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        return error(
            status,
            SERVICE_REQUEST_INVALID,
            f"the request does not match its schema: {said}{more}",
            "See /openapi.json for the request's schema; send JSON with Content-Type: application/json.",
        )

    @app.exception_handler(AssayError)
    async def _assay_error(request: Request, exc: AssayError) -> JSONResponse:
        if (
            exc.code in OUTAGES
        ):  # the catalog or the broker does not answer: not the request's fault
            return error(503, exc.code, exc.message, exc.hint, {"Retry-After": "5"})
        status = (
            404
            if exc.code
            in (SERVICE_RUN_NOT_FOUND, "SERVICE_ARTIFACT_NOT_FOUND", "ARTIFACT_NOT_FOUND")
            else 400
        )
        return error(status, exc.code, exc.message, exc.hint)

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
                stream = _sse(mgr(), run_id, history, queue)
        except (
            BaseException
        ):  # e.g. the catalog did not answer: nothing was streamed, the slot is free again
            release()
            raise
        return _ReleasingStream(
            _while_token_active(stream, tokens, token_id),
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
                report_pool, _report, kernel, run_id, format
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
        return await asyncio.to_thread(_export, kernel, run_id)

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
            return error(
                404,
                "SERVICE_ARTIFACT_NOT_FOUND",
                f"no artifact {artifact_id!r}",
                "Use an artifact id one of your runs returned.",
            )
        selectors = {
            k: v for k, v in (("rows", rows), ("field", field), ("path", path)) if v is not None
        }
        try:
            return await asyncio.to_thread(
                _artifact,
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


async def _sse(
    manager: RunManager, run_id: str, history: list[dict[str, Any]], queue: asyncio.Queue | None
):
    seq = 0
    try:
        for item in history:
            seq += 1
            yield event_frame(seq, item)
        if queue is None:
            yield END
            return
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
            except TimeoutError:
                yield KEEPALIVE
                continue
            if item is None:
                yield END
                return
            seq += 1
            yield event_frame(seq, item)
    finally:
        if queue is not None:
            manager.unwatch(run_id, queue)


async def _while_token_active(stream: Any, tokens: Any, token_id: str):
    """``stream``'s frames while its token stays valid: the token is checked before each frame is sent,
    and a revoked one ends the stream with an ``error`` event naming the code."""
    try:
        async for chunk in stream:
            if not await asyncio.to_thread(tokens.active, token_id):
                body = {
                    "code": "SERVICE_AUTH_INVALID",
                    "message": "the bearer token was revoked",
                    "hint": "Make a new one with `assay tokens create`.",
                }
                yield frame("error", body)
                return
            yield chunk
    finally:
        await stream.aclose()


class _ReleasingStream(StreamingResponse):
    """A streamed response that calls ``release`` when it is over, however it ends (even unstarted)."""

    def __init__(self, content: Any, release: Any, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._release = release

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()
            close = getattr(
                self.body_iterator, "aclose", None
            )  # typed AsyncIterable: an async generator here
            if close is not None:
                await close()


STORED = {
    "md": "text/markdown",
    "html": "text/html",
}  # report formats kept as artifacts by render_report
RENDERERS = {"md": "markdown", "html": "html", "json": "json", "pdf": "pdf"}


def _report(kernel: Any, run_id: str, fmt: str) -> Response:
    """The run's last report: the saved artifact of that format (hash-verified), else rendered again
    from the report's document by the registered renderer."""
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


def _export(kernel: Any, run_id: str) -> Response:
    import tempfile

    from assay.plugins.runs.export import export_run

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{run_id}.zip"
        export_run(kernel, run_id, path)
        data = path.read_bytes()
    return Response(
        data,
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{run_id}.zip"'},
    )


def _artifact(
    kernel: Any,
    artifact_id: str,
    selectors: dict[str, Any],
    settings: ServiceSettings,
    if_none_match: str | None,
) -> Response:
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


def _close_pdf_browser() -> None:
    import sys

    browser = sys.modules.get(
        "assay.plugins.reports.browser"
    )  # imported only if a PDF was rendered
    if browser is not None:
        browser.close_shared()


def _version() -> str:
    from assay import __version__

    return __version__
