"""The runs store: every run's record and events, written as the run goes.

:class:`RunStore` is the small interface (a later backend keeps runs in a
server database); :class:`SQLiteRunStore` keeps them in one SQLite file
under ``ASSAY_HOME`` (``runs/runs.sqlite3``), WAL mode, one commit per event,
so a process killed mid-run leaves a readable transcript up to its last step.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .records import RunEvent, RunRecord

SCHEMA_VERSION = 1
_SCHEMA = """
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
    summary TEXT NOT NULL DEFAULT '{}'
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
_COLUMNS = ("run_id", "question", "model", "status", "status_reason", "error", "answer", "steps", "tool_calls",
            "artifact_ids", "prompt_tokens", "completion_tokens", "started_at", "ended_at", "pid", "host", "summary")


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

    def close(self) -> None:
        """Release connections."""


class SQLiteRunStore(RunStore):
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn_: sqlite3.Connection | None = None
        self._pid = 0
        self._seq: dict[str, int] = {}

    def _conn(self) -> sqlite3.Connection:
        if self._conn_ is not None and self._pid == os.getpid():
            return self._conn_
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise sqlite3.OperationalError(f"the runs store was written by a newer assay (schema {version})")
        conn.executescript(_SCHEMA)
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self._conn_, self._pid, self._seq = conn, os.getpid(), {}
        return conn

    def start(self, record: RunRecord) -> None:
        row = _row(record.model_dump())
        with self._lock:
            self._conn().execute(
                f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
            self._seq[record.run_id] = 0

    def append(self, run_id: str, kind: str, step: int, at: float, data: dict[str, Any]) -> None:
        payload = json.dumps(data, default=str, ensure_ascii=False)
        with self._lock:
            conn = self._conn()
            seq = self._seq.get(run_id)
            if seq is None:
                found = conn.execute("SELECT MAX(seq) FROM run_events WHERE run_id = ?", (run_id,)).fetchone()[0]
                seq = found or 0
            seq += 1
            conn.execute("INSERT INTO run_events (run_id, seq, kind, step, at, data) VALUES (?, ?, ?, ?, ?, ?)",
                         (run_id, seq, kind, step, at, payload))
            self._seq[run_id] = seq

    def update(self, run_id: str, **fields: Any) -> None:
        row = _row(fields)
        if not row:
            return
        with self._lock:
            self._conn().execute(f"UPDATE runs SET {', '.join(f'{k} = ?' for k in row)} WHERE run_id = ?",
                                 (*row.values(), run_id))

    def get(self, run_id: str) -> RunRecord | None:
        with self._lock:
            found = self._conn().execute(f"SELECT {', '.join(_COLUMNS)} FROM runs WHERE run_id = ?",
                                         (run_id,)).fetchone()
        return _record(found) if found else None

    def list(self, limit: int = 50, status: str | None = None) -> list[RunRecord]:
        sql = f"SELECT {', '.join(_COLUMNS)} FROM runs"
        args: tuple[Any, ...] = ()
        if status:
            sql += " WHERE status = ?"
            args = (status,)
        sql += " ORDER BY started_at DESC LIMIT ?"
        with self._lock:
            rows = self._conn().execute(sql, (*args, limit)).fetchall()
        return [_record(r) for r in rows]

    def events(self, run_id: str) -> Iterator[RunEvent]:
        with self._lock:
            rows = self._conn().execute(
                "SELECT seq, kind, step, at, data FROM run_events WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
        for seq, kind, step, at, data in rows:
            yield RunEvent(run_id=run_id, seq=seq, kind=kind, step=step, at=at, data=json.loads(data))

    def close(self) -> None:
        with self._lock:
            if self._conn_ is not None and self._pid == os.getpid():
                self._conn_.close()
            self._conn_ = None


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
