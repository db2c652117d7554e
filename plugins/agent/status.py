"""A run's final status, computed from what happened (never from the model's words).

``answered`` needs the last answer to follow at least one successful
evidence-producing call (a result carrying a succeeded artifact), unless the
run needs no evidence (no database attached), and every figure the answer
states to be a value of the run's evidence (:mod:`assay.plugins.figures`): an
answer with a figure not found there is ``answered_unverified``. A run whose
every evidence attempt failed cannot be ``answered``. The last
``generate_report`` result's ``metadata["report_status"]`` folds in: the
worse of the two wins; a report whose prose states a figure that is not a
bound citation (``metadata["unbound_figures"]``) makes the run
``answered_unverified`` at best.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay.kernel.tool_result import ToolResult

    from ..figures import FigureCheck


class RunStatus(str, Enum):
    RUNNING = "running"  # only while the run is going (or its process died: see `assay runs ls`)
    ANSWERED = "answered"
    ANSWERED_UNVERIFIED = (
        "answered_unverified"  # a figure of the answer (or its report) is not in the evidence
    )
    PARTIAL = "partial"
    NEEDS_ANALYSIS = "needs_analysis"
    FAILED = "failed"
    MAX_STEPS = "max_steps"
    MAX_TIME = "max_time"
    MAX_TOKENS = "max_tokens"
    MODEL_UNREACHABLE = "model_unreachable"
    MODEL_FAILED = "model_failed"
    INVALID_INPUT = "invalid_input"
    CANCELLED = "cancelled"

    def __str__(self) -> str:
        return self.value


# The exit code of `assay ask` per status (docs/agent.md). 1 is an internal error, 2 a usage error.
EXIT_CODES: dict[RunStatus, int] = {
    RunStatus.ANSWERED: 0,
    RunStatus.NEEDS_ANALYSIS: 3,
    RunStatus.PARTIAL: 4,
    RunStatus.FAILED: 5,
    RunStatus.MAX_STEPS: 6,
    RunStatus.MAX_TIME: 7,
    RunStatus.MAX_TOKENS: 8,
    RunStatus.MODEL_UNREACHABLE: 9,
    RunStatus.MODEL_FAILED: 10,
    RunStatus.INVALID_INPUT: 11,
    RunStatus.ANSWERED_UNVERIFIED: 12,
    RunStatus.CANCELLED: 130,
    RunStatus.RUNNING: 1,
}

# Model error codes that mean "the server could not be reached in time".
UNREACHABLE_CODES = frozenset({"MODEL_UNREACHABLE", "MODEL_TIMEOUT"})
# Errors of the input, known before the model is asked anything.
INPUT_CODES = frozenset(
    {
        "MODEL_NOT_FOUND",
        "AGENT_QUESTION_EMPTY",
        "SQL_DATASOURCE_UNAVAILABLE",
        "SQL_DATASOURCE_INVALID",
        "SQL_DATASOURCE_NOT_FOUND",
        "SQL_DATASOURCE_PRIVILEGED",
        "CONFIG_INVALID",
    }
)

REPORT_STATUSES = {
    "completed": RunStatus.ANSWERED,
    "partial": RunStatus.PARTIAL,
    "needs_analysis": RunStatus.NEEDS_ANALYSIS,
    "failed": RunStatus.FAILED,
}
_SEVERITY = [
    RunStatus.ANSWERED,
    RunStatus.ANSWERED_UNVERIFIED,
    RunStatus.PARTIAL,
    RunStatus.NEEDS_ANALYSIS,
    RunStatus.FAILED,
]

REPORT_TOOL = "generate_report"
REPORT_TOOLS = (REPORT_TOOL, "render_report")


def is_evidence(result: ToolResult) -> bool:
    """A successful call that captured at least one whole, succeeded artifact."""
    return result.success and any(a.status == "succeeded" for a in result.artifacts)


def is_evidence_attempt(result: ToolResult) -> bool:
    """A call that tried to produce evidence: it captured something, or is a query that failed."""
    return bool(result.artifacts) or result.tool == "sql_query"


def model_error_status(code: str) -> RunStatus:
    if code in UNREACHABLE_CODES:
        return RunStatus.MODEL_UNREACHABLE
    if code in INPUT_CODES:
        return RunStatus.INVALID_INPUT
    return RunStatus.MODEL_FAILED


def answer_status(
    results: Iterable[ToolResult],
    *,
    needs_evidence: bool,
    figures: FigureCheck | None = None,
    cites_thread: bool = False,
) -> tuple[RunStatus, str]:
    """The status of a run that ended with an answer, and why (one line). ``figures`` is the answer's
    figure check (``None``: not checked, the run keeps no evidence); ``cites_thread``: the answer of a
    follow-up cites a verified artifact of its thread (evidence it need not produce again)."""
    results = list(results)
    attempts = [r for r in results if is_evidence_attempt(r)]
    supported = any(is_evidence(r) for r in results) or cites_thread
    sql = [r for r in results if r.tool == "sql_query"]
    if sql and not any(r.success for r in sql) and not supported:
        status, why = RunStatus.FAILED, f"every SQL query failed ({len(sql)})"
    elif supported or not needs_evidence:
        status, why = (
            RunStatus.ANSWERED,
            ("answer follows evidence" if supported else "no evidence needed"),
        )
    elif attempts:
        status, why = RunStatus.FAILED, f"every evidence attempt failed ({len(attempts)})"
    else:
        status, why = RunStatus.NEEDS_ANALYSIS, "answered without any evidence-producing call"
    if status == RunStatus.ANSWERED and figures is not None and not figures.ok:
        status, why = (
            RunStatus.ANSWERED_UNVERIFIED,
            f"not found in the evidence: {figures.listing()}",
        )
    report = last_report_status(results)
    if report is not None:
        folded = REPORT_STATUSES.get(report, RunStatus.FAILED)
        if _SEVERITY.index(folded) > _SEVERITY.index(status):
            status, why = folded, f"the last report says {report}"
    unbound = last_report_unbound(results)
    if unbound and _SEVERITY.index(RunStatus.ANSWERED_UNVERIFIED) > _SEVERITY.index(status):
        status, why = (
            RunStatus.ANSWERED_UNVERIFIED,
            "the report states figures that are not bound citations: " + "; ".join(unbound),
        )
    return status, why


def last_report_unbound(results: Iterable[ToolResult]) -> list[str]:
    """The figures the run's last report (``generate_report`` or ``render_report``) states in its prose
    without a citation (``metadata["unbound_figures"]``)."""
    found: list[str] = []
    for result in results:
        if result.tool in REPORT_TOOLS and result.success:
            found = [str(f) for f in result.metadata.get("unbound_figures") or []]
    return found


def last_report_status(results: Iterable[ToolResult]) -> str | None:
    found = None
    for result in results:
        if result.tool == REPORT_TOOL:
            found = str(
                result.metadata.get("report_status")
                or ("failed" if not result.success else "completed")
            )
    return found
