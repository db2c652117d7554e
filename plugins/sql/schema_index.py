"""The schema index of one datasource: SQLite FTS5 over its tables, kept under ``ASSAY_HOME/schema/``.

One file per datasource (its name and a digest of its URL). ``meta.schema``
holds the tables as the engine described them (a JSON array of
:class:`.schema.TableInfo`, comments included), ``tables`` their names;
``tables_fts`` indexes, per table, the words of its name
(split on ``_``, ``.``, ``-`` and case: ``customerOrderItems`` reads
``customer order items``), the words of its columns' names, and its notes (the
database's comments on the table and its columns, and the knowledge base's
definitions that name it), with ``porter unicode61`` like the knowledge index.
``meta.fingerprint`` is the engine's schema fingerprint when the index was
built: the datasource compares it with the live one and rebuilds only when it
changed. ``meta.notes`` is the digest of the knowledge bases' definitions
indexed as notes: when the knowledge bases change, the notes are indexed
again (:meth:`SchemaIndex.set_notes`) without introspecting the database. ``samples`` caches the distinct values read for low-cardinality text
columns, and is emptied by every rebuild.

A datasource without ``ASSAY_HOME`` (made outside a kernel) keeps the same
index in memory.

Questions are untrusted: :func:`match_expression` puts only their words, each
double-quoted, into the FTS5 MATCH text.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sqlite3
import threading
import time
from pathlib import Path

from pydantic import TypeAdapter

from .schema import TableInfo

INDEX_VERSION = 1
_TABLES = TypeAdapter(list[TableInfo])
MAX_QUERY_TERMS = 32
# bm25() weights of the columns name, columns, notes: a word of the table's own name counts most.
WEIGHTS = (10.0, 2.0, 3.0)
_WORD = re.compile(r"[^\W_]+")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W\d_A-Za-z]+")
# Words that say nothing about which table a question needs.
STOP_WORDS = frozenset(
    """
a about across all also an and any are as at be been by can could did do does each for from get give had has
have how i in into is it its last me more most my no not of on or our per please show so than that the their
them then there these they this those to us was we were what when where which who why will with within would
you your top many much list find tell between over under during since
""".split()
)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tables (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS samples (
    table_name TEXT NOT NULL, column_name TEXT NOT NULL, vals TEXT NOT NULL, read_at REAL NOT NULL,
    PRIMARY KEY (table_name, column_name));
CREATE VIRTUAL TABLE IF NOT EXISTS tables_fts USING fts5(name, columns, notes, tokenize='porter unicode61');
INSERT OR IGNORE INTO meta VALUES ('version', '{INDEX_VERSION}');
"""


def split_name(name: str) -> list[str]:
    """A schema name's words: ``fact_SalesDaily`` -> ``['fact', 'sales', 'daily']``."""
    return list(_split(name))


@functools.lru_cache(maxsize=65_536)
def _split(name: str) -> tuple[str, ...]:
    return tuple(w.lower() for part in re.split(r"[\W_]+", name) for w in _PARTS.findall(part))


def question_terms(question: str) -> list[str]:
    """A question's words worth ranking by (lower case, stop words dropped unless nothing else is left)."""
    words = list(dict.fromkeys(w for raw in _WORD.findall(question) for w in split_name(raw)))[
        :MAX_QUERY_TERMS
    ]
    return [w for w in words if w not in STOP_WORDS] or words


def match_expression(question: str) -> str:
    """The FTS5 MATCH text for an untrusted question: its words, each double-quoted, joined by OR."""
    return " OR ".join(f'"{w}"' for w in question_terms(question))


def index_path(home: Path, datasource: str, url: str) -> Path:
    """Where datasource ``datasource`` at ``url`` (password already hidden) keeps its index."""
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", datasource)[:64] or "db"
    return Path(home) / "schema" / f"{safe}-{digest}.sqlite"


def _fts_row(table: TableInfo, notes: list[str]) -> tuple[str, str, str]:
    name = " ".join(split_name(table.name) + [table.name.lower()])
    columns = " ".join(w for col in table.columns for w in split_name(col.name))
    texts = [table.comment] + [f"{c.name}: {c.comment}" for c in table.columns if c.comment] + notes
    return name, columns, "\n".join(t for t in texts if t)


class SchemaIndex:
    """One datasource's schema index (a file, or memory when ``path`` is None). Thread-safe."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(self.path) if self.path is not None else ":memory:", check_same_thread=False
            )
            try:
                version = None
                try:
                    row = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
                    version = row[0] if row else None
                except sqlite3.OperationalError:
                    pass
                if version is not None and version != str(
                    INDEX_VERSION
                ):  # an older layout: start again
                    conn.executescript(
                        "DROP TABLE IF EXISTS meta; DROP TABLE IF EXISTS tables; "
                        "DROP TABLE IF EXISTS samples; DROP TABLE IF EXISTS tables_fts;"
                    )
                conn.executescript(_SCHEMA)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def fingerprint(self) -> str | None:
        """The schema fingerprint the index was built for (None: never built)."""
        with self._lock:
            row = (
                self._connection()
                .execute("SELECT value FROM meta WHERE key = 'fingerprint'")
                .fetchone()
            )
        return row[0] if row else None

    def load_tables(self) -> list[TableInfo]:
        """The tables as indexed, in the engine's order (one JSON array: the fastest to validate)."""
        with self._lock:
            row = (
                self._connection().execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            )
        return _TABLES.validate_json(row[0]) if row else []

    def rebuild(
        self,
        tables: list[TableInfo],
        fingerprint: str | None,
        notes: dict[str, list[str]] | None = None,
    ) -> None:
        """Replace the whole index with ``tables`` in one transaction (a reader sees before or after)."""
        notes = notes or {}
        with self._lock:
            conn = self._connection()
            with conn:
                conn.execute("DELETE FROM tables")
                conn.execute("DELETE FROM tables_fts")
                conn.execute("DELETE FROM samples")
                conn.executemany(
                    "INSERT INTO tables (id, name) VALUES (?, ?)",
                    [(i, t.name) for i, t in enumerate(tables, 1)],
                )
                conn.executemany(
                    "INSERT INTO tables_fts (rowid, name, columns, notes) VALUES (?, ?, ?, ?)",
                    [(i, *_fts_row(t, notes.get(t.name, []))) for i, t in enumerate(tables, 1)],
                )
                conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('schema', ?)",
                    (_TABLES.dump_json(tables).decode(),),
                )
                conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('fingerprint', ?)", (fingerprint or "",)
                )
                conn.execute("DELETE FROM meta WHERE key = 'notes'")
                conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('built_at', ?)", (str(time.time()),)
                )

    def notes_key(self) -> str | None:
        """The digest of the knowledge-base notes the index holds (None: none given since the last rebuild)."""
        with self._lock:
            row = (
                self._connection().execute("SELECT value FROM meta WHERE key = 'notes'").fetchone()
            )
        return row[0] if row else None

    def set_notes(self, tables: list[TableInfo], notes: dict[str, list[str]], key: str) -> None:
        """Index ``notes`` (the knowledge base's definitions naming each table) in place of the ones held,
        keeping the tables and cached samples; ``key`` is their digest (see :meth:`notes_key`)."""
        with self._lock:
            conn = self._connection()
            with conn:
                ids = dict(conn.execute("SELECT name, id FROM tables"))
                rows = [(ids[t.name], t) for t in tables if t.name in ids]
                conn.executemany("DELETE FROM tables_fts WHERE rowid = ?", [(i,) for i, _ in rows])
                conn.executemany(
                    "INSERT INTO tables_fts (rowid, name, columns, notes) VALUES (?, ?, ?, ?)",
                    [(i, *_fts_row(t, notes.get(t.name, []))) for i, t in rows],
                )
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('notes', ?)", (key,))

    def search(self, question: str, limit: int = 40) -> list[tuple[str, float]]:
        """Tables ranked for ``question`` by BM25, best first: (name, score > 0)."""
        expression = match_expression(question)
        if not expression:
            return []
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    "SELECT t.name, bm25(tables_fts, ?, ?, ?) AS rank FROM tables_fts JOIN tables t ON t.id = tables_fts.rowid "
                    "WHERE tables_fts MATCH ? ORDER BY rank LIMIT ?",
                    (*WEIGHTS, expression, limit),
                )
                .fetchall()
            )
        return [(name, -rank) for name, rank in rows]

    def samples(self, table: str) -> dict[str, list[str]] | None:
        """The cached sample values of ``table``'s columns (None: never read)."""
        with self._lock:
            rows = (
                self._connection()
                .execute("SELECT column_name, vals FROM samples WHERE table_name = ?", (table,))
                .fetchall()
            )
        if not rows:
            return None
        return {col: json.loads(vals) for col, vals in rows if col}

    def store_samples(self, table: str, values: dict[str, list[str]]) -> None:
        """Cache ``table``'s sample values (a row with no column marks a table read with none to keep)."""
        now = time.time()
        with self._lock:
            conn = self._connection()
            with conn:
                conn.execute("DELETE FROM samples WHERE table_name = ?", (table,))
                conn.executemany(
                    "INSERT INTO samples VALUES (?, ?, ?, ?)",
                    [(table, col, json.dumps(vals), now) for col, vals in values.items()]
                    + [(table, "", "[]", now)],
                )

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
