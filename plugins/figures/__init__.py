"""The figure check: every figure an answer or a report's prose states traces to the run's evidence, or is flagged.

:mod:`.extract` (the figures a text states, and the values each may stand
for), :mod:`.evidence` (the values an artifact holds, hash-checked),
:mod:`.check` (matching the two; the unsupported figures with their
positions). See docs/agent.md, "Figure check".
"""

from __future__ import annotations

from .check import ARTIFACT_ID, FigureCheck, check_figures, support
from .extract import Figure, find_figures

__all__ = ["ARTIFACT_ID", "Figure", "FigureCheck", "check_figures", "find_figures", "support"]
