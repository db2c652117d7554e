"""The report sub-agent: its own history, memory and step budget; five tools; nothing else.

Its tools are the three evidence readers the kernel registers
(``report_evidence_manifest``, ``artifact_details`` with at most 12 ids,
``read_artifact_result``) and two of its own that no other agent sees:
``request_report_calculation`` (hand a missing calculation back) and
``submit_report`` (a :class:`~assay.kernel.reports.ReportDocument`, checked by
phase: precheck, assembly, render). It cannot run SQL or Python.

The loop is its own, not :func:`assay.plugins.agent.arun_agent`: it resumes a
checkpointed history, stops the moment the report is handed back or accepted,
checkpoints after every step, and stops early when a failure repeats (the
same error fingerprint ``repeat_limit`` times, or a document already refused).
"""

from __future__ import annotations

import contextvars
import json
from typing import Annotated, Any, Literal

from pydantic import Field

from assay import AssayError, RunContext, ToolResult, tool
from assay.kernel.messages import Message
from assay.kernel.reports import ReportDocument

from .assemble import PhaseError, assemble, render, store_report
from .errors import (
    REPORT_BUDGET_SPENT,
    REPORT_NO_PROGRESS,
    REPORT_NOT_SUBMITTED,
    REPORT_TOOL_NOT_ALLOWED,
)
from .handback import request_calculation
from .precheck import check_document, check_reserved
from .prose import FIGURE_CHANCES, prose_figures, unbound_error
from .state import Failure, Phase, ReportState, fingerprint

EVIDENCE_TOOLS = ("report_evidence_manifest", "artifact_details", "read_artifact_result")
OWN_TOOLS = ("request_report_calculation", "submit_report")
ALLOWED_TOOLS = EVIDENCE_TOOLS + OWN_TOOLS

SYSTEM_PROMPT = """You write the report of one analysis run, from its captured evidence only.
You cannot run SQL or Python. Work like this:
1. report_evidence_manifest lists the run's artifacts; artifact_details (at most 12 ids a call) and
   read_artifact_result (selectors field / rows / path) show exact values. A preview is not the whole result.
2. If the report needs a figure no artifact holds (a total, a rate, a ranking), call request_report_calculation
   with its name, the steps and the input artifact ids. The main agent computes it and you continue later.
   Never compute, estimate or copy a number yourself.
3. Finish with submit_report. Every number is a citation: {"artifact_id", "path"}. A table cites an artifact
   and columns; its rows are read for you. A heading or caption that claims an order ("highest", "top 10")
   needs a sort on that column ({"column", "descending"}), or a table of an already ordered computed result.
   Say how a column's numbers read with formats ({"refund_rate": "percent", "revenue": "currency"}).
   A document that fails a check comes back with the reason: fix that part and submit again.
4. Never write a figure yourself in the title, text, headings, labels or captions: "grew 37%", "$84.20" or
   "1,234 orders" written as text were read from nowhere, and the report is flagged as not verified. Write
   each figure as a {name} placeholder with its citation in cite, or leave it out. (Years and dates are fine.)"""

_SESSION: contextvars.ContextVar[Any] = contextvars.ContextVar("report_session")


@tool(name="request_report_calculation")
def request_report_calculation(
    name: str,
    steps: Annotated[
        list[str], Field(description="How to compute it, one step per item (non-empty).")
    ],
    inputs: Annotated[
        list[str], Field(description="Ids of the successful SQL or Python artifacts it reads.")
    ],
    run: RunContext,
) -> ToolResult:
    """Hand a missing calculation back to the main agent, which computes it and assigns it to REPORT_RESULT.

    Args:
        name: What the figure is, such as "overall refund rate on promoted orders".
    """
    return _SESSION.get().request(name, steps, inputs)


@tool(name="submit_report")
def submit_report(document: ReportDocument, run: RunContext) -> ToolResult:
    """Submit the report. It is checked (citations, table order claims), read from the evidence and rendered.

    Args:
        document: The report: a title and blocks (heading, text with cited placeholders, number, table, image).
    """
    return _SESSION.get().submit(document)


class ReportSession:
    """One sitting of the sub-agent on a run's report state."""

    def __init__(
        self,
        kernel: Any,
        run: Any,
        model: Any,
        state: ReportState,
        store: Any,
        settings: Any,
        catalog: Any,
    ) -> None:
        self.kernel, self.run, self.model = kernel, run, model
        self.state, self.store, self.settings, self.catalog = state, store, settings, catalog
        self.stop: str | None = None  # submitted | handed_back | no_progress | budget | steps
        self.stop_error: AssayError | None = None

    # --- the loop -------------------------------------------------------------------
    def definitions(self) -> list[dict[str, Any]]:
        return self.kernel.tool_definitions("openai", names=EVIDENCE_TOOLS) + [
            request_report_calculation.to_openai(),
            submit_report.to_openai(),
        ]

    def start_messages(self, notes: list[str]) -> None:
        """A first sitting gets the system prompt and the task; a later one gets what changed."""
        if not self.state.messages:
            task = self.state.instructions or "Write the report of this run's analysis."
            self.state.messages = [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": task},
            ]
        if notes:
            self.state.messages.append({"role": "user", "content": "\n".join(notes)})

    async def run_loop(self) -> str:
        token = _SESSION.set(self)
        try:
            messages = [Message.model_validate(m) for m in self.state.messages]
            definitions = self.definitions()
            for _ in range(self.settings.max_steps):
                reply = await self.model.acomplete(list(messages), definitions)
                self.state.steps += 1
                new = [reply]
                if not reply.tool_calls:
                    self.failure(
                        "tool_call",
                        AssayError(
                            REPORT_NOT_SUBMITTED,
                            "the report writer answered in text instead of submitting",
                            "Finish with submit_report (or request_report_calculation).",
                        ),
                    )
                    new.append(
                        Message(
                            role="user",
                            content="Finish by calling submit_report with the report "
                            "document, or request_report_calculation.",
                        )
                    )
                for call in reply.tool_calls:
                    if self.stop is not None:
                        content = f"not run: the report already stopped ({self.stop})"
                    else:
                        content = (await self.call(call.name, call.arguments)).for_model()
                    new.append(
                        Message(role="tool", tool_call_id=call.id, name=call.name, content=content)
                    )
                messages.extend(new)
                self.checkpoint(messages)
                if self.stop is not None:
                    return self.stop
            self.stop = "steps"
            self.stop_error = AssayError(
                REPORT_BUDGET_SPENT,
                f"the report writer used its {self.settings.max_steps} steps without finishing",
            )
            return self.stop
        finally:
            _SESSION.reset(token)

    def checkpoint(self, messages: list[Any]) -> None:
        self.state.messages = [m.model_dump(mode="json", exclude_none=True) for m in messages]
        self.store.save(self.state)

    async def call(self, name: str, arguments: Any) -> ToolResult:
        self.state.tool_calls += 1
        if self.state.tool_calls > self.settings.max_tool_calls:
            self.stop = "budget"
            self.stop_error = AssayError(
                REPORT_BUDGET_SPENT,
                f"the report writer made {self.settings.max_tool_calls} "
                "tool calls (the cap) without finishing",
            )
            return ToolResult.from_error(self.stop_error)
        if name not in ALLOWED_TOOLS:
            error = AssayError(
                REPORT_TOOL_NOT_ALLOWED,
                f"the report writer has no tool {name!r}",
                f"Its tools are: {', '.join(ALLOWED_TOOLS)}.",
            )
            self.failure("tool_call", error)
            return ToolResult.from_error(error)
        if name in EVIDENCE_TOOLS:
            result = await self.kernel.acall_tool(name, arguments, run=self.run)
            if not result.success and result.error_code in (
                "TOOL_ARGUMENTS_INVALID",
                "ARTIFACT_DETAILS_LIMIT",
            ):
                self.failure("tool_call", AssayError(result.error_code, result.message))
            return result
        own = request_report_calculation if name == "request_report_calculation" else submit_report
        try:
            if isinstance(arguments, str):
                arguments = json.loads(arguments or "{}")
            validated = own.validate_arguments(arguments if isinstance(arguments, dict) else {})
        except (AssayError, ValueError) as exc:
            error = (
                exc
                if isinstance(exc, AssayError)
                else AssayError("TOOL_ARGUMENTS_INVALID", str(exc))
            )
            self.failure(
                "tool_call", error, document=arguments if name == "submit_report" else None
            )
            return ToolResult.fail(
                error.code, error.message, error.hint, errors=getattr(error, "errors", []) or []
            )
        try:
            return own.invoke(validated, self.run)
        except AssayError as exc:
            return ToolResult.from_error(exc)

    # --- failures and no-progress ---------------------------------------------------------
    def failure(
        self, phase: Phase, error: AssayError, document: Any = None, block: int | None = None
    ) -> None:
        doc_fp = fingerprint(document) if document is not None else None
        fp = fingerprint(
            {"phase": phase, "code": error.code, "block": block, "message": error.message}
        )
        seen_doc = doc_fp is not None and any(
            f.document_fingerprint == doc_fp for f in self.state.failures
        )
        self.state.failures.append(
            Failure(
                phase=phase,
                code=error.code,
                message=error.message[:500],
                fingerprint=fp,
                document_fingerprint=doc_fp,
            )
        )
        repeats = sum(1 for f in self.state.failures if f.fingerprint == fp)
        if self.stop is None and (seen_doc or repeats >= self.settings.repeat_limit):
            self.stop = "no_progress"
            why = (
                "the same document again" if seen_doc else f"the same {phase} error {repeats} times"
            )
            self.stop_error = AssayError(
                REPORT_NO_PROGRESS,
                f"no progress: {why} ({error.code}: {error.message[:200]})",
                "Stop calling generate_report for this run; the checkpoint and the "
                "last draft are kept.",
            )

    # --- the two own tools ---------------------------------------------------------------
    def request(self, name: str, steps: list[str], inputs: list[str]) -> ToolResult:
        try:
            request, what = request_calculation(
                self.state, self.catalog, self.run.evidence_runs(), name, steps, inputs
            )
        except AssayError as exc:
            self.failure("tool_call", exc)
            self.store.save(self.state)
            return ToolResult.from_error(exc)
        data = request.model_dump(mode="json")
        if what == "completed":
            self.store.save(self.state)
            return ToolResult.ok(
                data,
                content=f"Already computed ({request.request_id}, same steps and inputs): "
                f"cite artifact {request.result_artifact_id}.",
            )
        self.stop = "handed_back"
        self.store.save(self.state)
        again = " (already pending: nothing more was spent)" if what == "pending" else ""
        return ToolResult.ok(
            data,
            content=f"Handed back to the main agent as {request.request_id}{again}. "
            "Stop here; you will continue when the result is bound.",
        )

    def submit(self, document: ReportDocument) -> ToolResult:
        raw = document.model_dump(mode="json")
        self.state.draft, self.state.draft_fingerprint = raw, fingerprint(raw)
        missing = [r.name for r in self.state.requests if r.status == "exhausted"]
        try:
            try:
                check_reserved(document)
            except AssayError as exc:
                raise PhaseError("precheck", exc) from None
            problems = check_document(document, self.catalog, self.run.evidence_runs())
            if problems:
                first_block, first = problems[0]
                listing = "; ".join(f"block {b}: {e.code}: {e.message}" for b, e in problems)
                raise PhaseError(
                    "precheck", AssayError(first.code, listing, first.hint), first_block
                )
            assembled = assemble(
                document, self.catalog, self.run.evidence_runs(), missing_calculations=missing
            )
            unbound = prose_figures(assembled.document, self.run)
            if unbound and self.state.figures_refused < FIGURE_CHANCES:
                self.state.figures_refused += 1
                raise PhaseError("figures", unbound_error(unbound))
            data, citations = render(
                assembled.document,
                self.catalog,
                self.run,
                status="partial" if missing else "completed",
                draft=False,
            )
        except PhaseError as exc:
            self.failure(exc.phase, exc.error, document=raw, block=exc.block)
            self.store.save(self.state)
            return ToolResult.fail(exc.code, exc.text())
        status: Literal["partial", "completed"] = "partial" if missing else "completed"
        warnings = assembled.warnings + [f.warning() for f in unbound]
        self.state.report_artifact_id = store_report(
            self.run,
            data,
            citations,
            assembled.document,
            status=status,
            formal=not missing,
            warnings=warnings,
            unbound=[f.describe() for f in unbound],
        )
        self.state.formal, self.state.status, self.state.warnings = not missing, status, warnings
        self.state.unbound_figures = [f.describe() for f in unbound]
        self.state.last_render_error = None
        self.stop = "submitted"
        self.store.save(self.state)
        gaps = f" with {len(assembled.warnings)} gap(s)" if assembled.warnings else ""
        if unbound:
            gaps += (
                f", FLAGGED: {len(unbound)} figure(s) written in the prose are not bound citations "
                f"({'; '.join(f.describe() for f in unbound)})"
            )
        return ToolResult.ok(
            {"artifact_id": self.state.report_artifact_id},
            content=f"Report accepted{gaps}: artifact {self.state.report_artifact_id}.",
        )
