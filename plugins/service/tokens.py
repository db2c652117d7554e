"""Bearer tokens of the service: made once, stored hashed, compared in constant time.

A token reads ``asy_<id>_<secret>``. Only the SHA-256 of the whole token is
kept (``ASSAY_HOME/service/tokens.sqlite3``, or, with
``ASSAY_CATALOG_URL=postgresql://...``, the shared catalog database, so every
API process behind one address knows every token and every run's owner),
next to its owner, a label and when it was made, last used and revoked. The secret is 32 random bytes, so a
plain SHA-256 is enough (there is nothing to guess by brute force); the
comparison uses :func:`hmac.compare_digest`, and a token whose id is unknown
is compared against a dummy digest so both paths cost the same.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.kernel.database import (
    POSTGRESQL,
    SQLITE,
    Database,
    SQLiteDatabase,
    catalog_url,
    open_database,
)

_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    token_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    digest TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_used_at REAL,
    revoked_at REAL
);
CREATE TABLE IF NOT EXISTS run_owners (
    run_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS run_requests (
    owner TEXT NOT NULL,
    request_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    run_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (owner, request_key)
);
CREATE INDEX IF NOT EXISTS run_requests_age ON run_requests (created_at);
"""
_SCHEMA = {SQLITE: _SQLITE_SCHEMA, POSTGRESQL: _SQLITE_SCHEMA.replace(" REAL", " DOUBLE PRECISION")}
SCHEMA_VERSION = 1
_TOKEN = re.compile(r"^asy_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})$")
_OWNER = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
_DUMMY = hashlib.sha256(b"assay-no-such-token").hexdigest()
_SELECT_TOKEN = (
    "SELECT token_id, owner, label, created_at, last_used_at, revoked_at, digest FROM tokens "
    "WHERE token_id = ?"
)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    owner: str
    label: str
    created_at: float
    last_used_at: float | None
    revoked_at: float | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def store_path(home: Path | str) -> Path:
    return Path(home) / "service" / "tokens.sqlite3"


def open_token_store(settings: Any) -> TokenStore:
    """The token store of these settings: a SQLite file under ASSAY_HOME, or ``ASSAY_CATALOG_URL``'s database."""
    path = store_path(settings.home)
    return TokenStore(
        open_database(settings, path, busy_ms=10_000, owner="tokens")
        if catalog_url(settings)
        else path
    )


class TokenStore:
    """Tokens and which owner each run belongs to (a SQLite file, or the shared catalog database)."""

    def __init__(self, where: Path | str | Database) -> None:
        if isinstance(where, Database):
            self.db, self.path = where, getattr(where, "path", None)
        else:
            self.path = Path(where)
            self.db = SQLiteDatabase(self.path, busy_ms=10_000, owner="tokens")
        self._ready = False
        self._local = (
            threading.local()
        )  # per thread, like the SQLite connections: the token rows kept

    def _conn(self) -> Database:
        if (
            self._ready
        ):  # every request reads here (the bearer check): no file checks once the schema is there
            return self.db
        if self.db.dialect == SQLITE and self.path is not None and not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fresh = "tokens" not in self.db.__dict__.get("_ensured", ())
        self.db.ensure("tokens", SCHEMA_VERSION, _SCHEMA)
        if fresh and self.db.dialect == SQLITE and self.path is not None:
            self.path.chmod(0o600)
        self._ready = True
        return self.db

    # --- tokens -------------------------------------------------------------

    def create(self, owner: str, label: str = "") -> tuple[str, TokenInfo]:
        """A new token for ``owner``: the token itself (shown once) and its record."""
        if not _OWNER.match(owner):
            raise ValueError("an owner is 1-64 letters, digits or . _ @ -")
        token_id = secrets.token_hex(6)
        token = f"asy_{token_id}_{secrets.token_urlsafe(32)}"
        now = time.time()
        self._conn().execute(
            "INSERT INTO tokens (token_id, owner, label, digest, created_at) VALUES (?, ?, ?, ?, ?)",
            (token_id, owner, label, digest(token), now),
        )
        return token, TokenInfo(token_id, owner, label, now, None, None)

    def list(self) -> list[TokenInfo]:
        rows = (
            self._conn()
            .execute(
                "SELECT token_id, owner, label, created_at, last_used_at, revoked_at FROM tokens "
                "ORDER BY created_at"
            )
            .fetchall()
        )
        return [TokenInfo(*row) for row in rows]

    def revoke(self, token_id: str) -> bool:
        """Revoke a token by id; False when there is no active token with that id."""
        cur = self._conn().execute(
            "UPDATE tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL",
            (time.time(), token_id),
        )
        self._forget()
        return cur.rowcount == 1

    def verify(self, token: str | None) -> TokenInfo | None:
        """The active token's record, or None (unknown, malformed, revoked: all alike)."""
        match = _TOKEN.match(token or "")
        token_id = match.group(1) if match else ""
        row = self._token_row(token_id) if match else None
        stored = row[6] if row else _DUMMY
        same = hmac.compare_digest(digest(token or ""), stored)
        if not (row and same and row[5] is None):
            return None
        now = time.time()
        if row[4] is None or now - row[4] > 60:  # a write per minute at most, not per request
            self._conn().execute(
                "UPDATE tokens SET last_used_at = ? WHERE token_id = ?", (now, token_id)
            )
            self._forget()
        return TokenInfo(*row[:6])

    def active(self, token_id: str) -> bool:
        """Whether the token ``token_id`` exists and is not revoked (a stream checks it before each delivery)."""
        row = self._token_row(token_id)
        return row is not None and row[5] is None

    def _token_row(self, token_id: str) -> tuple | None:
        """The token's row. On SQLite a known token's row is kept for this thread's connection until the file
        changes under it (``PRAGMA data_version`` moves when any other connection commits), so a revocation
        by ``assay tokens revoke`` or another process is seen by the next request, at the price of one
        pragma instead of a query per request."""
        db = self._conn()
        if db.dialect != SQLITE:
            return db.execute(_SELECT_TOKEN, (token_id,)).fetchone()
        version = (os.getpid(), db.execute("PRAGMA data_version").fetchone()[0])
        local = self._local
        if getattr(local, "version", None) != version:
            local.rows, local.version = {}, version
        row = local.rows.get(token_id)
        if row is None:
            row = db.execute(_SELECT_TOKEN, (token_id,)).fetchone()
            if row is not None:  # unknown ids are not kept: nobody fills this with guesses
                local.rows[token_id] = row
        return row

    def _forget(self) -> None:
        """Drop this thread's kept rows (after a write on its own connection, which data_version does not see)."""
        self._local.version = None

    def any_active(self) -> bool:
        return (
            self._conn().execute("SELECT 1 FROM tokens WHERE revoked_at IS NULL LIMIT 1").fetchone()
            is not None
        )

    # --- run ownership -----------------------------------------------------

    def own(self, run_id: str, owner: str) -> None:
        self._conn().execute(
            "INSERT INTO run_owners (run_id, owner, created_at) VALUES (?, ?, ?) "
            "ON CONFLICT (run_id) DO NOTHING",
            (run_id, owner, time.time()),
        )

    def owner_of(self, run_id: str) -> str | None:
        row = (
            self._conn()
            .execute("SELECT owner FROM run_owners WHERE run_id = ?", (run_id,))
            .fetchone()
        )
        return row[0] if row else None

    def runs_of(self, owner: str, limit: int | None = 50, offset: int = 0) -> builtins.list[str]:
        """The ids of ``owner``'s runs, newest first: agent runs and tool calls' evidence runs alike (every
        one with ``limit=None``)."""
        sql = "SELECT run_id FROM run_owners WHERE owner = ? ORDER BY created_at DESC, run_id"
        if limit is None:
            rows = self._conn().execute(sql, (owner,)).fetchall()
        else:
            rows = (
                self._conn().execute(sql + " LIMIT ? OFFSET ?", (owner, limit, offset)).fetchall()
            )
        return [r[0] for r in rows]

    # --- idempotency keys of POST /runs (per owner, kept ttl_s) ----------------

    def requested(self, owner: str, key: str, ttl_s: float) -> tuple[str, str] | None:
        """(run_id, fingerprint) of the run ``owner`` started with Idempotency-Key ``key`` within ``ttl_s``."""
        row = (
            self._conn()
            .execute(
                "SELECT run_id, fingerprint FROM run_requests WHERE owner = ? AND "
                "request_key = ? AND created_at >= ?",
                (owner, key, time.time() - ttl_s),
            )
            .fetchone()
        )
        return (row[0], row[1]) if row else None

    def remember(
        self, owner: str, key: str, fingerprint: str, run_id: str, ttl_s: float
    ) -> tuple[str, str]:
        """Tie ``key`` to ``run_id`` unless another request of ``owner`` tied it first (within ``ttl_s``):
        (run_id, fingerprint) of whichever holds the key. Keys older than ``ttl_s`` are dropped."""
        db, now = self._conn(), time.time()
        db.execute("DELETE FROM run_requests WHERE created_at < ?", (now - ttl_s,))
        db.execute(
            "INSERT INTO run_requests (owner, request_key, fingerprint, run_id, created_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner, request_key) DO NOTHING",
            (owner, key, fingerprint, run_id, now),
        )
        row = db.execute(
            "SELECT run_id, fingerprint FROM run_requests WHERE owner = ? AND request_key = ?",
            (owner, key),
        ).fetchone()
        return row[0], row[1]

    def forget_request(self, owner: str, key: str, run_id: str) -> None:
        """Untie ``key`` from ``run_id`` (the request failed before its run was recorded: a retry starts one)."""
        self._conn().execute(
            "DELETE FROM run_requests WHERE owner = ? AND request_key = ? AND run_id = ?",
            (owner, key, run_id),
        )

    def close(self) -> None:
        self._forget()
        self.db.close()
