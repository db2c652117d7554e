"""``generate_report``: the main agent's report tool, and the outcome it returns.

Each call starts or resumes the report of the run from its checkpoint:

1. a finished report (``completed``, ``partial``, ``failed``) is returned as it is: calling again costs nothing;
2. before the first sitting, a run with no bindable result gets ``needs_analysis`` (no sub-agent started);
3. the run's new Python executions are counted against a pending calculation request; still pending ->
   ``needs_analysis`` with the request (no budget spent), done -> its artifact is bound (noted in the
   sub-agent's memory), attempts spent -> the request is exhausted and becomes a gap;
4. the sub-agent sits (own history, ``max_steps`` turns, ``timeout_s``) until it submits, hands back or stops;
5. if it raised or timed out, the last draft is rendered deterministically (``partial``, never formal) or,
   when nothing of it can be verified, the outcome is ``failed`` with ``retryable: false``.

The final status comes from the real report and error state. The outcome's
counters carry the budgets and, once the report is final, one flag of each
kind the scenario suite counts (``recovered_by_handback``,
``delivered_with_gaps``, ``stopped_failed``, ``completed_clean``).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from pydantic import BaseModel, Field

from assay import AssayError, RunContext, ToolResult, tool
from assay.kernel.evidence import open_verified_content, resolve_catalog
from assay.kernel.log import get_logger
from assay.kernel.reports import ReportDocument, TextBlock
from assay.kernel.tool_result import ArtifactRef

from .assemble import PhaseError, assemble, render, store_report
from .errors import (
    REPORT_NEEDS_RESULT,
    REPORT_NO_MODEL,
    REPORT_NOT_RENDERABLE,
    REPORT_SUBAGENT_FAILED,
    REPORT_SUBAGENT_TIMEOUT,
)
from .handback import scan_attempts
from .precheck import needs_result
from .prose import prose_figures
from .settings import ReportAgentSettings
from .state import ReportState, ReportStateStore
from .subagent import ReportSession

log = get_logger("assay.report_agent")
MODEL_KEY = "report_agent.model"
OutcomeStatus = Literal["completed", "needs_analysis", "partial", "failed"]


class ReportOutcome(BaseModel):
    """What ``generate_report`` returns (``ToolResult.data``; the status also in ``metadata.report_status``).

    ``retryable`` is true only for ``needs_analysis`` (do the analysis, then call again); a finished
    report (completed, partial, failed) is returned as it is by every later call.
    """

    run_id: str
    status: OutcomeStatus
    retryable: bool
    message: str
    error_code: str | None = None
    report_artifact_id: str | None = None
    formal: bool = False
    report: str | None = None
    warnings: list[str] = Field(default_factory=list)
    unbound_figures: list[str] = Field(
        default_factory=list
    )  # figures in the prose that are not citations
    pending_request: dict[str, Any] | None = None
    counters: dict[str, Any] = Field(default_factory=dict)
    execution_error: str | None = None
    last_render_error: str | None = None


def use_report_model(run: RunContext, model: Any) -> None:
    """Give this run's report sub-agent its own model (else ``ASSAY_REPORT_MODEL``, else the run's model)."""
    run.discard(MODEL_KEY)  # a later call replaces the earlier choice
    run.scoped(MODEL_KEY, lambda: model)


def _settings(kernel: Any):
    return kernel.settings.section("report", ReportAgentSettings)


def _model(kernel: Any, run: RunContext, settings: Any) -> Any:
    chosen = run.peek(MODEL_KEY)
    if chosen is not None:
        return chosen
    if settings.model:
        provider, _, name = settings.model.partition(":")
        return kernel.model(provider, model=name) if name else kernel.model(provider)
    return run.model


def generate(run: RunContext, instructions: str = "") -> ReportOutcome:
    """Start or resume the run's report; see the module docstring."""

    kernel = run.kernel
    settings = _settings(kernel)
    catalog = resolve_catalog(run)
    store = ReportStateStore.for_run(run)
    state = store.load(run.run_id) or ReportState(
        run_id=run.run_id,
        max_handbacks=settings.max_handbacks,
        max_attempts=settings.max_attempts,
        instructions=instructions,
    )
    state.generate_calls += 1
    if state.status in ("completed", "partial", "failed"):
        store.save(state)
        return _outcome(
            state, settings, catalog, "the report was already finished; nothing was run again"
        )
    if state.status == "new":
        reason = needs_result(catalog, run.evidence_runs())
        if reason is not None:
            store.save(state)
            return _outcome(
                state, settings, catalog, reason, status="needs_analysis", code=REPORT_NEEDS_RESULT
            )
    notes = scan_attempts(state, catalog, run.run_id)
    state.memory.extend(notes)
    pending = state.pending()
    if pending is not None:
        state.status = "needs_analysis"
        store.save(state)
        return _outcome(state, settings, catalog, _ask(pending, state), status="needs_analysis")
    try:
        model = _model(kernel, run, settings)
    except AssayError as exc:  # e.g. ASSAY_REPORT_MODEL names no registered model
        model = None
        state.execution_error = f"{REPORT_NO_MODEL}: {exc.code}: {exc.message}"[:1000]
    session = ReportSession(kernel, run, model, state, store, settings, catalog)
    session.start_messages(notes)
    state.status = "running"
    store.save(state)
    if model is None:
        state.execution_error = state.execution_error or (
            f"{REPORT_NO_MODEL}: no model for the report writer (ASSAY_REPORT_MODEL or the run's)"
        )
        return _fallback(state, store, settings, catalog, run)
    try:
        stop = _run_bounded(session.run_loop(), settings.timeout_s)
    except TimeoutError:
        state.execution_error = (
            f"{REPORT_SUBAGENT_TIMEOUT}: the report writer ran past {settings.timeout_s} s"
        )
        return _fallback(state, store, settings, catalog, run)
    except Exception as exc:  # noqa: BLE001 - any failure of the writer: the saved content is rendered instead
        code = getattr(exc, "code", None)
        state.execution_error = (
            f"{REPORT_SUBAGENT_FAILED}: {code + ': ' if code else ''}{type(exc).__name__}: {exc}"[
                :1000
            ]
        )
        return _fallback(state, store, settings, catalog, run)
    if stop == "submitted":
        if state.unbound_figures:
            return _finish(
                state,
                store,
                settings,
                catalog,
                "the report was kept FLAGGED: its prose states "
                f"figures that are not bound citations ({'; '.join(state.unbound_figures)})",
            )
        return _finish(state, store, settings, catalog, "the report passed every check")
    if stop == "handed_back":
        state.status = "needs_analysis"
        store.save(state)
        return _outcome(
            state, settings, catalog, _ask(state.pending(), state), status="needs_analysis"
        )
    error = session.stop_error
    assert error is not None  # every other stop (steps, budget, no_progress) sets it
    state.status, state.stop_code, state.stop_message = "failed", error.code, error.message
    return _finish(state, store, settings, catalog, error.message)


def _run_bounded(coro: Any, timeout: float) -> Any:
    """Run ``coro`` within ``timeout`` seconds and return at the deadline even if a model call still hangs in
    its worker thread (``asyncio.run`` would wait for that thread; this executor is not waited for)."""
    loop = asyncio.new_event_loop()
    executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="report-writer")
    loop.set_default_executor(executor)
    try:
        return loop.run_until_complete(asyncio.wait_for(coro, timeout))
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            executor.shutdown(wait=False, cancel_futures=True)
            loop.close()


def _ask(request: Any, state: ReportState) -> str:
    steps = "\n".join(f"  {i}. {s}" for i, s in enumerate(request.steps, 1))
    left = state.max_attempts - request.attempts
    return (
        f"The report needs a calculation the run has not done: {request.name!r} ({request.request_id}).\n"
        f"Steps:\n{steps}\nInputs: {', '.join(request.inputs)}\n"
        f"Run it with code_interpreter (inputs={request.inputs}), assigning only this result to REPORT_RESULT "
        f"(printing it is not enough), then call generate_report again. Attempts left: {left} of "
        f"{state.max_attempts}; hand-backs used: {state.handbacks_used} of {state.max_handbacks}."
    )


def _fallback(
    state: ReportState, store: Any, settings: Any, catalog: Any, run: RunContext
) -> ReportOutcome:
    """The sub-agent raised or timed out: render the saved draft deterministically, or fail for good."""

    missing = [r.name for r in state.requests if r.status == "exhausted"]
    try:
        if state.draft is None:
            raise PhaseError(
                "render",
                AssayError(REPORT_NOT_RENDERABLE, "no draft was saved before the writer stopped"),
            )
        raw = dict(state.draft)
        for reserved in ("gaps", "status", "draft"):
            raw.pop(reserved, None)
        doc = ReportDocument.coerce(raw)
        assembled = assemble(
            doc, catalog, run.evidence_runs(), lenient=True, missing_calculations=missing
        )
        if assembled.verified_parts == 0:
            raise PhaseError(
                "render",
                AssayError(
                    REPORT_NOT_RENDERABLE, "no value, table or chart of the draft could be verified"
                ),
            )
        note = TextBlock(
            text=f"PARTIAL REPORT: the report writer stopped before finishing "
            f"({(state.execution_error or '').split(':')[0]}); this is its last draft, rendered "
            "from verified evidence only. It is not the formal report."
        )
        assembled.document.blocks.insert(0, note)
        for gap in assembled.document.gaps:
            gap.block += 1
        data, citations = render(assembled.document, catalog, run, status="partial", draft=True)
    except Exception as exc:  # noqa: BLE001 - a PhaseError, or a bug in the render itself: failed, said so
        if isinstance(exc, PhaseError):
            state.last_render_error = f"{exc.code}: {exc.error.message}"[:1000]
            state.stop_message = "the writer failed and its saved content cannot be rendered"
        else:
            log.error(
                "report.fallback_render_failed",
                run_id=run.run_id,
                error=f"{type(exc).__name__}: {exc}",
            )
            state.last_render_error = (
                f"{REPORT_NOT_RENDERABLE}: internal error: {type(exc).__name__}: {exc}"[:1000]
            )
            state.stop_message = (
                "the writer failed and rendering its saved content hit an internal error"
            )
        state.status, state.stop_code = "failed", REPORT_NOT_RENDERABLE
        return _finish(state, store, settings, catalog, state.stop_message)
    unbound = prose_figures(assembled.document, run)
    warnings = assembled.warnings + [f.warning() for f in unbound]
    state.report_artifact_id = store_report(
        run,
        data,
        citations,
        assembled.document,
        status="partial",
        formal=False,
        warnings=warnings,
        unbound=[f.describe() for f in unbound],
    )
    state.status, state.formal, state.warnings = "partial", False, warnings
    state.unbound_figures = [f.describe() for f in unbound]
    return _finish(
        state,
        store,
        settings,
        catalog,
        "the writer stopped; its last draft was rendered as a partial report",
    )


def _finish(
    state: ReportState, store: Any, settings: Any, catalog: Any, message: str
) -> ReportOutcome:
    delivered = state.status in ("completed", "partial")
    recovered = any(r.status == "completed" for r in state.requests)
    state.outcome = {
        "recovered_by_handback": delivered and recovered,
        "delivered_with_gaps": delivered and (bool(state.warnings) or state.status == "partial"),
        "stopped_failed": state.status == "failed",
        "completed_clean": state.status == "completed" and not state.warnings and not recovered,
    }
    store.save(state)
    return _outcome(state, settings, catalog, message)


def _outcome(
    state: ReportState,
    settings: Any,
    catalog: Any,
    message: str,
    *,
    status: OutcomeStatus | None = None,
    code: str | None = None,
) -> ReportOutcome:
    shown = status or state.status
    if shown not in ("completed", "needs_analysis", "partial", "failed"):  # new, running
        raise ValueError(f"a report in state {shown!r} has no outcome yet")
    status = shown
    report = None
    if state.report_artifact_id and status in ("completed", "partial"):
        _, content = open_verified_content(catalog, state.report_artifact_id)
        report = (content if isinstance(content, bytes) else open(content, "rb").read()).decode(
            "utf-8"
        )  # noqa: SIM115
    pending = state.pending()
    failed = status == "failed"
    return ReportOutcome(
        run_id=state.run_id,
        status=status,
        retryable=status == "needs_analysis",
        message=message,
        error_code=code or (state.stop_code if failed else None),
        report_artifact_id=state.report_artifact_id,
        formal=state.formal,
        report=report,
        warnings=state.warnings,
        unbound_figures=state.unbound_figures if status in ("completed", "partial") else [],
        pending_request=pending.model_dump(mode="json")
        if pending is not None and status == "needs_analysis"
        else None,
        counters=state.counters(settings.max_steps, settings.max_tool_calls),
        execution_error=state.execution_error,
        last_render_error=state.last_render_error,
    )


def counters_line(c: dict[str, Any]) -> str:
    """The counters in one short line (kept in the run's record: ``assay runs show`` prints it)."""
    attempts = ", ".join(
        f"{k} {v}/{c.get('attempt_limit')}" for k, v in (c.get("attempts") or {}).items()
    )
    failures = (
        ", ".join(f"{k} {v}" for k, v in (c.get("failures_by_phase") or {}).items()) or "none"
    )
    flags = [
        k
        for k in (
            "recovered_by_handback",
            "delivered_with_gaps",
            "stopped_failed",
            "completed_clean",
        )
        if c.get(k)
    ]
    return (
        f"hand-backs {c.get('handbacks_used')}/{c.get('handback_limit')}"
        + (f" (attempts {attempts})" if attempts else "")
        + f", tool calls {c.get('tool_calls')}/{c.get('tool_call_cap')}, failures {failures}"
        + (f", outcome {' + '.join(flags)}" if flags else "")
    )[:290]


def outcome_result(outcome: ReportOutcome) -> ToolResult:
    """The outcome as the main agent sees it."""
    meta = {
        "report_status": outcome.status,
        "retryable": outcome.retryable,
        "counters": outcome.counters,
        "report_counters": counters_line(outcome.counters),
        "unbound_figures": outcome.unbound_figures,
    }
    data = outcome.model_dump(mode="json")
    refs = []
    if outcome.report_artifact_id:
        refs = [ArtifactRef(artifact_id=outcome.report_artifact_id, kind="report")]
    if outcome.status == "failed":
        return ToolResult.fail(
            outcome.error_code or REPORT_NOT_RENDERABLE,
            f"report failed: {outcome.message}",
            "Stop calling generate_report for this run: it will not succeed by retrying. "
            "The checkpoint and the last draft are kept.",
            data=data,
            metadata=meta,
            artifacts=refs,
        )
    if outcome.status == "needs_analysis":
        return ToolResult.ok(data, content=f"needs_analysis: {outcome.message}", metadata=meta)
    head = (
        "Report completed"
        if outcome.status == "completed"
        else "PARTIAL report (not the formal report)"
    )
    if outcome.unbound_figures:
        head += (
            ", FLAGGED as not verified: its prose states figures that are not bound citations ("
            + "; ".join(outcome.unbound_figures)
            + ")"
        )
    warn = "".join(f"\nwarning: {w}" for w in outcome.warnings)
    return ToolResult.ok(
        data,
        content=f"{head}: artifact {outcome.report_artifact_id}.{warn}\n\n{outcome.report}",
        metadata=meta,
        artifacts=refs,
    )


@tool
def generate_report(run: RunContext, instructions: str = "") -> ToolResult:
    """Write (or resume) this run's report with the report writer, from the run's captured evidence.

    Returns status completed, needs_analysis (a calculation to run first: do it with code_interpreter,
    assigning the result to REPORT_RESULT, then call again), partial or failed (stop calling).

    Args:
        instructions: What the report should cover (the question, the figures that matter).
    """
    if run.artifacts is None:
        return ToolResult.fail(
            "REPORT_NO_EVIDENCE",
            "this run captures no artifacts, so nothing can be cited",
            "Start the run with capture enabled.",
            metadata={"report_status": "failed"},
        )
    try:
        return outcome_result(generate(run, instructions))
    except (
        AssayError
    ) as exc:  # the evidence store or the checkpoint failed: still an honest report status
        return ToolResult.from_error(exc, metadata={"report_status": "failed", "retryable": False})
