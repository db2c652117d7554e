"""Where one run's captures go, and what they may take: the sink and its quotas.

A capture reserves its bytes against every quota before its content is
published and turns the hold into a record in one step (:meth:`ArtifactSink.record`),
so captures running at once are each charged once and cannot both take the
last room.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from .catalog import ArtifactCatalog
from .errors import ArtifactQuotaExceeded
from .records import ArtifactRecord
from .settings import EvidenceSettings


@dataclass(frozen=True)
class Quota:
    """Evidence bytes a scope may hold: ``used()`` asks the catalog each time (other processes capture too)."""

    scope: str  # "run", "owner" ...
    limit: int
    used: Callable[[], int]
    setting: str  # what raises it, named in the error's hint


class ArtifactSink:
    """Where one run's captures go: a catalog (and its content store) plus the run id.

    Every capture is charged to the sink's quotas (the run's ``ASSAY_ARTIFACT_RUN_MAX_BYTES``,
    and what a host adds with :meth:`add_quota`, e.g. the service's per-owner quota): a capture
    that would take one past its limit is refused with ``ARTIFACT_QUOTA_EXCEEDED`` before its
    content is published, and nothing of it is kept. Bytes staged but not yet recorded are
    counted too, so captures running at once in one run cannot both take the last room.
    """

    def __init__(
        self, catalog: ArtifactCatalog, run_id: str, settings: EvidenceSettings | None = None
    ) -> None:
        self.catalog = catalog
        self.run_id = run_id
        self.thread: tuple[
            str, ...
        ] = ()  # a follow-up's earlier runs (RunContext.continue_thread): citable too
        self.settings = settings or EvidenceSettings()
        # read as the run's records are written: through a catalog outage for a run on a worker
        self.quotas: list[Quota] = [
            Quota(
                "run",
                self.settings.run_max_bytes,
                lambda: catalog.read_through_outage(
                    run_id, lambda: catalog.bytes_of_runs([run_id])
                ),
                "ASSAY_ARTIFACT_RUN_MAX_BYTES",
            )
        ]
        self._pending = 0
        self._lock = threading.Lock()

    def add_quota(self, quota: Quota) -> None:
        self.quotas.append(quota)

    def remaining(self) -> int:
        """Bytes the next captures may still take (the tightest quota): read under the lock, so a
        capture being recorded meanwhile is counted once, as pending or as used."""
        with self._lock:
            return max(0, min(q.limit - q.used() - self._pending for q in self.quotas))

    def reserve(self, size: int) -> None:
        """Hold ``size`` bytes against every quota until :meth:`release`; raise when one would be passed."""
        with self._lock:
            for quota in self.quotas:
                used = quota.used() + self._pending
                if used + size > quota.limit:
                    raise ArtifactQuotaExceeded(quota.scope, quota.limit, used, size, quota.setting)
            self._pending += size

    def release(self, size: int) -> None:
        with self._lock:
            self._pending -= size

    def record(self, records: list[ArtifactRecord], held: list[int]) -> None:
        """Write the records and turn their held bytes from pending into used in one step.

        The catalog counts a record as used the moment it is written; were the hold released only
        afterwards, a capture reserving in between would count those bytes twice and be refused
        room it has. ``held`` is emptied: nothing of it is left for :meth:`release`.
        """
        with self._lock:
            if len(records) == 1:
                self.catalog.add(records[0])
            else:
                self.catalog.add_all(records)
            self._pending -= sum(held)
            held.clear()

    @property
    def store(self):
        return self.catalog.store

    def records(self) -> list[ArtifactRecord]:
        return self.catalog.list(self.run_id)

    def __repr__(self) -> str:
        return f"ArtifactSink(run_id={self.run_id!r}, store={self.store.name!r})"
