"""The MCP server: every registered tool, artifacts as resources, one assay run per MCP session.

Built on the official ``mcp`` SDK's low-level :class:`mcp.server.Server`
(imported only here, when ``assay mcp`` runs). Tools are listed with the JSON
Schemas of ``kernel.tool_definitions("mcp")`` and called through
``kernel.acall_tool``; a failure is a result with ``isError`` whose text
carries the assay code, message and hint, and whose structured content is
the whole :class:`~assay.ToolResult` envelope. Artifacts of the session's run
are resources ``artifact://ID`` (read through the SHA-256 check; a table is
returned as a bounded selection plus how to select more); a template names
the selectors; ``assay://run/manifest`` is the run's evidence manifest.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import mcp_types as types
from assay.kernel import evidence as ev
from assay.kernel.errors import AssayError
from assay.kernel.evidence.capture import PYTHON_DOC, TABULAR
from assay.kernel.log import get_logger
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from .access import ArtifactOutOfScope, check_arguments
from .quota import charge_to_owner
from .settings import ServiceSettings

log = get_logger("assay.service.mcp")

MANIFEST_URI = "assay://run/manifest"
TEMPLATE = "artifact://{artifact_id}{?rows,field,path}"
BLOB_MAX = 4 << 20  # a file or chart larger than this is described, not sent
INVALID_PARAMS = -32602
NOT_FOUND = -32002  # MCP's "resource not found"


class McpRun:
    """One MCP session: its own assay run (sandbox session and evidence scope)."""

    def __init__(self, kernel: Any, owner: str, tokens: Any = None) -> None:
        self.kernel, self.owner = kernel, owner
        self.run = kernel.new_run()
        if tokens is not None:
            tokens.own(self.run.run_id, owner)
            charge_to_owner(self.run, kernel, tokens, owner)
        log.info("mcp_session_started", run_id=self.run.run_id, owner=owner)

    def visible(self, artifact_id: str) -> bool:
        record = self.kernel.evidence.catalog.get(artifact_id)
        return record is not None and record.run_id == self.run.run_id

    def close(self) -> None:
        log.info("mcp_session_closed", run_id=self.run.run_id)
        self.run.close()


def _session_key(ctx: Any) -> str:
    """What one MCP session is, per transport and protocol era.

    A handshake-era streamable-HTTP client has an ``Mcp-Session-Id``; a
    2026-era client is stateless (every request is an exchange of its own),
    so over HTTP its session is its bearer token; over stdio the process
    serves one client, so the process is the session.
    """
    connection = getattr(ctx.session, "_connection", None)
    session_id = getattr(connection, "session_id", None)
    if session_id:
        return f"mcp-session:{session_id}"
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None) or {}
    if scope.get("assay.token_id"):
        return f"token:{scope['assay.token_id']}"
    return "stdio"


def _owner(ctx: Any) -> str:
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None) or {}
    return scope.get("assay.owner") or "local"


def tool_result_to_mcp(result: Any) -> types.CallToolResult:
    """An assay result as MCP sees it: the model-facing text, the envelope as structured content."""
    text = result.for_model()
    return types.CallToolResult(content=[types.TextContent(text=text)],
                                structured_content=result.model_dump(mode="json", exclude_none=True),
                                is_error=not result.success)


def _error(exc: AssayError, code: int = INVALID_PARAMS) -> MCPError:
    return MCPError(code, f"{exc.code}: {exc.message}", {"code": exc.code, "message": exc.message, "hint": exc.hint})


def parse_artifact_uri(uri: str) -> tuple[str, dict[str, Any]]:
    """``artifact://ID?rows=0:10&field=x&path=3.total`` -> (ID, selectors)."""
    parts = urlsplit(uri)
    if parts.scheme != "artifact" or not parts.netloc or parts.path not in ("", "/"):
        raise ev.ArtifactSelectorInvalid(f"not an artifact URI: {uri!r} (artifact://ID?rows=0:10&field=NAME)")
    query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    unknown = sorted(set(query) - {"rows", "field", "path"})
    if unknown:
        raise ev.ArtifactSelectorInvalid(f"unknown selector(s) {unknown}: use rows, field or path")
    selectors: dict[str, Any] = {}
    if "rows" in query:
        selectors["rows"] = query["rows"]
    if "field" in query:
        selectors["field"] = query["field"]
    if "path" in query:
        selectors["path"] = query["path"]
    return parts.netloc, selectors


class AssayMcpServer:
    """Builds the SDK server over one kernel; sessions are created on first use."""

    def __init__(self, kernel: Any, settings: ServiceSettings | None = None, tokens: Any = None) -> None:
        self.kernel = kernel
        self.settings = settings or ServiceSettings()
        self.tokens = tokens
        self.sessions: dict[str, McpRun] = {}
        from assay import __version__

        self.server: Server[Any] = Server(
            "assay", version=__version__,
            instructions=("assay runs read-only SQL, sandboxed Python and reports over content-addressed "
                          "evidence. Every result is captured as an artifact: read it back as the resource "
                          "artifact://ID (select rows with ?rows=START:STOP) and cite it by id."),
            on_list_tools=self.list_tools, on_call_tool=self.call_tool,
            on_list_resources=self.list_resources, on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource)

    def session(self, ctx: Any) -> McpRun:
        key, owner = _session_key(ctx), _owner(ctx)
        found = self.sessions.get(key)
        if found is not None and found.owner != owner:
            # another token's holder who learnt the session id gets nothing of it
            raise MCPError(NOT_FOUND, "SERVICE_SESSION_NOT_FOUND: no such MCP session for this token",
                           {"code": "SERVICE_SESSION_NOT_FOUND", "hint": "Start a new MCP session."})
        if found is None:
            found = self.sessions[key] = McpRun(self.kernel, owner, self.tokens)
            connection = getattr(ctx.session, "_connection", None)
            stack = getattr(connection, "exit_stack", None)
            if key.startswith("mcp-session:") and stack is not None:
                stack.callback(self._end, key)  # the session ended (DELETE, idle timeout)
        return found

    def _end(self, key: str) -> None:
        run = self.sessions.pop(key, None)
        if run is not None:
            run.close()

    def close(self) -> None:
        for key in list(self.sessions):
            self._end(key)

    # --- tools ------------------------------------------------------------

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [types.Tool.model_validate(d) for d in self.kernel.tool_definitions("mcp")]
        return types.ListToolsResult(tools=tools)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        from assay import ToolResult

        session = self.session(ctx)
        arguments = params.arguments or {}
        try:
            check_arguments(arguments, session.visible)
        except ArtifactOutOfScope as exc:
            return tool_result_to_mcp(ToolResult.from_error(exc, tool=params.name))
        result = await self.kernel.acall_tool(params.name, arguments, run=session.run)
        return tool_result_to_mcp(result)

    # --- resources ------------------------------------------------------------

    async def list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        session = self.session(ctx)
        resources = [types.Resource(uri=MANIFEST_URI, name="manifest", mime_type="application/json",
                                    description=f"The evidence manifest of run {session.run.run_id}.")]
        for record in self.kernel.evidence.catalog.iter(session.run.run_id):
            rows = "" if record.row_count is None else f", {record.row_count} rows"
            resources.append(types.Resource(
                uri=f"artifact://{record.artifact_id}", name=record.artifact_id, size=record.byte_size,
                mime_type=record.media_type, description=f"{record.kind} {record.status}{rows}: {record.summary()}"))
        return types.ListResourcesResult(resources=resources)

    async def list_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            uri_template=TEMPLATE, name="artifact", mime_type="application/json",
            description=("An artifact of this run, read through its SHA-256 check. rows=START:STOP (0-based, stop "
                         f"exclusive, at most {self.settings.max_read_rows}), field=COLUMN, path=ROW.COLUMN."))])

    async def read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        session = self.session(ctx)
        uri = str(params.uri)
        if uri == MANIFEST_URI:
            manifest = ev.evidence_manifest(self.kernel.evidence.catalog, session.run.run_id)
            return types.ReadResourceResult(contents=[types.TextResourceContents(
                uri=uri, mime_type="application/json", text=json.dumps(manifest, default=str))])
        try:
            artifact_id, selectors = parse_artifact_uri(uri)
            if not session.visible(artifact_id):
                raise ArtifactOutOfScope(artifact_id)
            return types.ReadResourceResult(contents=[self._artifact(uri, artifact_id, selectors)])
        except ArtifactOutOfScope as exc:
            raise _error(exc, NOT_FOUND) from None
        except AssayError as exc:
            raise _error(exc) from None

    def _artifact(self, uri: str, artifact_id: str, selectors: dict[str, Any]) -> Any:
        record = ev.get_record(self.kernel.evidence.catalog, artifact_id)
        if record.media_type in (TABULAR, PYTHON_DOC):
            chosen = selectors or {"rows": [0, self.settings.preview_rows]}
            selected = ev.read_artifact_result(self.kernel.evidence.catalog, artifact_id, chosen,
                                               max_rows=self.settings.max_read_rows)
            body = selected.model_dump(mode="json")
            total = selected.total_rows
            shown = len(selected.rows or [])
            if total is not None and (selected.start or 0) + shown < total or selected.truncated:
                nxt = (selected.start or 0) + shown
                body["more"] = (f"{total} rows in all, {shown} shown from row {selected.start or 0}; read "
                                f"artifact://{artifact_id}?rows={nxt}:{nxt + self.settings.preview_rows} for more "
                                f"(at most {self.settings.max_read_rows} rows a read)")
            return types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(body, default=str))
        if selectors:
            raise ev.ArtifactSelectorInvalid(f"a {record.kind} artifact takes no selectors")
        record, content = ev.open_verified_content(self.kernel.evidence.catalog, artifact_id)
        if record.byte_size > BLOB_MAX:
            note = {"artifact_id": artifact_id, "sha256": record.sha256, "byte_size": record.byte_size,
                    "media_type": record.media_type, "note": f"larger than {BLOB_MAX} bytes: not sent over MCP; "
                    "fetch it with `assay artifacts export` or GET /artifacts/ID of `assay serve`"}
            return types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(note))
        data = content.read_bytes() if hasattr(content, "read_bytes") else content
        if record.media_type.startswith("text/") or record.media_type == "application/json":
            return types.TextResourceContents(uri=uri, mime_type=record.media_type, text=data.decode("utf-8", "replace"))
        return types.BlobResourceContents(uri=uri, mime_type=record.media_type,
                                          blob=base64.b64encode(data).decode("ascii"))
