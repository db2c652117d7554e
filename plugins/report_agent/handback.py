"""Hand-back: the calculations a report asks the main agent to run, their budgets and their binding.

A request names a calculation, its steps and its input artifacts; every input
must be a successful SQL or Python artifact of this run (read back, hash
verified, when the request is made). Budgets: ``max_handbacks`` requests per
report in total; ``max_attempts`` Python executions per pending request.

Identity: two requests whose normalised steps (case and spacing folded) and
sorted inputs are equal are one request, pending or completed. Asking again
for a pending one returns it and costs nothing; asking again for a completed
one returns its result artifact and costs nothing (the state counts it in
``dedup_hits`` and on the request's ``asked``); a *different* request after a
completed one costs budget.

Attempts: every Python artifact of the run created after a request was made
counts, in order, against the oldest pending request. The first successful one
whose ``REPORT_RESULT`` is not ``None`` completes it (``result_artifact_id``);
failed or result-less ones spend an attempt; once the attempts are spent the
request is ``exhausted`` and later executions are refused (kept in
``refused_artifacts``, never bound).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from assay.kernel.evidence import open_verified_content, read_artifact_result

from .errors import (
    REPORT_CALC_ATTEMPTS_EXHAUSTED,
    REPORT_CALC_INPUT_FAILED,
    REPORT_CALC_INPUT_KIND,
    REPORT_CALC_INPUT_NOT_FOUND,
    REPORT_CALC_INPUT_OTHER_RUN,
    REPORT_CALC_INVALID,
    REPORT_HANDBACK_BUDGET_SPENT,
    report_error,
)
from .state import CalcRequest, ReportState, fingerprint

BINDABLE_KINDS = ("sql", "python")


def normalise_steps(steps: list[str]) -> list[str]:
    return [" ".join(s.lower().split()) for s in steps if s and s.strip()]


def request_identity(steps: list[str], inputs: list[str]) -> str:
    return fingerprint({"steps": normalise_steps(steps), "inputs": sorted(set(inputs))})


def has_result(catalog: Any, record: Any) -> bool:
    """Whether an artifact holds a structured result a report can bind.

    A successful SQL artifact always does (its rows; zero rows is a result). A
    Python artifact does when its ``REPORT_RESULT`` was set and is not ``None``
    (an empty list is a result); printed output never is.
    """
    if record.status != "succeeded" or record.kind not in BINDABLE_KINDS:
        return False
    if record.kind == "sql":
        return True
    if not record.provenance.get("result_set"):
        return False
    if record.result is not None:
        return True
    if not record.complete:
        return False  # the result was dropped at capture: nothing to bind
    _, content = open_verified_content(catalog, record.artifact_id)
    if not isinstance(content, bytes):
        with open(content, "rb") as fh:
            content = fh.read()
    return json.loads(content).get("result") is not None


def runs_of(run_id: str | tuple[str, ...]) -> tuple[str, ...]:
    """The runs whose evidence a report may use: one run id, or a follow-up's thread and itself."""
    return (run_id,) if isinstance(run_id, str) else tuple(run_id)


def check_inputs(
    catalog: Any, run_id: str | tuple[str, ...], inputs: list[str]
) -> list[dict[str, Any]]:
    """Each input must be a successful SQL or Python artifact of this run; read it back (hash verified)."""
    summary = []
    for artifact_id in inputs:
        record = catalog.get(artifact_id)
        if record is None:
            raise report_error(
                REPORT_CALC_INPUT_NOT_FOUND,
                f"input {artifact_id!r} is not an artifact",
                "Give the ids report_evidence_manifest lists.",
                input=artifact_id,
            )
        if record.run_id not in runs_of(run_id):
            raise report_error(
                REPORT_CALC_INPUT_OTHER_RUN,
                f"input {artifact_id} belongs to run {record.run_id}, not this run",
                "A calculation uses only this run's evidence.",
                input=artifact_id,
            )
        if record.kind not in BINDABLE_KINDS:
            raise report_error(
                REPORT_CALC_INPUT_KIND,
                f"input {artifact_id} is a {record.kind} artifact",
                "Inputs are SQL or Python artifacts (results), not files or charts.",
                input=artifact_id,
            )
        if record.status != "succeeded":
            raise report_error(
                REPORT_CALC_INPUT_FAILED,
                f"input {artifact_id} records a {record.status} {record.kind} execution",
                "Use the artifact of a successful execution.",
                input=artifact_id,
            )
        selected = read_artifact_result(
            catalog,
            artifact_id,
            {"rows": [0, 3]} if record.is_tabular else None,
            max_rows=3,
            max_chars=2000,
        )
        summary.append(
            {
                "artifact_id": artifact_id,
                "kind": record.kind,
                "sha256": record.sha256,
                "row_count": record.row_count,
                "columns": record.columns,
                "summary": record.summary(200),
                "verified": selected.verified,
            }
        )
    return summary


def request_calculation(
    state: ReportState, catalog: Any, run_id: str, name: str, steps: list[str], inputs: list[str]
) -> tuple[CalcRequest, str]:
    """The request and what happened: ``"new"``, ``"pending"`` (asked again) or ``"completed"`` (reused)."""
    name = (name or "").strip()
    clean_steps = [s.strip() for s in steps or [] if s and s.strip()]
    clean_inputs = list(dict.fromkeys(i.strip() for i in inputs or [] if i and i.strip()))
    if not name or not clean_steps or not clean_inputs:
        raise report_error(
            REPORT_CALC_INVALID,
            "a calculation request needs a name, steps and input artifact ids",
            "Name the figure, list the steps to compute it, and give the artifacts it reads.",
        )
    identity = request_identity(clean_steps, clean_inputs)
    for existing in state.requests:
        if existing.identity != identity:
            continue
        if existing.status == "exhausted":
            raise report_error(
                REPORT_CALC_ATTEMPTS_EXHAUSTED,
                f"calculation {existing.name!r} was tried {existing.attempts} times and failed",
                "Do not ask for it again: write the report without it (it is listed as a gap).",
                request_id=existing.request_id,
            )
        existing.asked += 1
        if name != existing.name and name not in existing.names_asked:
            existing.names_asked.append(name)
        state.dedup_hits += 1
        return existing, existing.status
    pending = state.pending()
    if pending is not None:
        raise report_error(
            REPORT_CALC_INVALID,
            f"calculation {pending.name!r} is still pending",
            "One calculation at a time: wait for it to be bound.",
            request_id=pending.request_id,
        )
    if state.handbacks_used >= state.max_handbacks:
        raise report_error(
            REPORT_HANDBACK_BUDGET_SPENT,
            f"this report already handed back {state.handbacks_used} calculations "
            f"(limit {state.max_handbacks})",
            "Write the report from the evidence there is; what is missing becomes a gap.",
        )
    summary = check_inputs(catalog, run_id, clean_inputs)
    request = CalcRequest(
        request_id=f"calc_{len(state.requests) + 1}",
        name=name,
        steps=clean_steps,
        inputs=clean_inputs,
        identity=identity,
        input_summary=summary,
    )
    state.requests.append(request)
    state.handbacks_used += 1
    return request, "new"


def scan_attempts(state: ReportState, catalog: Any, run_id: str) -> list[str]:
    """Count the run's new Python executions against the pending request; notes for the sub-agent's memory."""
    request = state.pending()
    if request is None and state.requests and state.requests[-1].status == "exhausted":
        request = state.requests[-1]  # later executions are refused, and recorded as such
    if request is None:
        return []

    was = request.status

    made = datetime.fromisoformat(request.created_at)
    counted = {a for r in state.requests for a in r.attempt_artifacts + r.refused_artifacts}
    notes = []
    for record in catalog.iter(run_id):
        if record.kind != "python" or record.artifact_id in counted or record.created_at <= made:
            continue
        if request.status != "pending":
            request.refused_artifacts.append(record.artifact_id)
            continue
        request.attempts += 1
        request.attempt_artifacts.append(record.artifact_id)
        if has_result(catalog, record):
            request.status, request.result_artifact_id = "completed", record.artifact_id
            notes.append(
                f"Calculation {request.name!r} ({request.request_id}) is done: cite artifact "
                f"{record.artifact_id} (python; its REPORT_RESULT holds the figure). Read it with "
                "read_artifact_result before citing paths."
            )
        elif request.attempts >= state.max_attempts:
            request.status = "exhausted"
    if request.status == "exhausted" and was == "pending":
        notes.append(
            f"Calculation {request.name!r} ({request.request_id}) could not be computed: "
            f"{request.attempts} attempts failed (limit {state.max_attempts}). Do not ask for it again; "
            "write the report without it (it is listed as a gap)."
        )
    return notes
