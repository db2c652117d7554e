"""The main agent loop: ask the model, run the tools it calls, until it answers or a bound is hit.

Each turn: compact the conversation when it nears the run's token budget,
ask the model (streamed text goes to ``text`` events), run the turn's tool
calls (:mod:`.dispatch`), and give the model each result as its bounded
preview plus artifact ids. The run ends with an answer, a bound
(``max_steps``, ``max_time``, ``max_tokens``), a model error, or a
cancellation; its status is computed from what happened (:mod:`.status`).
Observers see every step as it happens (the runs store writes them down).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from assay.kernel.errors import AssayError
from assay.kernel.log import get_logger
from assay.kernel.messages import Message, ToolCall, Usage
from assay.kernel.models import Model
from assay.kernel.resources import Resource
from assay.kernel.tool_result import ToolResult

from .compaction import ToolMessageInfo, compact, message_chars, tokens_for
from .dispatch import run_tool_calls
from .prompt import build_system_prompt, needs_evidence as resources_need_evidence
from .settings import AgentSettings
from .status import RunStatus, answer_status, model_error_status
from .transcript import AgentEvent, AgentObserver, Compaction, RunError, ToolCallRecord, Transcript

if TYPE_CHECKING:
    from assay.kernel.context import RunContext
    from assay.kernel.protocols import KernelAPI as Kernel

    from ..figures import FigureCheck
    from .thread import ThreadContext

log = get_logger("assay.agent")

AGENT_QUESTION_EMPTY = "AGENT_QUESTION_EMPTY"
AGENT_ANSWER_EMPTY = "AGENT_ANSWER_EMPTY"
MODEL_ERROR = "MODEL_ERROR"


def agent_settings(kernel: Kernel) -> AgentSettings:
    return kernel.settings.section("agent", AgentSettings)


def model_label(model: Model) -> str:
    """``provider:name`` for the run record (the name when the model says which)."""
    provider = getattr(type(model), "model_id", "") or type(model).__name__
    name = getattr(getattr(model, "settings", None), "model", None) or getattr(
        model, "model_name", None
    )
    return f"{provider}:{name}" if name else provider


class AgentRun:
    """One run of the loop (:func:`arun_agent` makes one and awaits :meth:`execute`)."""

    def __init__(
        self,
        kernel: Kernel,
        model: Model,
        run: RunContext,
        question: str,
        *,
        settings: AgentSettings,
        resources: list[Resource],
        tools: Iterable[str] | None,
        observers: Iterable[AgentObserver],
        needs_evidence: bool | None,
        model_name: str,
        thread: ThreadContext | None = None,
        datasources: Iterable[str] = (),
        files: dict[str, Any] | None = None,
    ) -> None:
        self.kernel, self.model, self.run, self.settings = kernel, model, run, settings
        self.thread = thread
        if thread is not None:
            run.continue_thread(thread.run_ids)
        self.resources = resources
        self.allowed = frozenset(tools) if tools is not None else None
        self.observers = list(observers)
        self.needs_evidence = (
            resources_need_evidence(resources) if needs_evidence is None else needs_evidence
        )
        self.transcript = Transcript(
            run_id=run.run_id,
            question=question,
            model=model_name or model_label(model),
            datasources=list(datasources),
            thread=thread.record() if thread is not None else None,
            files=files,
        )
        self.infos: dict[str, ToolMessageInfo] = {}
        self._reported = (
            0,
            0,
        )  # (tokens the provider last reported for the conversation, messages then)
        self._chars: list[
            int
        ] = []  # each message's size, kept beside the conversation (estimates stay O(1))
        self._corrections = 0  # times the model was asked to correct an answer's figures
        self._unverified: tuple[str, FigureCheck] | None = (
            None  # the answer a correction was asked for
        )

    # --- events -------------------------------------------------------------

    def emit(self, kind: Any, **data: Any) -> None:
        if not self.observers:
            return
        event = AgentEvent(kind, self.run.run_id, self.transcript.steps, data)
        for observer in self.observers:
            try:
                observer(event)
            except Exception as exc:  # noqa: BLE001 - an observer must not end the run
                log.warning(
                    "agent_observer_failed", run_id=self.run.run_id, kind=kind, error=repr(exc)
                )

    def add(self, message: Message, **extra: Any) -> None:
        self.transcript.messages.append(message)
        self._chars.append(message_chars(message))
        self.emit("message", message=message.model_dump(exclude_none=True), **extra)

    def finish(
        self, status: RunStatus, reason: str = "", error: RunError | None = None
    ) -> Transcript:
        t = self.transcript
        t.status, t.status_reason, t.error, t.ended_at = status, reason, error, time.time()
        self.emit("run_finished", summary=t.summary())
        return t

    def limit(self, name: str, value: Any, **detail: Any) -> None:
        hit = {"limit": name, "value": value, "step": self.transcript.steps, **detail}
        self.transcript.limits_hit.append(hit)
        self.emit("limit", **hit)

    # --- the loop -----------------------------------------------------------

    async def execute(self) -> Transcript:
        t = self.transcript
        question = t.question
        self.run.model = self.model
        self.emit(
            "run_started",
            question=question,
            model=t.model,
            settings=self.settings.model_dump(),
            needs_evidence=self.needs_evidence,
            tools=sorted(self.allowed) if self.allowed is not None else None,
            datasources=t.datasources,
            **({"thread": t.thread} if t.thread is not None else {}),
        )
        if not question or not question.strip():
            return self.finish(
                RunStatus.INVALID_INPUT,
                "empty question",
                RunError(
                    code=AGENT_QUESTION_EMPTY,
                    message="the question is empty",
                    hint="Ask a question in words.",
                ),
            )
        try:
            async with asyncio.timeout(self.settings.max_wall_s) as deadline:
                return await self._loop()
        except TimeoutError:
            if not deadline.expired():
                raise
            self.limit("max_wall_s", self.settings.max_wall_s)
            return self.finish(
                RunStatus.MAX_TIME, f"the run took longer than {self.settings.max_wall_s:g} s"
            )
        except asyncio.CancelledError:
            self.finish(RunStatus.CANCELLED, "cancelled")
            raise

    async def _loop(self) -> Transcript:
        t, s = self.transcript, self.settings
        system = build_system_prompt(
            self.kernel,
            self.resources,
            s,
            t.question,
            thread=self.thread.prompt if self.thread is not None else "",
        )
        definitions = self.kernel.tool_definitions(
            "openai", names=sorted(self.allowed) if self.allowed is not None else None
        )
        self.add(Message(role="system", content=system))
        self.add(Message(role="user", content=t.question))
        on_text = self._on_text if self.observers else None
        for step in range(1, s.max_steps + 1):
            t.steps = step
            if not self._within_budget():
                return self.finish(
                    RunStatus.MAX_TOKENS,
                    "the conversation is over the run's token budget even after compaction",
                )
            self.emit("model_request", tokens=self._tokens())
            try:
                reply = await self.model.acomplete(list(t.messages), definitions, on_text=on_text)
            except AssayError as exc:
                status = model_error_status(exc.code)
                return self.finish(
                    status,
                    f"the model call failed: {exc.code}",
                    RunError(code=exc.code, message=exc.message, hint=exc.hint),
                )
            except Exception as exc:  # noqa: BLE001 - a provider's bug ends the run with its name, not a traceback
                return self.finish(
                    RunStatus.MODEL_FAILED,
                    "the model call failed",
                    RunError(
                        code=MODEL_ERROR,
                        message=f"{type(exc).__name__}: {exc}",
                        hint="A bug or an unexpected answer in the model provider; see the debug log.",
                    ),
                )
            self._count(reply)
            self.add(reply)
            if not reply.tool_calls:
                ended = await self._answered(reply)
                if ended is not None:
                    return ended
                continue  # the model was asked to correct or cite its figures

            results = await run_tool_calls(
                self.kernel,
                self.run,
                reply.tool_calls,
                allowed=self.allowed,
                max_calls=s.max_tool_calls_per_turn,
                started=self._started,
                finished=self._finished,
            )
            order = {
                call.id: i for i, call in enumerate(reply.tool_calls)
            }  # records in the model's order
            t.calls = [c for c in t.calls if c.step != step] + sorted(
                (c for c in t.calls if c.step == step),
                key=lambda c: order.get(c.call_id, len(order)),
            )
            if len(reply.tool_calls) > s.max_tool_calls_per_turn:
                self.limit(
                    "max_tool_calls_per_turn",
                    s.max_tool_calls_per_turn,
                    asked=len(reply.tool_calls),
                )
            for call, result in zip(reply.tool_calls, results):
                t.tool_results.append(result)
                self.add(
                    Message(
                        role="tool",
                        tool_call_id=call.id,
                        name=call.name,
                        content=self._for_model(result),
                    ),
                    artifact_ids=[a.artifact_id for a in result.artifacts],
                )
        self.limit("max_steps", s.max_steps)
        if (
            self._unverified is not None
        ):  # the correction asked for never came: the answer given stands, flagged
            answer, figures = self._unverified
            t.answer, t.figures = answer, figures.to_dict()
            status, why = answer_status(
                t.tool_results,
                needs_evidence=self.needs_evidence,
                figures=figures,
                cites_thread=self._cites_thread(t.answer),
            )
            return self.finish(
                status, f"{why} (no corrected answer within {s.max_steps} model turns)"
            )
        return self.finish(RunStatus.MAX_STEPS, f"no answer after {s.max_steps} model turns")

    async def _answered(self, reply: Message) -> Transcript | None:
        """The run's end with this answer, or ``None`` when the model is asked to correct its figures."""
        t, s = self.transcript, self.settings
        t.answer = reply.content or ""
        if not t.answer.strip():
            return self.finish(
                RunStatus.FAILED,
                "the model ended with an empty answer",
                RunError(
                    code=AGENT_ANSWER_EMPTY,
                    message="the model answered with no text and no tool call",
                    hint="Ask again, or try another model.",
                ),
            )
        figures = await self._check_figures(t.answer)
        if (
            figures is not None
            and not figures.ok
            and self._corrections < s.figure_retries
            and t.steps < s.max_steps
        ):
            self._corrections += 1
            self._unverified = (t.answer, figures)
            self._figure_event(figures, correction=True)
            self.add(
                Message(
                    role="user",
                    content=correction_request(figures, self._corrections, s.figure_retries),
                )
            )
            return None
        if figures is not None:
            t.figures = figures.to_dict()
            self._figure_event(figures, correction=False)
        status, why = answer_status(
            t.tool_results,
            needs_evidence=self.needs_evidence,
            figures=figures,
            cites_thread=self._cites_thread(t.answer),
        )
        return self.finish(status, why)

    async def _check_figures(self, answer: str) -> FigureCheck | None:
        """The answer's figure check against the run's evidence (None when off, or the run keeps no evidence)."""
        sink = self.run.artifacts
        if not self.settings.figure_check or sink is None:
            return None
        from ..figures import (  # ~5-9 ms of regular expressions: not at start-up
            ARTIFACT_ID,
            check_figures,
        )

        ids = self.transcript.artifact_ids + ARTIFACT_ID.findall(self.transcript.question)
        if (
            self.thread is not None
        ):  # a follow-up may state a figure an earlier turn's (verified) artifact holds
            ids += self.thread.artifact_ids
        return await asyncio.to_thread(
            check_figures,
            answer,
            catalog=sink.catalog,
            artifact_ids=ids,
            question=self.transcript.question,
        )

    def _cites_thread(self, answer: str | None) -> bool:
        """Whether a follow-up's answer cites a verified artifact of its thread."""
        return self.thread is not None and any(
            a in (answer or "") for a in self.thread.artifact_ids
        )

    def _figure_event(self, figures: FigureCheck, *, correction: bool) -> None:
        record = {
            "step": self.transcript.steps,
            "correction_asked": correction,
            **figures.to_dict(),
        }
        self.transcript.figure_checks.append(record)
        self.emit("figure_check", **record)

    # --- pieces -------------------------------------------------------------

    def _on_text(self, delta: str) -> None:
        self.emit("text", delta=delta)

    def _count(self, reply: Message) -> None:
        usage = reply.usage
        if usage is None:
            return
        total = self.transcript.usage
        self.transcript.usage = Usage(
            prompt_tokens=total.prompt_tokens + usage.prompt_tokens,
            completion_tokens=total.completion_tokens + usage.completion_tokens,
        )
        if usage.prompt_tokens:
            # the conversation the provider just measured, plus this reply
            self._reported = (
                usage.prompt_tokens + usage.completion_tokens,
                len(self.transcript.messages) + 1,
            )

    def _tokens(self) -> int:
        sizes, cpt = self._chars, self.settings.chars_per_token
        estimate = tokens_for(sum(sizes), len(sizes), cpt)
        reported, upto = self._reported
        if reported and upto <= len(sizes):
            estimate = max(
                estimate, reported + tokens_for(sum(sizes[upto:]), len(sizes) - upto, cpt)
            )
        return estimate

    def _within_budget(self) -> bool:
        s = self.settings
        threshold = int(s.token_budget * s.compact_at)
        tokens = self._tokens()
        if tokens <= threshold:
            return True
        stubbed, before, after = compact(
            self.transcript.messages,
            self.infos,
            target_tokens=int(threshold * 0.8),
            keep_recent=s.keep_recent_results,
            chars_per_token=s.chars_per_token,
        )
        if stubbed:
            self._reported = (0, 0)  # the provider's count described the uncompacted conversation
            self._chars = [message_chars(m) for m in self.transcript.messages]
            ids = [
                a for c in stubbed for a in self.infos.get(c, ToolMessageInfo("", "")).artifact_ids
            ]
            record = Compaction(
                step=self.transcript.steps,
                call_ids=stubbed,
                artifact_ids=ids,
                tokens_before=max(before, tokens),
                tokens_after=after,
            )
            self.transcript.compactions.append(record)
            self.emit("compaction", **record.model_dump())
            tokens = after
        if tokens > s.token_budget:
            self.limit("token_budget", s.token_budget, tokens=tokens)
            return False
        return True

    def _for_model(self, result: ToolResult) -> str:
        text = result.for_model()
        limit = self.settings.tool_result_chars
        if len(text) <= limit:
            return text
        ids = ", ".join(a.artifact_id for a in result.artifacts)
        tail = f"\n[cut: {len(text):,} characters, the first {limit:,} shown]" + (
            f"\nartifacts: {ids}" if ids else ""
        )
        return text[: max(0, limit - len(tail))] + tail

    def _started(self, call: ToolCall) -> None:
        self.emit("tool_started", call_id=call.id, tool=call.name, arguments=call.arguments)

    def _finished(self, call: ToolCall, result: ToolResult) -> None:
        ids = [a.artifact_id for a in result.artifacts]
        outcome = "ok" if result.success else (result.error_code or "error")
        self.infos[call.id] = ToolMessageInfo(call.name, outcome, ids)
        record = ToolCallRecord(
            step=self.transcript.steps,
            call_id=call.id,
            tool=call.name,
            arguments=call.arguments,
            success=result.success,
            error_code=result.error_code,
            artifact_ids=ids,
            row_count=_row_count(result),
            elapsed_ms=result.elapsed_ms,
            preview=(result.content or result.message)[:600],
        )
        self.transcript.calls.append(record)
        self.emit(
            "tool_finished",
            **record.model_dump(),
            message=result.message,
            hint=result.hint,
            metadata=_small(result.metadata),
        )


def correction_request(figures: FigureCheck, attempt: int, attempts: int) -> str:
    """What the model is told when its answer states figures the evidence does not hold."""
    listed = "; ".join(f"{f.text} (characters {f.start}-{f.end})" for f in figures.unsupported)
    left = "This is your last chance" if attempt >= attempts else f"Chance {attempt} of {attempts}"
    return (
        f"Figure check: your answer states figures that are not values of this run's evidence: {listed}. "
        "Every figure must be a value a tool result holds, at the precision you write it (compute totals, "
        "differences and rates with sql_query, or with code_interpreter assigning REPORT_RESULT). Correct each "
        "one from the evidence and cite its artifact, or remove it, then answer again. "
        f"{left}: an answer whose figures are not found in the evidence ends the run as answered_unverified."
    )


def _row_count(result: ToolResult) -> int | None:
    if isinstance(result.data, dict) and isinstance(result.data.get("row_count"), int):
        return result.data["row_count"]
    for ref in result.artifacts:
        if ref.row_count is not None:
            return ref.row_count
    return None


def _small(metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in metadata.items()
        if isinstance(v, (str, int, float, bool)) and len(str(v)) < 300
    }


async def arun_agent(
    kernel: Kernel,
    model: Model,
    run: RunContext,
    question: str,
    *,
    max_steps: int | None = None,
    resources: Iterable[Resource] | None = None,
    tools: Iterable[str] | None = None,
    settings: AgentSettings | None = None,
    observers: Iterable[AgentObserver] = (),
    needs_evidence: bool | None = None,
    model_name: str = "",
    thread: ThreadContext | None = None,
    datasources: Iterable[str] = (),
    files: dict[str, Any] | None = None,
) -> Transcript:
    """Run the loop on ``run`` until the model answers or a bound is hit; the transcript says which.

    ``resources`` (default: all the kernel's) describe themselves in the
    system prompt; ``tools`` (default: all) is the allow-list of tools the
    model may call; ``settings`` default to the kernel's ``agent`` section,
    ``max_steps`` overrides theirs. ``thread`` (:func:`.thread.load_thread`) makes the run a follow-up
    of its thread; ``datasources`` is what the run was given, as recorded, ``files`` the files it used (a
    follow-up registers them again: :func:`.ask.reopen_thread_files`). Cancelling the task cancels the running
    tool calls, records the status ``cancelled`` and re-raises.
    """
    settings = settings or agent_settings(kernel)
    if max_steps is not None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        settings = settings.model_copy(update={"max_steps": max_steps})
    chosen = list(resources) if resources is not None else list(kernel.resources.values())
    agent = AgentRun(
        kernel,
        model,
        run,
        question,
        settings=settings,
        resources=chosen,
        tools=tools,
        observers=observers,
        needs_evidence=needs_evidence,
        model_name=model_name,
        thread=thread,
        datasources=datasources,
        files=files,
    )
    return await agent.execute()


def run_agent(
    kernel: Kernel, model: Model, run: RunContext, question: str, **options: Any
) -> Transcript:
    """Synchronous :func:`arun_agent` (not from inside a running event loop)."""
    return asyncio.run(arun_agent(kernel, model, run, question, **options))
