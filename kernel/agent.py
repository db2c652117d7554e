"""A minimal agent loop: the model asks, the kernel's tools answer.

The system prompt is built from the attached resources; tools are offered in
OpenAI function-calling shape; each call goes through
:meth:`assay.Kernel.acall_tool` (validated, logged, never raising into the
model). The loop is bounded by ``max_steps`` model turns.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field

from .messages import Message
from .models import Model
from .resources import Resource
from .tool_result import ToolResult

if TYPE_CHECKING:
    from .context import RunContext
    from .kernel import Kernel

SYSTEM_PREAMBLE = (
    "You are a data-analysis agent. Answer from tool results only; cite the artifact ids "
    "the tools return instead of copying numbers from memory."
)


class Transcript(BaseModel):
    """What happened in one agent run."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_id: str
    question: str
    messages: list[Message] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    answer: str | None = None
    stopped: Literal["final", "max_steps"] = "final"
    steps: int = 0

    @property
    def artifact_ids(self) -> list[str]:
        """Every artifact the run's tool calls captured, in order."""
        return [a.artifact_id for r in self.tool_results for a in r.artifacts]


async def arun_agent(
    kernel: "Kernel",
    model: Model,
    run: "RunContext",
    question: str,
    *,
    max_steps: int = 8,
    resources: Iterable[Resource] | None = None,
    tools: Iterable[str] | None = None,
) -> Transcript:
    """Run the loop until the model answers without tool calls, or ``max_steps`` turns."""
    if max_steps < 1:
        raise ValueError("max_steps must be at least 1")
    prompt = kernel.system_prompt(resources)
    system = SYSTEM_PREAMBLE + ("\n\n" + prompt if prompt else "")
    definitions = kernel.tool_definitions("openai", names=tools)
    transcript = Transcript(
        run_id=run.run_id,
        question=question,
        messages=[Message(role="system", content=system), Message(role="user", content=question)],
    )
    for step in range(1, max_steps + 1):
        transcript.steps = step
        reply = await model.acomplete(list(transcript.messages), definitions)
        transcript.messages.append(reply)
        if not reply.tool_calls:
            transcript.answer = reply.content or ""
            transcript.stopped = "final"
            return transcript
        for call in reply.tool_calls:
            result = await kernel.acall_tool(call.name, call.arguments, run=run)
            transcript.tool_results.append(result)
            transcript.messages.append(
                Message(role="tool", tool_call_id=call.id, name=call.name, content=result.for_model())
            )
    transcript.stopped = "max_steps"
    return transcript


def run_agent(kernel: "Kernel", model: Model, run: "RunContext", question: str, **options: Any) -> Transcript:
    """Synchronous :func:`arun_agent` (not from inside a running event loop)."""
    return asyncio.run(arun_agent(kernel, model, run, question, **options))
