"""Run leases in the shared catalog: who executes a run, until when, and whether it was asked to stop.

One row per run sent to a worker (table ``run_leases``), written by the API
when it enqueues the run (state ``queued``). Every change is one conditional
``UPDATE``, so of several processes racing for the same change exactly one
wins, whatever the broker delivered to whom:

* ``claim``: ``queued`` -> ``running`` by one worker, with ``lease_until``;
  a redelivered message finds the run ``running`` or ``ended`` and does not
  run it again;
* ``renew``: the worker holding the run pushes ``lease_until`` on while it
  runs; ``finish``: ``running`` -> ``ended`` by that worker only, before its
  final status is written (a worker that lost its lease writes none);
* ``take_lapsed``: ``running`` runs whose lease passed (their worker died or
  hung) -> ``ended``, each taken by one sweeper, which marks it failed with
  ``RUN_WORKER_LOST``;
* ``request_cancel``: the API sets ``cancel_requested``; the worker polls it;
  a run still ``queued`` is ended by the API itself (``cancel_queued``).

Times are the database's clock (``clock_timestamp()``), so hosts whose clocks
differ still agree on when a lease lapsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.kernel.database import POSTGRESQL, SQLITE, Database

SCHEMA_VERSION = 1
_DDL = """
CREATE TABLE IF NOT EXISTS run_leases (
    run_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    worker TEXT NOT NULL DEFAULT '',
    lease_until REAL NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    enqueued_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS run_leases_lapse ON run_leases (state, lease_until);
"""
_SCHEMA = {SQLITE: _DDL, POSTGRESQL: _DDL.replace(" REAL", " DOUBLE PRECISION").replace(" INTEGER", " BIGINT")}
_NOW = {SQLITE: "((julianday('now') - 2440587.5) * 86400.0)",
        POSTGRESQL: "EXTRACT(EPOCH FROM clock_timestamp())::DOUBLE PRECISION"}

QUEUED, RUNNING, ENDED = "queued", "running", "ended"


@dataclass(frozen=True)
class Lease:
    run_id: str
    state: str
    worker: str
    lapsed: bool
    attempts: int
    cancel_requested: bool


class LeaseStore:
    def __init__(self, database: Database) -> None:
        self.db = database
        self.now = _NOW[database.dialect]

    def _ready(self) -> Database:
        self.db.ensure("run_leases", SCHEMA_VERSION, _SCHEMA)
        return self.db

    def _update(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        db = self._ready()
        return db.retry(lambda: db.execute(sql.replace("NOW", self.now), params).fetchall())

    def create(self, run_id: str) -> None:
        self._update("INSERT INTO run_leases (run_id, state, enqueued_at, updated_at) VALUES (?, 'queued', NOW, NOW) "
                     "RETURNING run_id", (run_id,))

    def get(self, run_id: str) -> Lease | None:
        rows = self._update("SELECT run_id, state, worker, lease_until < NOW, attempts, cancel_requested "
                            "FROM run_leases WHERE run_id = ?", (run_id,))
        if not rows:
            return None
        r = rows[0]
        return Lease(r[0], r[1], r[2], bool(r[3]), int(r[4]), bool(r[5]))

    def claim(self, run_id: str, worker: str, lease_s: float) -> bool:
        """``queued`` -> ``running`` for ``worker``; False when another process got there first."""
        return bool(self._update(
            "UPDATE run_leases SET state = 'running', worker = ?, lease_until = NOW + ?, attempts = attempts + 1, "
            "updated_at = NOW WHERE run_id = ? AND state = 'queued' AND cancel_requested = 0 RETURNING run_id",
            (worker, lease_s, run_id)))

    def renew(self, run_id: str, worker: str, lease_s: float) -> bool:
        """Push the lease on; False when ``worker`` no longer holds the run (it lapsed and was taken)."""
        return bool(self._update(
            "UPDATE run_leases SET lease_until = NOW + ?, updated_at = NOW WHERE run_id = ? AND worker = ? "
            "AND state = 'running' RETURNING run_id", (lease_s, run_id, worker)))

    def cancel_requested(self, run_id: str) -> bool:
        rows = self._update("SELECT cancel_requested FROM run_leases WHERE run_id = ?", (run_id,))
        return bool(rows and rows[0][0])

    def finish(self, run_id: str, worker: str) -> bool:
        """``running`` -> ``ended`` by the worker holding it; False when it had lost the run."""
        return bool(self._update(
            "UPDATE run_leases SET state = 'ended', updated_at = NOW WHERE run_id = ? AND worker = ? "
            "AND state = 'running' RETURNING run_id", (run_id, worker)))

    def end_unclaimed(self, run_id: str) -> bool:
        """``queued`` -> ``ended`` (cancelled before a worker took it, or never enqueued)."""
        return bool(self._update("UPDATE run_leases SET state = 'ended', updated_at = NOW WHERE run_id = ? "
                                 "AND state = 'queued' RETURNING run_id", (run_id,)))

    def request_cancel(self, run_id: str) -> str | None:
        """Flag the run; its state then (None when there is no lease or it has ended)."""
        rows = self._update("UPDATE run_leases SET cancel_requested = 1, updated_at = NOW WHERE run_id = ? "
                            "AND state <> 'ended' RETURNING state", (run_id,))
        return rows[0][0] if rows else None

    def take_lapsed(self, run_id: str | None = None) -> list[tuple[str, str]]:
        """End ``running`` runs whose lease passed (one run, or all); (run_id, worker) of those this call took."""
        where, params = ("AND run_id = ?", (run_id,)) if run_id else ("", ())
        rows = self._update(f"UPDATE run_leases SET state = 'ended', updated_at = NOW WHERE state = 'running' "
                            f"AND lease_until < NOW {where} RETURNING run_id, worker", params)
        return [(r[0], r[1]) for r in rows]
