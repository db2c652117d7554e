"""The models that cross the evidence store's boundary: records, selectors, selections."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..tool_result import ArtifactRef
from .canonical import dumps

URI_PREFIX = "artifact://sha256/"


def new_artifact_id() -> str:
    return "art_" + uuid.uuid4().hex[:20]


def utcnow() -> datetime:
    return datetime.now(UTC)


class ArtifactRecord(BaseModel):
    """What the catalog knows about one captured execution or file.

    ``row_count`` is the number of rows stored in the content; ``preview``
    holds at most the first 100 of them (never use its length as the count).
    """

    # defer_build: the validator is built on first use (a capture), not when a run opens its sink
    model_config = ConfigDict(extra="forbid", defer_build=True)

    artifact_id: str
    kind: str  # sql, python, file, chart, ...
    status: str  # succeeded | failed
    run_id: str
    created_at: datetime
    row_count: int | None = None
    columns: list[str] = Field(default_factory=list)
    column_types: list[str] = Field(default_factory=list)
    byte_size: int
    sha256: str
    content_uri: str
    media_type: str = "application/x-ndjson"
    name: str | None = None
    preview: list[list[Any]] = Field(default_factory=list)
    preview_truncated: bool = False
    complete: bool = True
    provenance: dict[str, Any] = Field(default_factory=dict)
    result: Any | None = None

    def ref(self) -> ArtifactRef:
        """The pointer a tool puts in ``ToolResult.artifacts``."""
        extra: dict[str, Any] = {"sha256": self.sha256, "complete": self.complete}
        if self.name:
            extra["name"] = self.name
            extra["media_type"] = self.media_type
        return ArtifactRef(
            artifact_id=self.artifact_id,
            kind=self.kind,
            status=self.status,
            row_count=self.row_count,
            uri=self.content_uri,
            **extra,
        )

    @property
    def is_tabular(self) -> bool:
        return self.media_type == "application/x-ndjson"

    @property
    def rows_returned(self) -> int | None:
        """How many rows the execution returned: more than ``row_count`` when the capture stopped early,
        and ``None`` when it stopped without counting the rest."""
        returned = self.provenance.get("rows_returned")
        if isinstance(returned, int):
            return returned
        return self.row_count if self.complete else None

    def incomplete_note(self) -> str:
        """Empty for a complete artifact; else that it is incomplete, and what was kept of what."""
        if self.complete:
            return ""
        return "INCOMPLETE artifact: " + str(
            self.provenance.get("incomplete_reason") or "the capture stopped early"
        )

    def summary(self, width: int = 120) -> str:
        """One line of the SQL or code (or the file name, or the knowledge search) that produced it."""
        text = self.provenance.get("sql") or self.provenance.get("code") or self.name or ""
        if not text and self.kind == "knowledge" and self.provenance.get("query"):
            text = f"knowledge_search: {self.provenance['query']}"
        text = " ".join(str(text).split())
        return text if len(text) <= width else text[: width - 3] + "..."


@dataclass
class ProducedFile:
    """A file an execution produced (a chart, a CSV...), captured as its own artifact."""

    name: str
    data: bytes
    media_type: str = "application/octet-stream"
    kind: str | None = None  # default: "chart" for images, else "file"


class Selectors(BaseModel):
    """Which part of an artifact to read back.

    * ``field``: one column (tabular) or key (rows that are objects).
    * ``rows``: ``[start, stop]`` (stop exclusive; negative counts from the end), or ``"a:b"``.
    * ``path``: ``[row, column-or-key, key, ...]``; the first step may be a range ``"a:b"``;
      a string ``"216.name"`` is split on dots.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    field: str | None = None
    rows: list[int | None] | str | None = None
    path: list[int | str] | str | int | None = None


class SelectedResult(BaseModel):
    """The selected part of an artifact, bounded, after its SHA-256 was verified."""

    model_config = ConfigDict(defer_build=True)

    artifact_id: str
    kind: str
    status: str
    sha256: str
    verified: bool = True
    complete: bool = True
    total_rows: int | None = None  # rows stored (kept); see rows_returned when incomplete
    rows_returned: int | None = None  # rows the execution returned, when more than were kept
    columns: list[str] = Field(default_factory=list)
    start: int | None = None  # index of the first returned row
    rows: list[Any] | None = None
    value: Any = None  # what a path selector reached
    truncated: bool = False
    note: str = ""

    def text(self, max_chars: int = 20_000) -> str:
        """A bounded, model-facing rendering."""
        head = f"artifact {self.artifact_id} ({self.kind}, {self.status}, sha256 verified)"
        if not self.complete:
            kept = "" if self.total_rows is None else f" {self.total_rows} rows kept"
            of = (
                f" of {self.rows_returned} returned"
                if self.rows_returned is not None and kept
                else ""
            )
            head += f", INCOMPLETE:{kept}{of}" if kept else ", INCOMPLETE"
        elif self.total_rows is not None:
            head += f", {self.total_rows} rows in total"
        lines = [head]
        if self.rows is not None:
            first = self.start or 0
            if self.columns:
                lines.append("columns: " + dumps(self.columns))
            shown = f"rows {first}..{first + len(self.rows) - 1}" if self.rows else "no rows"
            lines.append(f"{shown} (0-based):")
            lines.extend(f"{first + i}: {dumps(r)}" for i, r in enumerate(self.rows))
        else:
            lines.append("value: " + dumps(self.value))
        if self.truncated:
            lines.append("(truncated: narrow the selection with rows=[start, stop] or field)")
        if self.note:
            lines.append(self.note)
        out = "\n".join(lines)
        return (
            out
            if len(out) <= max_chars
            else out[: max_chars - 40] + "\n... (truncated to the budget)"
        )
