"""The catalog: artifact records in an embedded SQLite database (WAL).

One connection per thread and per process (a connection is never used after
``fork``); writers queue on SQLite's lock with a generous busy timeout, so
many threads and processes can capture at once.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from .records import ArtifactRecord
from .content_store import ContentStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS artifacts (
    artifact_id TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    byte_size   INTEGER NOT NULL,
    row_count   INTEGER,
    record      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS artifacts_by_run ON artifacts (run_id, created_at);
CREATE INDEX IF NOT EXISTS artifacts_by_sha ON artifacts (sha256);
"""

_BUSY_MS = 60_000
SCHEMA_VERSION = 1


class ArtifactCatalog:
    """Records of one content store, plus access to that store."""

    def __init__(self, store: ContentStore, path: Path | None = None) -> None:
        self.store = store
        self.path = Path(path or store.catalog_path)
        self._local = threading.local()
        self._init_lock = threading.Lock()
        self._ready = False

    # --- connections -------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=_BUSY_MS / 1000, isolation_level=None,
                               check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
        if not self._ready:
            with self._init_lock:
                if not self._ready:
                    _retry(lambda: _init(conn))
                    self._ready = True
        conn.execute("PRAGMA synchronous=NORMAL")
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
        self._local.conn = None

    # --- records ------------------------------------------------------------
    def add(self, record: ArtifactRecord) -> None:
        data = record.model_dump_json()
        conn = self._conn()
        _retry(lambda: conn.execute(
            "INSERT INTO artifacts VALUES (?,?,?,?,?,?,?,?,?)",
            (record.artifact_id, record.run_id, record.kind, record.status,
             record.created_at.isoformat(), record.sha256, record.byte_size, record.row_count, data),
        ))
        try:
            self.store.put_record(record.artifact_id, data.encode())
        except BaseException:
            # a record only some workers can see would be a half-kept artifact
            _retry(lambda: conn.execute("DELETE FROM artifacts WHERE artifact_id = ?", (record.artifact_id,)))
            raise

    def add_all(self, records: list[ArtifactRecord]) -> None:
        """Write several records as one: all of them, or (on any failure) none.

        One SQLite transaction; then each is mirrored to a shared store, and a
        mirror that fails takes every record of the group back out (here and
        from the shared store), so no reader ever sees part of the group.
        """
        rows = [(r.artifact_id, r.run_id, r.kind, r.status, r.created_at.isoformat(), r.sha256, r.byte_size,
                 r.row_count, r.model_dump_json()) for r in records]
        conn = self._conn()

        def insert() -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("INSERT INTO artifacts VALUES (?,?,?,?,?,?,?,?,?)", rows)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

        _retry(insert)
        try:
            for row in rows:
                self.store.put_record(row[0], row[-1].encode())
        except BaseException:
            ids = [row[0] for row in rows]
            _retry(lambda: conn.executemany("DELETE FROM artifacts WHERE artifact_id = ?", [(i,) for i in ids]))
            for r in records:  # a mirror may be half written too: take back every one
                try:
                    self.store.delete_record(r.artifact_id, r.run_id)
                except Exception:  # noqa: BLE001 - the original failure is what the caller must see
                    pass
            raise

    def get(self, artifact_id: str) -> ArtifactRecord | None:
        row = self._conn().execute(
            "SELECT record FROM artifacts WHERE artifact_id = ?", (artifact_id,)).fetchone()
        if row is not None:
            return ArtifactRecord.model_validate_json(row[0])
        shared = self.store.get_record(artifact_id)
        if shared is None:
            return None
        record = ArtifactRecord.model_validate_json(shared)
        try:
            conn = self._conn()
            _retry(lambda: conn.execute(
                "INSERT OR IGNORE INTO artifacts VALUES (?,?,?,?,?,?,?,?,?)",
                (record.artifact_id, record.run_id, record.kind, record.status,
                 record.created_at.isoformat(), record.sha256, record.byte_size, record.row_count,
                 shared.decode()),
            ))
        except sqlite3.Error:
            pass  # a cache miss next time is harmless
        return record

    def list(self, run_id: str | None = None, limit: int | None = None) -> list[ArtifactRecord]:
        return list(self.iter(run_id, limit))

    def iter(self, run_id: str | None = None, limit: int | None = None) -> Iterator[ArtifactRecord]:
        sql = "SELECT record FROM artifacts"
        args: tuple = ()
        if run_id is not None:
            sql += " WHERE run_id = ?"
            args = (run_id,)
        sql += " ORDER BY created_at, rowid"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        for (data,) in self._conn().execute(sql, args):
            yield ArtifactRecord.model_validate_json(data)

    def import_shared(self, run_id: str | None = None) -> int:
        """Copy records other workers kept in a shared store into this catalog."""
        ids = self.store.shared_record_ids(run_id)
        if not ids:
            return 0
        conn = self._conn()
        known = {a for (a,) in conn.execute("SELECT artifact_id FROM artifacts")}
        added = 0
        for artifact_id in ids:
            if artifact_id not in known and self.get(artifact_id) is not None:
                added += 1
        return added

    def count(self, run_id: str | None = None) -> int:
        if run_id is None:
            return self._conn().execute("SELECT count(*) FROM artifacts").fetchone()[0]
        return self._conn().execute("SELECT count(*) FROM artifacts WHERE run_id = ?", (run_id,)).fetchone()[0]

    def referenced_hashes(self) -> set[str]:
        return {h for (h,) in self._conn().execute("SELECT DISTINCT sha256 FROM artifacts")}


def _init(conn: sqlite3.Connection) -> None:
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise sqlite3.OperationalError(f"could not switch the catalog to WAL (got {mode})")
    conn.executescript(_SCHEMA)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise sqlite3.OperationalError(f"the catalog was written by a newer assay (schema {version})")
    if version < SCHEMA_VERSION:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def _retry(fn, attempts: int = 50):
    # busy_timeout covers most contention; a few SQLite paths (WAL switch,
    # schema creation racing another process) return "locked" immediately.
    for i in range(attempts):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or i == attempts - 1:
                raise
            time.sleep(min(0.01 * (i + 1), 0.2))
