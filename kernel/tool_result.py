"""The one result envelope every tool call returns.

A call never raises into the model: success and failure are both a
:class:`ToolResult`. ``content`` is the bounded, model-facing text; ``data``
is structured output for programs; ``artifacts`` names the evidence the call
captured, so later steps can cite it instead of copying numbers.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .errors import AssayError


class ArtifactRef(BaseModel):
    """A pointer to a captured artifact, as a tool reports it."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    artifact_id: str
    kind: str
    status: str = "succeeded"
    row_count: int | None = None
    uri: str | None = None


class ToolResult(BaseModel):
    """Outcome of one tool call: success, or an error with a stable code."""

    # defer_build: the validator is built on first use, not when `import assay` runs.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    success: bool
    tool: str = ""
    content: str = Field(default="", description="Bounded text for the model.")
    data: Any = None
    error_code: str | None = None
    message: str = ""
    hint: str = ""
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    errors: list[dict[str, Any]] = Field(default_factory=list, description="Per-argument problems.")
    metadata: dict[str, Any] = Field(default_factory=dict)
    elapsed_ms: float | None = None

    @classmethod
    def ok(cls, data: Any = None, *, content: str = "", **fields: Any) -> ToolResult:
        return cls(success=True, data=data, content=content, **fields)

    @classmethod
    def fail(cls, code: str, message: str, hint: str = "", **fields: Any) -> ToolResult:
        return cls(success=False, error_code=code, message=message, hint=hint, **fields)

    @classmethod
    def from_error(cls, error: AssayError, **fields: Any) -> ToolResult:
        extra = dict(fields)
        if error.details:
            extra.setdefault("metadata", {}).update(error.details)
        return cls.fail(error.code, error.message, error.hint, **extra)

    def for_model(self) -> str:
        """The text a model sees: the content on success, code/message/hint on failure."""
        if self.success:
            text = self.content or ("" if self.data is None else _compact(self.data))
        else:
            text = f"error {self.error_code}: {self.message}"
            if self.errors:
                text += "\n" + "\n".join(
                    f"- {e.get('path', '')}: {e.get('message', '')}" for e in self.errors
                )
            if self.hint:
                text += f"\nhint: {self.hint}"
        if self.artifacts:
            ids = ", ".join(a.artifact_id for a in self.artifacts)
            text += f"\nartifacts: {ids}"
        return text


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
