"""Run retention: what ``assay runs prune`` removes, and what it must keep.

A run older than the retention (``ASSAY_RUN_RETENTION_DAYS``, or
``--older-than DAYS``) is removed whole: its record and events from the runs
store, its artifact records from the catalog, then the content no record
refers to any more (:func:`~assay.kernel.evidence.maintenance.collect_garbage`).
"Older" is by age: an agent run by its start (one still ``running`` is never
pruned), a run with evidence but no run record (a ``POST /tools`` call's,
an MCP conversation's) by its newest artifact.

What another run still cites is kept: an artifact of an old run named
anywhere in a kept run's artifact records (a report's document, a chart's
source, a tool's inputs) or in a kept run's record keeps its record, so its
content and the kept run's citations still resolve. The old run's record and
events go; :class:`PruneReport` says which artifacts were kept and why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from assay.kernel.errors import AssayError

RUNS_RETENTION_UNSET = "RUNS_RETENTION_UNSET"
DAY_S = 86_400.0


@dataclass
class PruneReport:
    """What a prune removed (or, dry, would remove)."""

    cutoff: float
    agent_runs: list[str] = field(default_factory=list)
    evidence_runs: list[str] = field(default_factory=list)  # tool calls' / MCP conversations' runs
    artifacts_removed: int = 0
    artifacts_kept_cited: dict[str, list[str]] = field(
        default_factory=dict
    )  # artifact -> kept runs citing it
    content_removed: int = 0
    applied: bool = False
    partly_kept: set[str] = field(
        default_factory=set
    )  # pruned runs some of whose artifacts are cited

    @property
    def removed_runs(self) -> list[str]:
        """Runs removed whole (none of their artifacts kept): their owners can be forgotten too."""
        return [r for r in [*self.agent_runs, *self.evidence_runs] if r not in self.partly_kept]


def retention_days(given: float | None, settings: Any) -> float:
    """``given`` (``--older-than``) or the ``run_retention_days`` setting (``ASSAY_RUN_RETENTION_DAYS``);
    ``RUNS_RETENTION_UNSET`` if neither."""
    days = given if given is not None else settings.run_retention_days
    if days is None:
        raise AssayError(
            RUNS_RETENTION_UNSET,
            "no retention to prune by: neither --older-than nor ASSAY_RUN_RETENTION_DAYS is set",
            "Pass --older-than DAYS, or set ASSAY_RUN_RETENTION_DAYS (e.g. 30).",
        )
    return float(days)


def prune(
    runs: Any,
    catalog: Any,
    days: float,
    *,
    apply: bool = False,
    now: float | None = None,
    grace_s: float = 3600.0,
) -> PruneReport:
    """Find runs older than ``days`` and, with ``apply``, remove them (see the module's docstring)."""
    now = time.time() if now is None else now
    report = PruneReport(cutoff=now - days * DAY_S)
    old_agent = {r.run_id: r for r in runs.ended_before(report.cutoff)}
    catalog.import_shared(None)
    ages = catalog.run_ages()
    for run_id, newest in ages.items():
        if run_id in old_agent or runs.get(run_id) is not None:
            continue
        if _epoch(newest) < report.cutoff:
            report.evidence_runs.append(run_id)
    report.agent_runs = sorted(old_agent)
    going = set(report.agent_runs) | set(report.evidence_runs)
    if not going:
        return report

    doomed = [rec for run_id in going for rec in catalog.iter(run_id)]
    doomed_ids = {rec.artifact_id for rec in doomed}
    cited = _cited_by_kept_runs(runs, catalog, going, doomed_ids)
    report.artifacts_kept_cited = {a: sorted(by) for a, by in sorted(cited.items())}
    removable = [rec for rec in doomed if rec.artifact_id not in cited]
    report.artifacts_removed = len(removable)
    report.partly_kept = {rec.run_id for rec in doomed if rec.artifact_id in cited}
    if not apply:
        return report
    catalog.delete_records(removable)
    runs.delete(report.agent_runs)
    from assay.kernel.evidence.maintenance import collect_garbage

    report.content_removed = len(collect_garbage(catalog, grace_s=grace_s).removed)
    report.applied = True
    return report


def _cited_by_kept_runs(
    runs: Any, catalog: Any, going: set[str], doomed_ids: set[str]
) -> dict[str, set[str]]:
    """Artifacts of pruned runs that a kept run names (in its artifact records or its run record)."""
    cited: dict[str, set[str]] = {}

    def look(value: Any, by: str) -> None:
        if isinstance(value, str):
            if value in doomed_ids:
                cited.setdefault(value, set()).add(by)
        elif isinstance(value, dict):
            for item in value.values():
                look(item, by)
        elif isinstance(value, (list, tuple)):
            for item in value:
                look(item, by)

    for record in catalog.iter():
        if record.run_id not in going:
            look(record.provenance, record.run_id)
            look(record.result, record.run_id)
    for record in runs.list(limit=1_000_000):
        if record.run_id not in going:
            look(record.artifact_ids, record.run_id)
            look(record.summary, record.run_id)
    return cited


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()
