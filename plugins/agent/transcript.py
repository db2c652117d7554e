"""What one agent run did: the transcript, and the events it is made of as it goes.

Observers (the runs store's recorder, the CLI's step printer) receive
:class:`AgentEvent` objects while the run is going; the :class:`Transcript`
is the whole of it at the end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from assay.kernel.messages import Message, Usage
from assay.kernel.tool_result import ToolResult

from .status import RunStatus

EventKind = Literal[
    "run_started",  # question, model, settings, system prompt size
    "message",  # a message added to the conversation (system, user, assistant, tool)
    "model_request",  # the model is asked (step, estimated tokens)
    "text",  # a streamed text delta (not stored)
    "tool_started",  # one tool call starts (name, arguments)
    "tool_finished",  # its outcome (rows, artifacts, error code, time, preview)
    "compaction",  # older tool results replaced by stubs
    "limit",  # a bound was hit (max_steps, max_time, max_tool_calls_per_turn, max_tokens)
    "figure_check",  # an answer's figures checked against the evidence (unsupported ones, a correction asked)
    "run_finished",  # the final status
]


@dataclass
class AgentEvent:
    kind: EventKind
    run_id: str
    step: int
    data: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)


class AgentObserver(Protocol):
    def __call__(self, event: AgentEvent) -> None: ...


class ToolCallRecord(BaseModel):
    """One tool call and its outcome, as the run record keeps it."""

    model_config = ConfigDict(defer_build=True)

    step: int
    call_id: str
    tool: str
    arguments: Any = None
    success: bool = False
    error_code: str | None = None
    artifact_ids: list[str] = Field(default_factory=list)
    row_count: int | None = None
    elapsed_ms: float | None = None
    preview: str = ""


class Compaction(BaseModel):
    """One compaction: which tool results became stubs, and the estimate before and after."""

    model_config = ConfigDict(defer_build=True)

    step: int
    call_ids: list[str]
    artifact_ids: list[str] = Field(default_factory=list)
    tokens_before: int
    tokens_after: int


class RunError(BaseModel):
    model_config = ConfigDict(defer_build=True)

    code: str
    message: str
    hint: str = ""


class Transcript(BaseModel):
    """What happened in one agent run."""

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)

    run_id: str
    question: str
    model: str = ""
    messages: list[Message] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    calls: list[ToolCallRecord] = Field(default_factory=list)
    compactions: list[Compaction] = Field(default_factory=list)
    limits_hit: list[dict[str, Any]] = Field(default_factory=list)
    answer: str | None = None
    figures: dict[str, Any] | None = None  # the final answer's figure check (None: not checked)
    figure_checks: list[dict[str, Any]] = Field(
        default_factory=list
    )  # every check, corrections asked included
    status: RunStatus = RunStatus.RUNNING
    status_reason: str = ""
    error: RunError | None = None
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    started_at: float = Field(default_factory=time.time)
    ended_at: float | None = None
    datasources: list[str] = Field(
        default_factory=list
    )  # what the run was given (a URL's password masked)
    thread: dict[str, Any] | None = (
        None  # a follow-up's thread: chain, what was summarised, evidence problems
    )
    files: dict[str, Any] | None = (
        None  # the files the run used: per table, each file's path, SHA-256 and source artifact
    )

    @property
    def stopped(self) -> Literal["final", "max_steps"]:
        """``max_steps`` when the step bound ended the run, else ``final`` (kept for older callers)."""
        return "max_steps" if self.status == RunStatus.MAX_STEPS else "final"

    @property
    def artifact_ids(self) -> list[str]:
        """Every artifact the run's tool calls captured, in order."""
        return [a.artifact_id for r in self.tool_results for a in r.artifacts]

    @property
    def elapsed_s(self) -> float:
        return (self.ended_at or time.time()) - self.started_at

    def report(self) -> dict[str, Any] | None:
        """The last ``generate_report`` result: its status, report artifact and text (None without one)."""
        from .status import REPORT_TOOL

        for result in reversed(self.tool_results):
            if result.tool == REPORT_TOOL:
                data = result.data if isinstance(result.data, dict) else {}
                ids = [a.artifact_id for a in result.artifacts if a.kind == "report"]
                return {
                    "status": result.metadata.get("report_status")
                    or ("completed" if result.success else "failed"),
                    "artifact_id": ids[0] if ids else None,
                    "text": data.get("report") if isinstance(data.get("report"), str) else None,
                    "unbound_figures": list(result.metadata.get("unbound_figures") or []),
                }
        return None

    def summary(self) -> dict[str, Any]:
        """The machine-readable run record (`assay ask --json`)."""
        return {
            "run_id": self.run_id,
            "question": self.question,
            "model": self.model,
            "status": str(self.status),
            "status_reason": self.status_reason,
            "error": self.error.model_dump() if self.error else None,
            "answer": self.answer,
            "figures": self.figures,
            "figure_checks": self.figure_checks,
            "report": self.report(),
            "steps": self.steps,
            "artifact_ids": self.artifact_ids,
            "tool_calls": [c.model_dump() for c in self.calls],
            "compactions": [c.model_dump() for c in self.compactions],
            "limits_hit": self.limits_hit,
            "usage": self.usage.model_dump(),
            "elapsed_s": round(self.elapsed_s, 3),
            "datasources": self.datasources,
            **({"thread": self.thread} if self.thread is not None else {}),
            **({"files": self.files} if self.files is not None else {}),
        }
