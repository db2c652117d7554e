"""Report state: requests, failures, the sub-agent's history and drafts, checkpointed in the run's catalog.

The state lives in the evidence catalog's SQLite database (table
``report_state``, one row per run, under ``ASSAY_HOME`` next to the artifact
records), never only in memory: a process killed mid-report leaves the last
checkpoint, and the next ``generate_report`` for the run resumes from it with
the same counters. Every change is one ``UPDATE`` in its own transaction.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

Phase = Literal["precheck", "assembly", "render", "tool_call", "execution"]
Status = Literal["new", "running", "needs_analysis", "completed", "partial", "failed"]


def now() -> str:
    return datetime.now(UTC).isoformat()


def fingerprint(value: Any) -> str:
    """A short stable hash of a JSON-able value (an error, a document)."""
    data = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()[:16]


class CalcRequest(BaseModel):
    """One hand-back: a calculation the report needs and the main agent must run."""

    request_id: str
    name: str
    steps: list[str]
    inputs: list[str]
    identity: str  # hash of the normalised steps and sorted inputs
    status: Literal["pending", "completed", "exhausted"] = "pending"
    created_at: str = Field(default_factory=now)
    attempts: int = 0  # Python executions counted against this request
    attempt_artifacts: list[str] = Field(default_factory=list)
    refused_artifacts: list[str] = Field(default_factory=list)  # executions after the budget was spent
    result_artifact_id: str | None = None
    input_summary: list[dict[str, Any]] = Field(default_factory=list)
    asked: int = 1  # times the sub-agent asked for it (the repeats cost nothing)
    names_asked: list[str] = Field(default_factory=list)  # other names the same calculation was asked under


class Failure(BaseModel):
    phase: Phase
    code: str
    message: str
    fingerprint: str
    document_fingerprint: str | None = None
    at: str = Field(default_factory=now)


class ReportState(BaseModel):
    """Everything a report of one run has done so far; the checkpoint."""

    run_id: str
    status: Status = "new"
    seq: int = 0  # checkpoint number
    instructions: str = ""
    max_handbacks: int = 3
    max_attempts: int = 3
    handbacks_used: int = 0
    dedup_hits: int = 0
    requests: list[CalcRequest] = Field(default_factory=list)
    messages: list[dict[str, Any]] = Field(default_factory=list)  # the sub-agent's own history
    memory: list[str] = Field(default_factory=list)  # notes the sub-agent keeps across hand-backs
    steps: int = 0
    tool_calls: int = 0
    generate_calls: int = 0
    failures: list[Failure] = Field(default_factory=list)
    draft: dict[str, Any] | None = None  # the last document the sub-agent submitted (any validity)
    draft_fingerprint: str | None = None
    report_artifact_id: str | None = None
    formal: bool = False  # a formal report passed every check; a partial one is a fallback render
    warnings: list[str] = Field(default_factory=list)
    execution_error: str | None = None
    last_render_error: str | None = None
    stop_code: str | None = None
    stop_message: str | None = None
    outcome: dict[str, bool] = Field(default_factory=dict)  # the counters' flags, set once at the end

    def pending(self) -> CalcRequest | None:
        return next((r for r in self.requests if r.status == "pending"), None)

    def failures_by_phase(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.failures:
            out[f.phase] = out.get(f.phase, 0) + 1
        return out

    def counters(self, max_steps: int, max_tool_calls: int) -> dict[str, Any]:
        return {
            "handbacks_used": self.handbacks_used, "handback_limit": self.max_handbacks,
            "attempt_limit": self.max_attempts,
            "attempts": {r.request_id: r.attempts for r in self.requests},
            "dedup_hits": self.dedup_hits, "steps": self.steps, "step_budget_per_call": max_steps,
            "tool_calls": self.tool_calls, "tool_call_cap": max_tool_calls,
            "failures_by_phase": self.failures_by_phase(), "generate_calls": self.generate_calls,
            "checkpoint": self.seq, **{k: int(v) for k, v in self.outcome.items()},
        }


_SCHEMA = """
CREATE TABLE IF NOT EXISTS report_state (
    run_id     TEXT PRIMARY KEY,
    seq        INTEGER NOT NULL,
    status     TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    state      TEXT NOT NULL
);
"""


class ReportStateStore:
    """Report checkpoints in the catalog database of a run's evidence store."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()

    @classmethod
    def for_run(cls, run: Any) -> ReportStateStore:
        from assay.kernel.evidence import resolve_catalog

        return cls(resolve_catalog(run).path)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=60000")
        conn.executescript(_SCHEMA)
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def load(self, run_id: str) -> ReportState | None:
        row = self._conn().execute("SELECT state FROM report_state WHERE run_id = ?", (run_id,)).fetchone()
        return ReportState.model_validate_json(row[0]) if row else None

    def save(self, state: ReportState) -> None:
        """One checkpoint: the whole state, atomically (``seq`` goes up by one)."""
        state.seq += 1
        self._conn().execute(
            "INSERT INTO report_state (run_id, seq, status, updated_at, state) VALUES (?,?,?,?,?) "
            "ON CONFLICT(run_id) DO UPDATE SET seq=excluded.seq, status=excluded.status, "
            "updated_at=excluded.updated_at, state=excluded.state",
            (state.run_id, state.seq, state.status, now(), state.model_dump_json()))

    def all(self) -> list[ReportState]:
        return [ReportState.model_validate_json(s) for (s,) in
                self._conn().execute("SELECT state FROM report_state ORDER BY updated_at")]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
        self._local.conn = None
