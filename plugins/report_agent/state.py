"""Report state: requests, failures, the sub-agent's history and drafts, checkpointed in the run's catalog.

The state lives in the evidence catalog's database (table ``report_state``,
one row per run, next to the artifact records: the SQLite file under
``ASSAY_HOME``, or PostgreSQL with ``ASSAY_CATALOG_URL``), never only in
memory: a process killed mid-report leaves the last checkpoint, and the next
``generate_report`` for the run resumes from it with the same counters.

Every checkpoint is one statement that writes the whole state only if the
stored one is still the checkpoint this state was loaded from (its ``seq``):
a second process that changed the report meanwhile is never overwritten,
the late writer gets ``REPORT_STATE_CONFLICT`` instead. :meth:`ReportStateStore.update`
is the read-modify-write that retries on such a conflict (a counter bumped by
several processes at once loses no increment).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from assay.kernel.database import POSTGRESQL, SQLITE, Database, SQLiteDatabase
from assay.kernel.errors import AssayError
from assay.kernel.evidence import resolve_catalog

REPORT_STATE_CONFLICT = "REPORT_STATE_CONFLICT"

Phase = Literal["precheck", "assembly", "render", "tool_call", "execution", "figures"]
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
    refused_artifacts: list[str] = Field(
        default_factory=list
    )  # executions after the budget was spent
    result_artifact_id: str | None = None
    input_summary: list[dict[str, Any]] = Field(default_factory=list)
    asked: int = 1  # times the sub-agent asked for it (the repeats cost nothing)
    names_asked: list[str] = Field(
        default_factory=list
    )  # other names the same calculation was asked under


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
    figures_refused: int = (
        0  # submissions refused for figures written in the prose (one chance to fix them)
    )
    unbound_figures: list[str] = Field(
        default_factory=list
    )  # the stored report's figures that are not citations
    execution_error: str | None = None
    last_render_error: str | None = None
    stop_code: str | None = None
    stop_message: str | None = None
    outcome: dict[str, bool] = Field(
        default_factory=dict
    )  # the counters' flags, set once at the end

    def pending(self) -> CalcRequest | None:
        return next((r for r in self.requests if r.status == "pending"), None)

    def failures_by_phase(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.failures:
            out[f.phase] = out.get(f.phase, 0) + 1
        return out

    def counters(self, max_steps: int, max_tool_calls: int) -> dict[str, Any]:
        return {
            "handbacks_used": self.handbacks_used,
            "handback_limit": self.max_handbacks,
            "attempt_limit": self.max_attempts,
            "attempts": {r.request_id: r.attempts for r in self.requests},
            "dedup_hits": self.dedup_hits,
            "steps": self.steps,
            "step_budget_per_call": max_steps,
            "tool_calls": self.tool_calls,
            "tool_call_cap": max_tool_calls,
            "failures_by_phase": self.failures_by_phase(),
            "generate_calls": self.generate_calls,
            "checkpoint": self.seq,
            **{k: int(v) for k, v in self.outcome.items()},
        }


_TABLE = """
CREATE TABLE IF NOT EXISTS report_state (
    run_id     TEXT PRIMARY KEY,
    seq        INTEGER NOT NULL,
    status     TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    state      TEXT NOT NULL
);
"""
_SCHEMA = {SQLITE: _TABLE, POSTGRESQL: _TABLE}
SCHEMA_VERSION = 1
# the whole state, only over the checkpoint it was loaded from (or where there is none yet)
_SAVE = (
    "INSERT INTO report_state (run_id, seq, status, updated_at, state) VALUES (?,?,?,?,?) "
    "ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, status = excluded.status, "
    "updated_at = excluded.updated_at, state = excluded.state WHERE report_state.seq = ?"
)


class ReportStateConflict(AssayError):
    code = REPORT_STATE_CONFLICT


class ReportStateStore:
    """Report checkpoints in the catalog database of a run's evidence store."""

    def __init__(self, database: Database | Path) -> None:
        # a path: that SQLite file (how the catalog's own file was named before ASSAY_CATALOG_URL)
        self.db = database if isinstance(database, Database) else SQLiteDatabase(Path(database))

    @classmethod
    def for_run(cls, run: Any) -> ReportStateStore:
        """The store in the catalog of ``run`` (or of a kernel, a sink, a catalog)."""
        return cls(resolve_catalog(run).db)

    def _ready(self) -> Database:
        self.db.ensure(
            "report_state", SCHEMA_VERSION if self.db.dialect == POSTGRESQL else None, _SCHEMA
        )
        return self.db

    def load(self, run_id: str) -> ReportState | None:
        row = (
            self._ready()
            .execute("SELECT state FROM report_state WHERE run_id = ?", (run_id,))
            .fetchone()
        )
        return ReportState.model_validate_json(row[0]) if row else None

    def save(self, state: ReportState) -> None:
        """One checkpoint: the whole state, atomically (``seq`` goes up by one).

        Raises ``REPORT_STATE_CONFLICT`` (and keeps ``seq``) when the stored
        checkpoint is no longer the one ``state`` was loaded from.
        """
        db = self._ready()
        loaded = state.seq
        state.seq += 1
        data = state.model_dump_json()
        try:
            written = db.retry(
                lambda: (
                    db.execute(
                        _SAVE, (state.run_id, state.seq, state.status, now(), data, loaded)
                    ).rowcount
                )
            )
        except BaseException:
            state.seq = loaded
            raise
        if written != 1:
            state.seq = loaded
            raise ReportStateConflict(
                message=f"the report of run {state.run_id!r} was changed by another process since checkpoint "
                f"{loaded} was loaded; this change was not written",
                hint="Only one generate_report per run at a time: call it again, it resumes from the newest "
                "checkpoint.",
                details={"run_id": state.run_id, "loaded_seq": loaded},
            )

    def update(
        self,
        run_id: str,
        change: Callable[[ReportState], None],
        new: Callable[[], ReportState] | None = None,
        attempts: int = 100,
    ) -> ReportState:
        """Load, ``change`` and save the run's state, again from the newest checkpoint after a conflict."""
        for _ in range(attempts):
            state = self.load(run_id) or (new() if new is not None else ReportState(run_id=run_id))
            change(state)
            try:
                self.save(state)
                return state
            except ReportStateConflict:
                continue
        raise ReportStateConflict(
            message=f"the report of run {run_id!r} kept changing under {attempts} attempts",
            hint="Too many processes write this report at once.",
        )

    def all(self) -> list[ReportState]:
        return [
            ReportState.model_validate_json(s)
            for (s,) in self._ready()
            .execute("SELECT state FROM report_state ORDER BY updated_at")
            .fetchall()
        ]

    def close(self) -> None:
        self.db.close()
