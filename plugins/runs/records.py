"""What the runs store keeps: one record per run, and its events in order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.kernel.processes import pid_alive


def iso(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class RunRecord(BaseModel):
    """One run: its question, model, status and totals (the events hold the transcript)."""

    model_config = ConfigDict(defer_build=True)

    run_id: str
    question: str = ""
    model: str = ""
    status: str = "running"
    status_reason: str = ""
    error: dict[str, Any] | None = None
    answer: str | None = None
    steps: int = 0
    tool_calls: int = 0
    artifact_ids: list[str] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started_at: float
    ended_at: float | None = None
    pid: int | None = None
    host: str = ""
    summary: dict[str, Any] = Field(default_factory=dict)
    parent_run_id: str | None = (
        None  # the run this one continues (a follow-up question of its thread)
    )

    @property
    def shown_status(self) -> str:
        """The status, or ``interrupted`` for a run whose process ended without finishing it."""
        if self.status != "running":
            return self.status
        import socket

        if self.host == socket.gethostname() and not pid_alive(self.pid):
            return "interrupted"
        return "running"

    @property
    def shown_reason(self) -> str:
        """The status reason; for an ``interrupted`` run, why it is called so (its record has none)."""
        if self.shown_status == "interrupted" and not self.status_reason:
            return (
                f"the process that ran it (pid {self.pid} on {self.host}) ended without finishing it: "
                "killed, crashed or its machine stopped"
            )
        return self.status_reason


class RunEvent(BaseModel):
    """One event of a run, as stored (``seq`` orders them)."""

    model_config = ConfigDict(defer_build=True)

    run_id: str
    seq: int
    kind: str
    step: int = 0
    at: float
    data: dict[str, Any] = Field(default_factory=dict)
