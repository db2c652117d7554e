"""The HTTP API's error shape: its error codes, :func:`error` (an :class:`~.api_models.ErrorBody`
answer), the exception handlers that answer every failure in that shape, and the OpenAPI
document's error bodies (the routes' ``responses=`` fragments, and FastAPI's validation errors
described as the API answers them).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from assay.kernel.errors import AssayError

from .access import SERVICE_ARTIFACT_NOT_FOUND
from .api_models import ErrorBody
from .auth import OUTAGES
from .limits import Refused

SERVICE_RUN_NOT_FOUND = "SERVICE_RUN_NOT_FOUND"
SERVICE_REPORT_NOT_FOUND = "SERVICE_REPORT_NOT_FOUND"
SERVICE_REPORT_FORMAT_UNAVAILABLE = "SERVICE_REPORT_FORMAT_UNAVAILABLE"
SERVICE_DATASOURCE_UNKNOWN = "SERVICE_DATASOURCE_UNKNOWN"
SERVICE_REQUEST_INVALID = "SERVICE_REQUEST_INVALID"
SERVICE_METHOD_NOT_ALLOWED = "SERVICE_METHOD_NOT_ALLOWED"
SERVICE_ROUTE_NOT_FOUND = "SERVICE_ROUTE_NOT_FOUND"

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


def artifact_missing(artifact_id: str) -> JSONResponse:
    return error(
        404,
        SERVICE_ARTIFACT_NOT_FOUND,
        f"no artifact {artifact_id!r}",
        "Use an artifact id one of your runs returned.",
    )


def install_openapi_error_bodies(app: FastAPI) -> None:
    """Make ``app``'s OpenAPI document FastAPI's, with its validation errors (422, and 400 for a body
    that is not JSON) described as the API answers them: an ErrorBody."""

    def openapi() -> dict[str, Any]:
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


def install_error_handlers(app: FastAPI) -> None:
    """Answer a refusal (429, 503), Starlette's and FastAPI's own errors and an :class:`AssayError`
    in the API's error shape."""

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
        # request that does not match its schema 422 (the OpenAPI document says the same:
        # install_openapi_error_bodies)
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
            if exc.code in (SERVICE_RUN_NOT_FOUND, SERVICE_ARTIFACT_NOT_FOUND, "ARTIFACT_NOT_FOUND")
            else 400
        )
        return error(status, exc.code, exc.message, exc.hint)
