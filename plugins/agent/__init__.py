"""The main agent: a loop, its prompt, budgets, dispatch, statuses and transcript.

One concept per module: :mod:`.loop` (the loop and :func:`arun_agent`),
:mod:`.prompt` (system prompt and evidence rules), :mod:`.compaction` (the
run's token budget), :mod:`.dispatch` (one turn's tool calls),
:mod:`.status` (final statuses and exit codes; the answer's figures are checked by
:mod:`assay.plugins.figures`), :mod:`.transcript` (what a
run did, and its events), :mod:`.settings` (limits).
"""

from __future__ import annotations

from .loop import AgentRun, arun_agent, run_agent
from .settings import AgentSettings
from .status import EXIT_CODES, RunStatus
from .transcript import AgentEvent, Transcript

__all__ = [
    "EXIT_CODES",
    "AgentEvent",
    "AgentRun",
    "AgentSettings",
    "RunStatus",
    "Transcript",
    "arun_agent",
    "run_agent",
]
