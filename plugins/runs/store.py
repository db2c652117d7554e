"""The runs store: every run's record and events, written as the run goes.

:class:`RunStore` is the small interface; :class:`SQLRunStore` keeps runs in
a :class:`~assay.kernel.database.Database`: by default one SQLite file under
``ASSAY_HOME`` (``runs/runs.sqlite3``, :class:`SQLiteRunStore`), WAL mode, or,
with ``ASSAY_CATALOG_URL=postgresql://...``, the shared PostgreSQL database
(tables ``runs`` and ``run_events``). One commit per event, so a process
killed mid-run leaves a readable transcript up to its last step. A writer
numbers a run's events from the last one it wrote; when another writer took
that number (a unique-key conflict), the event is numbered inside the
statement that inserts it (``MAX(seq) + 1``), so several processes may
append to one run without a lost or repeated event.

Schema 2 added ``parent_run_id`` (a follow-up names the run it continues,
:mod:`.thread`): a store written by schema 1 gains the column in place the
first time this version opens it (``ALTER TABLE ... ADD COLUMN``; old rows
have none: they start no thread).
"""

from __future__ import annotations

import builtins
import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from assay.kernel.database import POSTGRESQL, SQLITE, Database, SQLiteDatabase

from .records import RunEvent, RunRecord

SCHEMA_VERSION = 2
_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    question TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'running',
    status_reason TEXT NOT NULL DEFAULT '',
    error TEXT,
    answer TEXT,
    steps INTEGER NOT NULL DEFAULT 0,
    tool_calls INTEGER NOT NULL DEFAULT 0,
    artifact_ids TEXT NOT NULL DEFAULT '[]',
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    started_at REAL NOT NULL,
    ended_at REAL,
    pid INTEGER,
    host TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL DEFAULT '{}',
    parent_run_id TEXT
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at);
CREATE TABLE IF NOT EXISTS run_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    step INTEGER NOT NULL DEFAULT 0,
    at REAL NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""
# the same tables in PostgreSQL's types (REAL is 4 bytes there: times need DOUBLE PRECISION)
# schema 1 -> 2: the thread's link. PostgreSQL adds it inside the schema's DDL (run under the schema's
# advisory lock, so concurrent first opens do not race); SQLite has no ADD COLUMN IF NOT EXISTS: there
# the column is looked for first (:func:`_migrate`).
_ADD_PARENT = "ALTER TABLE runs ADD COLUMN parent_run_id TEXT"
_PARENT_INDEX = "CREATE INDEX IF NOT EXISTS runs_parent ON runs (parent_run_id)"
_SCHEMA = {
    SQLITE: _SQLITE_SCHEMA,
    POSTGRESQL: (
        _SQLITE_SCHEMA
        + _ADD_PARENT.replace("ADD COLUMN", "ADD COLUMN IF NOT EXISTS")
        + ";\n"
        + _PARENT_INDEX
        + ";\n"
    )
    .replace(" REAL", " DOUBLE PRECISION")
    .replace(" INTEGER", " BIGINT"),
}
_APPEND = "INSERT INTO run_events (run_id, seq, kind, step, at, data) VALUES (?, ?, ?, ?, ?, ?)"
_APPEND_NEXT = (
    "INSERT INTO run_events (run_id, seq, kind, step, at, data) "
    "SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ? FROM run_events WHERE run_id = ? RETURNING seq"
)
_COLUMNS = (
    "run_id",
    "question",
    "model",
    "status",
    "status_reason",
    "error",
    "answer",
    "steps",
    "tool_calls",
    "artifact_ids",
    "prompt_tokens",
    "completion_tokens",
    "started_at",
    "ended_at",
    "pid",
    "host",
    "summary",
    "parent_run_id",
)


class RunStore(ABC):
    """Where runs are kept. Writes happen while the run goes; reads serve ``assay runs``."""

    @abstractmethod
    def start(self, record: RunRecord) -> None:
        """Create the run's record (status ``running``)."""

    @abstractmethod
    def append(self, run_id: str, kind: str, step: int, at: float, data: dict[str, Any]) -> None:
        """Add one event; it is durable when this returns."""

    @abstractmethod
    def update(self, run_id: str, **fields: Any) -> None:
        """Change fields of the run's record (counters while it goes, the status at its end)."""

    @abstractmethod
    def get(self, run_id: str) -> RunRecord | None: ...

    @abstractmethod
    def list(self, limit: int = 50, status: str | None = None) -> list[RunRecord]:
        """The newest runs first."""

    @abstractmethod
    def events(self, run_id: str) -> Iterator[RunEvent]:
        """The run's events, in order."""

    def ended_before(self, cutoff: float) -> Sequence[RunRecord]:
        """Runs started before ``cutoff`` (epoch seconds) that are not ``running`` (retention's candidates)."""
        raise NotImplementedError

    def delete(self, run_ids: Sequence[str]) -> int:
        """Remove these runs' records and events; returns how many records were removed."""
        raise NotImplementedError

    def children(self, run_id: str) -> builtins.list[RunRecord]:
        """The runs that continue ``run_id`` (its follow-ups), oldest first."""
        return []

    def forget(self, run_id: str) -> None:
        """Drop what this store remembers of the run's writes (its next event number is read again)."""

    def close(self) -> None:
        """Release connections."""


class SQLRunStore(RunStore):
    """Runs in a :class:`~assay.kernel.database.Database` (SQLite or PostgreSQL)."""

    def __init__(self, database: Database) -> None:
        self.db = database
        self._seq: dict[str, int] = {}  # the last event number this store wrote, per run

    def _ready(self) -> Database:
        db = self.db
        if "runs_v2" not in db.__dict__.get("_ensured", ()):
            db.ensure("runs", SCHEMA_VERSION, _SCHEMA)
            if db.dialect == SQLITE:
                db.retry(lambda: _migrate(db))
            db.__dict__.setdefault("_ensured", set()).add("runs_v2")
        return db

    def start(self, record: RunRecord) -> None:
        row = _row(record.model_dump())
        db = self._ready()
        db.retry(
            lambda: db.execute(
                f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                tuple(row.values()),
            )
        )
        self._seq[record.run_id] = 0

    def append(self, run_id: str, kind: str, step: int, at: float, data: dict[str, Any]) -> None:
        payload = json.dumps(data, default=str, ensure_ascii=False)
        db = self._ready()
        last = self._seq.get(run_id)
        if (
            last is not None
        ):  # the usual case: this store writes the run's events, one after another
            try:
                db.retry(lambda: db.execute(_APPEND, (run_id, last + 1, kind, step, at, payload)))
                self._seq[run_id] = last + 1
                return
            except Exception as exc:
                if not db.is_conflict(exc):
                    raise
        for _ in range(
            100
        ):  # the first event, or another writer took the number: the next free one
            try:
                seq = db.retry(
                    lambda: db.execute(
                        _APPEND_NEXT, (run_id, kind, step, at, payload, run_id)
                    ).fetchone()[0]
                )
            except Exception as exc:
                # two writers took the same next number (PostgreSQL): the loser takes the one after
                if not db.is_conflict(exc):
                    raise
                continue
            self._seq[run_id] = seq
            return
        raise RuntimeError(
            f"could not append an event to run {run_id!r}: the event number kept being taken"
        )

    def update(self, run_id: str, **fields: Any) -> None:
        row = _row(fields)
        if not row:
            return
        db = self._ready()
        db.retry(
            lambda: db.execute(
                f"UPDATE runs SET {', '.join(f'{k} = ?' for k in row)} WHERE run_id = ?",
                (*row.values(), run_id),
            )
        )

    def get(self, run_id: str) -> RunRecord | None:
        found = (
            self._ready()
            .execute(f"SELECT {', '.join(_COLUMNS)} FROM runs WHERE run_id = ?", (run_id,))
            .fetchone()
        )
        return _record(found) if found else None

    def list(self, limit: int = 50, status: str | None = None) -> list[RunRecord]:
        sql = f"SELECT {', '.join(_COLUMNS)} FROM runs"
        args: tuple[Any, ...] = ()
        if status:
            sql += " WHERE status = ?"
            args = (status,)
        sql += " ORDER BY started_at DESC LIMIT ?"
        rows = self._ready().execute(sql, (*args, limit)).fetchall()
        return [_record(r) for r in rows]

    def events(self, run_id: str) -> Iterator[RunEvent]:
        rows = (
            self._ready()
            .execute(
                "SELECT seq, kind, step, at, data FROM run_events WHERE run_id = ? ORDER BY seq",
                (run_id,),
            )
            .fetchall()
        )
        for seq, kind, step, at, data in rows:
            yield RunEvent(
                run_id=run_id, seq=seq, kind=kind, step=step, at=at, data=json.loads(data)
            )

    def ended_before(self, cutoff: float) -> Sequence[RunRecord]:
        rows = (
            self._ready()
            .execute(
                f"SELECT {', '.join(_COLUMNS)} FROM runs WHERE started_at < ? ORDER BY started_at",
                (cutoff,),
            )
            .fetchall()
        )
        return [r for r in map(_record, rows) if r.shown_status != "running"]

    def delete(self, run_ids: Sequence[str]) -> int:
        db = self._ready()
        removed = 0
        for start in range(0, len(run_ids), 500):
            chunk = tuple(run_ids[start : start + 500])
            marks = ",".join("?" * len(chunk))

            def drop(marks: str = marks, chunk: tuple[str, ...] = chunk) -> int:
                with db.transaction() as tx:
                    tx.execute(f"DELETE FROM run_events WHERE run_id IN ({marks})", chunk)
                    return tx.execute(f"DELETE FROM runs WHERE run_id IN ({marks})", chunk).rowcount

            removed += db.retry(drop)
        for run_id in run_ids:
            self._seq.pop(run_id, None)
        return removed

    def children(self, run_id: str) -> builtins.list[RunRecord]:
        rows = (
            self._ready()
            .execute(
                f"SELECT {', '.join(_COLUMNS)} FROM runs WHERE parent_run_id = ? "
                "ORDER BY started_at",
                (run_id,),
            )
            .fetchall()
        )
        return [_record(r) for r in rows]

    def forget(self, run_id: str) -> None:
        self._seq.pop(run_id, None)

    def close(self) -> None:
        self.db.close()


class SQLiteRunStore(SQLRunStore):
    """Runs in one SQLite file (the default: ``ASSAY_HOME/runs/runs.sqlite3``)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        super().__init__(SQLiteDatabase(self.path, busy_ms=10_000, owner="runs"))


def _migrate(db: Database) -> None:
    """SQLite schema 1 -> 2 in place: add ``parent_run_id`` when the table lacks it (idempotent, racing too)."""
    names = {row[1] for row in db.execute("PRAGMA table_info(runs)").fetchall()}
    if "parent_run_id" not in names:
        try:
            db.execute(_ADD_PARENT)
        except Exception as exc:  # another process added it between the look and the ALTER
            if "duplicate column" not in str(exc):
                raise
    db.execute(_PARENT_INDEX)


def _row(fields: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in fields.items():
        if key not in _COLUMNS:
            raise KeyError(f"runs have no field {key!r}")
        if key in ("error", "artifact_ids", "summary"):
            value = None if value is None and key == "error" else json.dumps(value, default=str)
        out[key] = value
    return out


def _record(row: tuple[Any, ...]) -> RunRecord:
    data = dict(zip(_COLUMNS, row))
    data["error"] = json.loads(data["error"]) if data["error"] else None
    data["artifact_ids"] = json.loads(data["artifact_ids"] or "[]")
    data["summary"] = json.loads(data["summary"] or "{}")
    return RunRecord(**data)
