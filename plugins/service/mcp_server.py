"""The MCP server: every registered tool, artifacts as resources, one assay run per conversation.

Built on the official ``mcp`` SDK's low-level :class:`mcp.server.Server`
(imported only here, when ``assay mcp`` runs). Tools are listed with the JSON
Schemas of ``kernel.tool_definitions("mcp")`` and called through
``kernel.acall_tool``; a failure is a result with ``isError`` whose text
carries the assay code, message and hint, and whose structured content is
the whole :class:`~assay.ToolResult` envelope. Artifacts of the conversation's
run are resources ``artifact://ID`` (read through the SHA-256 check; a table
is returned as a bounded selection plus how to select more; the listing is
capped, newest first); a template names the selectors;
``assay://run/manifest`` is the run's evidence manifest. Which requests make
one conversation, and how many are kept, is :mod:`.mcp_conversations`.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from assay.kernel import evidence as ev
from assay.kernel.errors import AssayError
from assay.kernel.evidence.capture import PYTHON_DOC, TABULAR
from assay.kernel.log import get_logger

from .access import ArtifactOutOfScope, check_arguments
from .mcp_conversations import Conversation, Conversations, NoConversation, SessionNotFound
from .settings import ServiceSettings

log = get_logger("assay.service.mcp")

MANIFEST_URI = "assay://run/manifest"
TEMPLATE = "artifact://{artifact_id}{?rows,field,path}"
BLOB_MAX = 4 << 20  # a file or chart larger than this is described, not sent
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
NOT_FOUND = -32002  # MCP's "resource not found"


def tool_result_to_mcp(result: Any) -> types.CallToolResult:
    """An assay result as MCP sees it: the model-facing text, the envelope as structured content."""
    text = result.for_model()
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=result.model_dump(mode="json", exclude_none=True),
        is_error=not result.success,
    )


def _error(exc: AssayError, code: int = INVALID_PARAMS) -> MCPError:
    return MCPError(
        code,
        f"{exc.code}: {exc.message}",
        {"code": exc.code, "message": exc.message, "hint": exc.hint},
    )


def _conversation_error(exc: AssayError) -> MCPError:
    return _error(exc, NOT_FOUND if isinstance(exc, SessionNotFound) else INVALID_REQUEST)


def parse_artifact_uri(uri: str) -> tuple[str, dict[str, Any]]:
    """``artifact://ID?rows=0:10&field=x&path=3.total`` -> (ID, selectors)."""
    parts = urlsplit(uri)
    if parts.scheme != "artifact" or not parts.netloc or parts.path not in ("", "/"):
        raise ev.ArtifactSelectorInvalid(
            f"not an artifact URI: {uri!r} (artifact://ID?rows=0:10&field=NAME)"
        )
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
    """Builds the SDK server over one kernel; conversations are opened on first use."""

    def __init__(
        self, kernel: Any, settings: ServiceSettings | None = None, tokens: Any = None
    ) -> None:
        self.kernel = kernel
        self.settings = settings or ServiceSettings()
        self.tokens = tokens
        self.conversations = Conversations(kernel, self.settings, tokens)
        from assay import __version__

        self.server: Server[Any] = Server(
            "assay",
            version=__version__,
            instructions=(
                "assay runs read-only SQL, sandboxed Python and reports over content-addressed "
                "evidence. Every result is captured as an artifact: read it back as the resource "
                "artifact://ID (select rows with ?rows=START:STOP) and cite it by id. Over HTTP without "
                "a handshake session, send the header Assay-Conversation: ID (the same on every request "
                "of one conversation) to keep variables and artifacts between requests; without it "
                "each tool call is a run of its own."
            ),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource,
            lifespan=self.conversations.sweeping,
        )

    def close(self) -> None:
        self.conversations.close()

    # --- tools ------------------------------------------------------------

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [types.Tool.model_validate(d) for d in self.kernel.tool_definitions("mcp")]
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        from assay import ToolResult

        arguments = params.arguments or {}
        try:
            async with self.conversations.use(ctx) as conversation:
                assert conversation is not None  # use() yields None only with create=False
                try:
                    check_arguments(arguments, conversation.visible)
                except ArtifactOutOfScope as exc:
                    return tool_result_to_mcp(ToolResult.from_error(exc, tool=params.name))
                result = await self.kernel.acall_tool(params.name, arguments, run=conversation.run)
        except SessionNotFound as exc:
            raise _error(exc, NOT_FOUND) from None
        except AssayError as exc:  # the conversation was closed, is malformed or over the cap
            return tool_result_to_mcp(ToolResult.from_error(exc, tool=params.name))
        return tool_result_to_mcp(result)

    # --- resources ------------------------------------------------------------

    async def list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        try:
            async with self.conversations.use(ctx, create=False) as conversation:
                if (
                    conversation is None
                ):  # a session-less request naming no conversation has nothing to list
                    return types.ListResourcesResult(resources=[])
                return self._listing(conversation.run.run_id)
        except AssayError as exc:
            raise _conversation_error(exc) from None

    def _listing(self, run_id: str) -> types.ListResourcesResult:
        """The run's artifacts, newest first, at most ``mcp_resources_listed``; the manifest says what is left out."""
        catalog, cap = self.kernel.evidence.catalog, self.settings.mcp_resources_listed
        total = catalog.count(run_id)
        about = f"The evidence manifest of run {run_id}: all {total} artifacts."
        if total > cap:
            about += (
                f" The newest {cap} are listed; {total - cap} older ones are left out of the list: find them "
                "here and read each as artifact://ID."
            )
        resources = [
            types.Resource(
                uri=MANIFEST_URI, name="manifest", mime_type="application/json", description=about
            )
        ]
        for record in catalog.iter(run_id, limit=cap, newest_first=True):
            rows = "" if record.row_count is None else f", {record.row_count} rows"
            resources.append(
                types.Resource(
                    uri=f"artifact://{record.artifact_id}",
                    name=record.artifact_id,
                    size=record.byte_size,
                    mime_type=record.media_type,
                    description=f"{record.kind} {record.status}{rows}: {record.summary()}",
                )
            )
        return types.ListResourcesResult(
            resources=resources,
            _meta={"assay/artifacts": total, "assay/left_out": max(total - cap, 0)},
        )

    async def list_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=TEMPLATE,
                    name="artifact",
                    mime_type="application/json",
                    description=(
                        "An artifact of this run, read through its SHA-256 check. rows=START:STOP (0-based, stop "
                        f"exclusive, at most {self.settings.max_read_rows}), field=COLUMN, path=ROW.COLUMN."
                    ),
                )
            ]
        )

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            async with self.conversations.use(ctx, create=False) as conversation:
                return self._read(str(params.uri), conversation)
        except AssayError as exc:
            raise _conversation_error(exc) from None

    def _read(self, uri: str, conversation: Conversation | None) -> types.ReadResourceResult:
        try:
            if conversation is None:
                raise NoConversation()
            if uri == MANIFEST_URI:
                manifest = ev.evidence_manifest(
                    self.kernel.evidence.catalog, conversation.run.run_id
                )
                return types.ReadResourceResult(
                    contents=[
                        types.TextResourceContents(
                            uri=uri,
                            mime_type="application/json",
                            text=json.dumps(manifest, default=str),
                        )
                    ]
                )
            artifact_id, selectors = parse_artifact_uri(uri)
            if not conversation.visible(artifact_id):
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
            selected = ev.read_artifact_result(
                self.kernel.evidence.catalog,
                artifact_id,
                chosen,
                max_rows=self.settings.max_read_rows,
            )
            body = selected.model_dump(mode="json")
            total = selected.total_rows
            shown = len(selected.rows or [])
            if total is not None and (selected.start or 0) + shown < total or selected.truncated:
                nxt = (selected.start or 0) + shown
                body["more"] = (
                    f"{total} rows in all, {shown} shown from row {selected.start or 0}; read "
                    f"artifact://{artifact_id}?rows={nxt}:{nxt + self.settings.preview_rows} for more "
                    f"(at most {self.settings.max_read_rows} rows a read)"
                )
            return types.TextResourceContents(
                uri=uri, mime_type="application/json", text=json.dumps(body, default=str)
            )
        if selectors:
            raise ev.ArtifactSelectorInvalid(f"a {record.kind} artifact takes no selectors")
        record, content = ev.open_verified_content(self.kernel.evidence.catalog, artifact_id)
        if record.byte_size > BLOB_MAX:
            note = {
                "artifact_id": artifact_id,
                "sha256": record.sha256,
                "byte_size": record.byte_size,
                "media_type": record.media_type,
                "note": f"larger than {BLOB_MAX} bytes: not sent over MCP; "
                "fetch it with `assay artifacts export` or GET /artifacts/ID of `assay serve`",
            }
            return types.TextResourceContents(
                uri=uri, mime_type="application/json", text=json.dumps(note)
            )
        data = content.read_bytes() if hasattr(content, "read_bytes") else content
        if record.media_type.startswith("text/") or record.media_type == "application/json":
            return types.TextResourceContents(
                uri=uri, mime_type=record.media_type, text=data.decode("utf-8", "replace")
            )
        return types.BlobResourceContents(
            uri=uri, mime_type=record.media_type, blob=base64.b64encode(data).decode("ascii")
        )
