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
  a run still ``queued`` is ended by the API itself (``cancel_queued``);
* ``fence``: every write of a running run (its events, its artifacts) runs in
  a transaction that first locks the lease row held by the writer, so a worker
  that lost its run (frozen past its lease, then swept) writes nothing more;
* ``stale_queued``: ``queued`` runs not looked at for a while (their message
  may be gone: an API killed before enqueuing, a broker restarted without
  persistence) are handed to one reconciler each, which enqueues them again
  (the stored ``message``) or, past a second bound, ends them.

Times are the database's clock (``clock_timestamp()``), so hosts whose clocks
differ still agree on when a lease lapsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.kernel.database import POSTGRESQL, SQLITE, Database

SCHEMA_VERSION = 2
_DDL = """
CREATE TABLE IF NOT EXISTS run_leases (
    run_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    worker TEXT NOT NULL DEFAULT '',
    lease_until REAL NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    enqueued_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    message TEXT NOT NULL DEFAULT '',
    claimed_at REAL,
    requeues INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS run_leases_lapse ON run_leases (state, lease_until);
"""
# version 1 had no message, claimed_at, requeues: added in place on PostgreSQL (where leases live in practice)
_V2 = """
ALTER TABLE run_leases ADD COLUMN IF NOT EXISTS message TEXT NOT NULL DEFAULT '';
ALTER TABLE run_leases ADD COLUMN IF NOT EXISTS claimed_at REAL;
ALTER TABLE run_leases ADD COLUMN IF NOT EXISTS requeues INTEGER NOT NULL DEFAULT 0;
"""
_SCHEMA = {
    SQLITE: _DDL,
    POSTGRESQL: (_DDL + _V2).replace(" REAL", " DOUBLE PRECISION").replace(" INTEGER", " BIGINT"),
}
_NOW = {
    SQLITE: "((julianday('now') - 2440587.5) * 86400.0)",
    POSTGRESQL: "EXTRACT(EPOCH FROM clock_timestamp())::DOUBLE PRECISION",
}

QUEUED, RUNNING, ENDED = "queued", "running", "ended"


@dataclass(frozen=True)
class Lease:
    run_id: str
    state: str
    worker: str
    lapsed: bool
    attempts: int
    cancel_requested: bool


@dataclass(frozen=True)
class Stale:
    """A ``queued`` run a reconciler took: enqueue ``message`` again, or end it (``expired``)."""

    run_id: str
    message: str
    expired: bool
    cancel_requested: bool


class LeaseLost(Exception):
    """A write of a run by a worker that no longer holds its lease (nothing was written)."""


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

    def now_sql(self) -> str:
        """The catalog clock's expression (seconds since the epoch), for other stores' statements."""
        return self.now

    def clock(self) -> float:
        """The catalog's clock now (every process agrees on it, whatever its host's clock says)."""
        return float(self._update("SELECT NOW", ())[0][0])

    def create(self, run_id: str, message: str = "", tx: Any = None) -> float:
        """The run's lease (``queued``) with the message to enqueue again if it is lost; the catalog's time."""
        sql = (
            "INSERT INTO run_leases (run_id, state, enqueued_at, updated_at, message) "
            "VALUES (?, 'queued', NOW, NOW, ?) RETURNING enqueued_at"
        ).replace("NOW", self.now)
        if tx is not None:
            self._ready()
            return float(tx.execute(sql, (run_id, message)).fetchone()[0])
        return float(self._update(sql, (run_id, message))[0][0])

    def get(self, run_id: str) -> Lease | None:
        rows = self._update(
            "SELECT run_id, state, worker, lease_until < NOW, attempts, cancel_requested "
            "FROM run_leases WHERE run_id = ?",
            (run_id,),
        )
        if not rows:
            return None
        r = rows[0]
        return Lease(r[0], r[1], r[2], bool(r[3]), int(r[4]), bool(r[5]))

    def claim(
        self, run_id: str, worker: str, lease_s: float, again: bool = False
    ) -> tuple[float, float] | None:
        """``queued`` -> ``running`` for ``worker``: (enqueued_at, claimed_at) on the catalog's clock, or None
        when another process got there first. ``again``: also a run this worker claimed but never began
        (its first claim committed, then the catalog failed before the answer came back)."""
        mine = " OR (state = 'running' AND worker = ?)" if again else ""
        rows = self._update(
            "UPDATE run_leases SET state = 'running', worker = ?, lease_until = NOW + ?, attempts = attempts + 1, "
            f"updated_at = NOW, claimed_at = NOW WHERE run_id = ? AND (state = 'queued'{mine}) "
            "AND cancel_requested = 0 RETURNING enqueued_at, claimed_at",
            (worker, lease_s, run_id, *((worker,) if again else ())),
        )
        return (float(rows[0][0]), float(rows[0][1])) if rows else None

    def fence(self, tx: Any, run_id: str, worker: str) -> None:
        """Inside a write transaction of the run: lock its lease row if ``worker`` holds it, else LeaseLost.

        A sweep taking the run waits for the lock, so it either comes before (and this write is refused) or
        after the write (which was made while the lease was held)."""
        self._ready()
        row = tx.execute(
            f"SELECT run_id FROM run_leases WHERE run_id = ? AND worker = ? AND state = 'running'"
            f"{self.db.for_update}",
            (run_id, worker),
        ).fetchone()
        if row is None:
            raise LeaseLost(run_id)

    def renew(self, run_id: str, worker: str, lease_s: float) -> bool:
        """Push the lease on; False when ``worker`` no longer holds the run (it lapsed and was taken)."""
        return bool(
            self._update(
                "UPDATE run_leases SET lease_until = NOW + ?, updated_at = NOW WHERE run_id = ? AND worker = ? "
                "AND state = 'running' RETURNING run_id",
                (lease_s, run_id, worker),
            )
        )

    def cancel_requested(self, run_id: str) -> bool:
        rows = self._update("SELECT cancel_requested FROM run_leases WHERE run_id = ?", (run_id,))
        return bool(rows and rows[0][0])

    def finish(self, run_id: str, worker: str, tx: Any = None) -> float | None:
        """``running`` -> ``ended`` by the worker holding it: the catalog's time, or None when it had lost the
        run. With ``tx``, inside that transaction (with the run's final event and status)."""
        sql = (
            "UPDATE run_leases SET state = 'ended', updated_at = NOW WHERE run_id = ? AND worker = ? "
            "AND state = 'running' RETURNING updated_at"
        ).replace("NOW", self.now)
        if tx is not None:
            self._ready()
            row = tx.execute(sql, (run_id, worker)).fetchone()
            return float(row[0]) if row else None
        rows = self._update(sql, (run_id, worker))
        return float(rows[0][0]) if rows else None

    def end_unclaimed(self, run_id: str) -> bool:
        """``queued`` -> ``ended`` (cancelled before a worker took it, or never enqueued)."""
        return bool(
            self._update(
                "UPDATE run_leases SET state = 'ended', updated_at = NOW WHERE run_id = ? "
                "AND state = 'queued' RETURNING run_id",
                (run_id,),
            )
        )

    def request_cancel(self, run_id: str) -> str | None:
        """Flag the run; its state then (None when there is no lease or it has ended)."""
        rows = self._update(
            "UPDATE run_leases SET cancel_requested = 1, updated_at = NOW WHERE run_id = ? "
            "AND state <> 'ended' RETURNING state",
            (run_id,),
        )
        return rows[0][0] if rows else None

    def stale_queued(
        self, requeue_after_s: float, expire_after_s: float, limit: int = 100
    ) -> list[Stale]:
        """``queued`` runs untouched for ``requeue_after_s`` (or asked to cancel), each handed to one caller
        (its ``updated_at`` moves on, so the next reconciler waits another bound); ``expired`` past
        ``expire_after_s`` since it was enqueued."""
        rows = self._update(
            "UPDATE run_leases SET updated_at = NOW, requeues = requeues + 1 WHERE run_id IN ("
            "SELECT run_id FROM run_leases WHERE state = 'queued' AND (updated_at < NOW - ? OR cancel_requested = 1"
            f" OR enqueued_at < NOW - ?) LIMIT ?{self.db.for_update.replace('FOR UPDATE', 'FOR UPDATE SKIP LOCKED')}"
            ") AND state = 'queued' RETURNING run_id, message, enqueued_at < NOW - ?, cancel_requested",
            (requeue_after_s, expire_after_s, limit, expire_after_s),
        )
        return [Stale(r[0], r[1] or "", bool(r[2]), bool(r[3])) for r in rows]

    def queue_times(self, run_id: str) -> tuple[float, float | None] | None:
        """(enqueued_at, claimed_at) of the run on the catalog's clock (None: no lease)."""
        rows = self._update(
            "SELECT enqueued_at, claimed_at FROM run_leases WHERE run_id = ?", (run_id,)
        )
        return (
            (float(rows[0][0]), None if rows[0][1] is None else float(rows[0][1])) if rows else None
        )

    def take_lapsed(self, run_id: str | None = None) -> list[tuple[str, str]]:
        """End ``running`` runs whose lease passed (one run, or all); (run_id, worker) of those this call took."""
        where, params = ("AND run_id = ?", (run_id,)) if run_id else ("", ())
        rows = self._update(
            f"UPDATE run_leases SET state = 'ended', updated_at = NOW WHERE state = 'running' "
            f"AND lease_until < NOW {where} RETURNING run_id, worker",
            params,
        )
        return [(r[0], r[1]) for r in rows]
