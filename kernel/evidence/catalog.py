"""The catalog: artifact records, in an embedded SQLite file (WAL) or a shared PostgreSQL database.

By default the catalog is ``ASSAY_HOME/artifacts/catalog.sqlite``: one
connection per thread and per process (a connection is never used after
``fork``); writers queue on SQLite's lock with a generous busy timeout, so
many threads and processes can capture at once. With
``ASSAY_CATALOG_URL=postgresql://...`` the same table lives in PostgreSQL and
every process and host pointed at it shares one catalog
(:mod:`assay.kernel.database`). A record is keyed by its artifact id, so a
record is written once: never lost, never duplicated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..database import POSTGRESQL, SQLITE, Database, SQLiteDatabase, open_database
from .content_store import ContentStore
from .records import ArtifactRecord

T = TypeVar("T")
_COLUMNS = "artifact_id, run_id, kind, status, created_at, sha256, byte_size, row_count, record"
_INSERT = f"INSERT INTO artifacts ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)"
_SCHEMA = {
    SQLITE: """
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
""",
    # the same table; ``seq`` gives records written in the same microsecond the order SQLite's rowid gives
    POSTGRESQL: """
CREATE TABLE IF NOT EXISTS artifacts (
    artifact_id TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    byte_size   BIGINT NOT NULL,
    row_count   BIGINT,
    record      TEXT NOT NULL,
    seq         BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX IF NOT EXISTS artifacts_by_run ON artifacts (run_id, created_at);
CREATE INDEX IF NOT EXISTS artifacts_by_sha ON artifacts (sha256);
""",
}
_TIEBREAK = {SQLITE: "rowid", POSTGRESQL: "seq"}

_BUSY_MS = 60_000
SCHEMA_VERSION = 1


class ArtifactCatalog:
    """Records of one content store, plus access to that store."""

    def __init__(
        self, store: ContentStore, path: Path | None = None, *, database: Database | None = None
    ) -> None:
        self.store = store
        if database is None:
            database = (
                SQLiteDatabase(path, busy_ms=_BUSY_MS, owner="catalog")
                if path is not None
                else open_database(
                    store.settings, store.catalog_path, busy_ms=_BUSY_MS, owner="catalog"
                )
            )
        self.db = database
        # run id -> (check(tx) run inside the transaction writing that run's records, raising to refuse the
        # write (a worker that lost the run's lease); how to run that transaction again through an outage)
        self.fences: dict[
            str, tuple[Callable[[Any], None], Callable[[Callable[[], None]], None]]
        ] = {}
        #: the SQLite file (``None`` when the catalog is in PostgreSQL)
        self.path: Path | None = database.path if isinstance(database, SQLiteDatabase) else None

    def _ready(self) -> Database:
        self.db.ensure("catalog", SCHEMA_VERSION, _SCHEMA)
        return self.db

    def close(self) -> None:
        self.db.close()

    # --- records ------------------------------------------------------------
    def fence(
        self,
        run_id: str,
        check: Callable[[Any], None] | None,
        retrying: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        """Run ``check(tx)`` in the transaction of every record written for ``run_id``, the transaction run by
        ``retrying`` (default: once); ``check`` None: no more."""
        if check is None:
            self.fences.pop(run_id, None)
        else:
            self.fences[run_id] = (check, retrying or (lambda fn: fn()))

    def read_through_outage(self, run_id: str, read: Callable[[], T]) -> T:
        """``read()``, run as ``run_id``'s fence runs its writes (again through a catalog outage, for a run
        on a worker), or once when the run has no fence."""
        fence = self.fences.get(run_id)
        if fence is None:
            return read()
        out: list[T] = []
        fence[1](lambda: out.append(read()))
        return out[-1]

    def _insert(self, rows: list[tuple], run_ids: set[str]) -> Database:
        fences = [self.fences[r] for r in run_ids if r in self.fences]
        if not fences:
            db = self._ready()
            db.retry(
                lambda: (
                    db.executemany(_INSERT, rows)
                    if len(rows) != 1
                    else db.execute(_INSERT, rows[0])
                )
            )
            return db

        def write() -> None:
            db = self._ready()
            with db.transaction() as tx:
                for check, _ in fences:
                    check(tx)
                tx.executemany(_INSERT, rows)

        fences[0][1](write)
        return self.db

    def add(self, record: ArtifactRecord) -> None:
        data = record.model_dump_json()
        db = self._insert([_row(record, data)], {record.run_id})
        try:
            self.store.put_record(record.artifact_id, data.encode())
        except BaseException:
            # a record only some workers can see would be a half-kept artifact
            db.retry(
                lambda: db.execute(
                    "DELETE FROM artifacts WHERE artifact_id = ?", (record.artifact_id,)
                )
            )
            raise

    def add_all(self, records: list[ArtifactRecord]) -> None:
        """Write several records as one: all of them, or (on any failure) none.

        One transaction; then each is mirrored to a shared store, and a
        mirror that fails takes every record of the group back out (here and
        from the shared store), so no reader ever sees part of the group.
        """
        rows = [_row(r, r.model_dump_json()) for r in records]
        db = self._insert(rows, {r.run_id for r in records})
        try:
            for row in rows:
                self.store.put_record(row[0], row[-1].encode())
        except BaseException:
            ids = [row[0] for row in rows]
            db.retry(
                lambda: db.executemany(
                    "DELETE FROM artifacts WHERE artifact_id = ?", [(i,) for i in ids]
                )
            )
            for r in records:  # a mirror may be half written too: take back every one
                try:
                    self.store.delete_record(r.artifact_id, r.run_id)
                except Exception:  # noqa: BLE001 - the original failure is what the caller must see
                    pass
            raise

    def get(self, artifact_id: str) -> ArtifactRecord | None:
        db = self._ready()
        row = db.execute(
            "SELECT record FROM artifacts WHERE artifact_id = ?", (artifact_id,)
        ).fetchone()
        if row is not None:
            return ArtifactRecord.model_validate_json(row[0])
        shared = self.store.get_record(artifact_id)
        if shared is None:
            return None
        record = ArtifactRecord.model_validate_json(shared)
        try:
            db.retry(
                lambda: db.execute(
                    _INSERT + " ON CONFLICT (artifact_id) DO NOTHING", _row(record, shared.decode())
                )
            )
        except Exception:  # noqa: BLE001 - a cache miss next time is harmless
            pass
        return record

    def bytes_of_runs(self, run_ids: list[str]) -> int:
        """Bytes of every artifact these runs captured (the sum of their records' ``byte_size``)."""
        db = self._ready()
        total = 0
        for start in range(0, len(run_ids), 500):
            chunk = run_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            row = db.execute(
                f"SELECT COALESCE(SUM(byte_size), 0) FROM artifacts WHERE run_id IN ({marks})",
                tuple(chunk),
            ).fetchone()
            total += int(row[0] or 0)
        return total

    def list(self, run_id: str | None = None, limit: int | None = None) -> list[ArtifactRecord]:
        return list(self.iter(run_id, limit))

    def iter(
        self, run_id: str | None = None, limit: int | None = None, *, newest_first: bool = False
    ) -> Iterator[ArtifactRecord]:
        sql = "SELECT record FROM artifacts"
        args: tuple = ()
        if run_id is not None:
            sql += " WHERE run_id = ?"
            args = (run_id,)
        db = self._ready()
        order = " DESC" if newest_first else ""
        sql += f" ORDER BY created_at{order}, {_TIEBREAK[db.dialect]}{order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        for (data,) in db.execute(sql, args):
            yield ArtifactRecord.model_validate_json(data)

    def import_shared(self, run_id: str | None = None) -> int:
        """Copy records other workers kept in a shared store into this catalog."""
        ids = self.store.shared_record_ids(run_id)
        if not ids:
            return 0
        known = {
            a for (a,) in self._ready().execute("SELECT artifact_id FROM artifacts").fetchall()
        }
        added = 0
        for artifact_id in ids:
            if artifact_id not in known and self.get(artifact_id) is not None:
                added += 1
        return added

    def count(self, run_id: str | None = None) -> int:
        db = self._ready()
        if run_id is None:
            return db.execute("SELECT count(*) FROM artifacts").fetchone()[0]
        return db.execute("SELECT count(*) FROM artifacts WHERE run_id = ?", (run_id,)).fetchone()[
            0
        ]

    def has_hash(self, sha256: str) -> bool:
        """Whether any record refers to this content."""
        return (
            self._ready()
            .execute("SELECT 1 FROM artifacts WHERE sha256 = ? LIMIT 1", (sha256,))
            .fetchone()
            is not None
        )

    def run_ages(self) -> dict[str, str]:
        """Every run with records, and its newest record's ``created_at`` (ISO 8601, UTC)."""
        rows = (
            self._ready()
            .execute("SELECT run_id, MAX(created_at) FROM artifacts GROUP BY run_id")
            .fetchall()
        )
        return dict(rows)

    def delete_records(self, records: Sequence[ArtifactRecord]) -> None:
        """Remove these records (here and from a shared store); their content is left to
        :func:`~.maintenance.collect_garbage`, which keeps content any other record refers to."""
        db = self._ready()
        ids = [(r.artifact_id,) for r in records]
        if ids:
            db.retry(lambda: db.executemany("DELETE FROM artifacts WHERE artifact_id = ?", ids))
        for record in records:
            self.store.delete_record(record.artifact_id, record.run_id)

    def referenced_hashes(self) -> set[str]:
        return {
            h for (h,) in self._ready().execute("SELECT DISTINCT sha256 FROM artifacts").fetchall()
        }


def _row(record: ArtifactRecord, data: str) -> tuple:
    return (
        record.artifact_id,
        record.run_id,
        record.kind,
        record.status,
        record.created_at.isoformat(),
        record.sha256,
        record.byte_size,
        record.row_count,
        data,
    )
