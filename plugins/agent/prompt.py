"""The system prompt: who the agent is, the rules of evidence, and the attached resources.

The resources' part is bounded by a token budget (``AgentSettings.prompt_tokens``):
each resource describes itself within what is left (a database summarises its
largest tables and points at ``describe_table``), and one that does not fit is
named with a note instead of being dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from assay.kernel.resources import PromptBudget, Resource, ResourceType

if TYPE_CHECKING:
    from assay.kernel.protocols import KernelAPI as Kernel

    from .settings import AgentSettings

PREAMBLE = (
    "You are a data-analysis agent. You answer questions about the user's data by calling tools."
)

EVIDENCE_RULES = """Rules of evidence:
- Every number in your answer must come from a tool result. Cite the artifact id it came from, like [art_0f3a9c2e7b1d4e6f8a20].
- A tool result shows a bounded preview, not the whole result: never count, sum or rank from a preview.
  Compute totals in SQL, or with code_interpreter over the artifact.
- In code_interpreter, put the values you will cite into REPORT_RESULT; they become an artifact you can cite.
- When a call fails, read its error code and hint, fix the call and try again; never guess a result.
- Older tool results may be replaced by a one-line stub naming their artifacts; read those back if you need them.
- If the data cannot answer the question, say so plainly.
- Your final answer's figures are checked against this run's evidence at the precision you write them:
  one that no tool result holds (a sum, difference or rate you worked out yourself) flags the answer."""


def needs_evidence(resources: Iterable[Resource]) -> bool:
    """A run with a database attached must back its answer with evidence."""
    for resource in resources:
        if resource.type == ResourceType.DATABASE:
            return True
        if resource.is_pack and needs_evidence(resource.sub_resources):
            return True
    return False


def build_system_prompt(
    kernel: Kernel,
    resources: list[Resource],
    settings: AgentSettings,
    question: str | None = None,
    *,
    thread: str = "",
) -> str:
    """The preamble, the rules, the resources, and a follow-up's ``thread`` part: the thread and the
    resources share the prompt budget (the resources get what the thread leaves); ``question`` lets
    each resource describe what the question needs."""
    total = int(settings.prompt_tokens * settings.chars_per_token)
    budget = PromptBudget(max_chars=max(total // 4, total - len(thread)), question=question)
    described = kernel.system_prompt(resources, budget) if resources else ""
    parts = [PREAMBLE, EVIDENCE_RULES]
    if described:
        parts.append(described)
    if thread:
        parts.append(thread)
    return "\n\n".join(parts)
