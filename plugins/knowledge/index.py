"""The on-disk index of one knowledge base: SQLite FTS5, BM25, ``porter unicode61``.

One file per base under ``ASSAY_HOME/knowledge/``. ``files`` holds each
source file's SHA-256; ``passages`` its passages; ``passages_fts`` is an
external-content FTS5 table over their heading and text, kept in step by
:meth:`KnowledgeIndex.update` (a file's old rows are deleted from it with
their old values; new rows are added, or the whole FTS index is rebuilt in
one pass when an update writes much of the base). It re-parses only files
whose hash changed (and files that failed last time) and drops files that
are gone, all in one transaction: a reader sees the index before or after,
never half.

Queries are untrusted: :func:`match_expression` builds the MATCH text from
the query's words only, each one double-quoted, so FTS5 syntax (``"``,
``*``, ``NEAR``, ``AND``, ``:``, parentheses) is never interpreted.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import KNOWLEDGE_INDEX_FAILED, KnowledgeError
from .parsing import Passage, kind_of

# Bump when parsing changes what passages a file gives: every file is then parsed again.
PARSER_VERSION = 3
MAX_QUERY_TERMS = 32
PRUNE_MIN_PASSAGES = (
    2_000  # from this size on, a search drops words most passages hold (see _without_common_terms)
)
HEADING_WEIGHT = 4.0  # bm25() column weight of the heading against 1.0 for the text
_WORD = re.compile(r"[^\W_]+")
# Words too common to rank by; dropped from a query unless nothing else is left.
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "how",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "to",
        "was",
        "what",
        "when",
        "which",
        "who",
        "why",
        "with",
    ]
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, display TEXT NOT NULL, kind TEXT NOT NULL,
    sha256 TEXT, byte_size INTEGER, status TEXT NOT NULL, error_code TEXT, error TEXT,
    passages INTEGER NOT NULL DEFAULT 0, title TEXT, indexed_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS passages (
    id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, heading TEXT NOT NULL, text TEXT NOT NULL,
    line_start INTEGER NOT NULL, line_end INTEGER NOT NULL, page INTEGER, sha256 TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS passages_file ON passages (file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(
    heading, text, content='passages', content_rowid='id', tokenize='porter unicode61');
DROP TRIGGER IF EXISTS passages_ai;
DROP TRIGGER IF EXISTS passages_ad;
"""
# Above this share of the base's passages written in one update, the FTS index is rebuilt in one pass
# (about 4x cheaper than adding the rows one by one) instead of being given the new rows.
REBUILD_SHARE = 0.25


# Per connection: the query's words through the index's tokenizer (to look their stems up), and the
# index's terms with the number of passages holding each.
_TEMP = """
CREATE VIRTUAL TABLE temp.query_words USING fts5(word, tokenize='porter unicode61');
CREATE VIRTUAL TABLE temp.query_terms USING fts5vocab(temp, query_words, 'instance');
CREATE VIRTUAL TABLE temp.passage_terms USING fts5vocab(main, passages_fts, 'row');
"""


def match_expression(query: str) -> str:
    """The FTS5 MATCH text for an untrusted query: its words, each double-quoted, joined by OR.

    Only letters and digits reach the expression, so no FTS5 operator or
    syntax character can; ``""`` when the query has no word.
    """
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))[:MAX_QUERY_TERMS]
    kept = [w for w in words if w not in STOP_WORDS] or words
    return " OR ".join(f'"{w}"' for w in kept)


@dataclass(frozen=True)
class SourceFile:
    """A file the base holds: where it is, and the name results show for it."""

    path: Path
    display: str


@dataclass
class Hit:
    id: int
    file: str
    heading: str
    line_start: int
    line_end: int
    page: int | None
    text: str
    file_sha256: str
    passage_sha256: str
    bm25: float | None = None
    score: float = 0.0
    rankers: list[str] = field(default_factory=list)


@dataclass
class FileState:
    display: str
    kind: str
    status: str  # indexed | failed | skipped
    passages: int
    sha256: str | None
    byte_size: int | None
    error_code: str | None
    error: str | None
    title: str | None


@dataclass
class IndexReport:
    """What one update did."""

    added: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # (file, code, message)
    passages: int = 0
    files: int = 0
    elapsed_ms: float = 0.0
    new_files: list[int] = field(
        default_factory=list, repr=False
    )  # file ids whose passages were written
    new_passages: int = 0

    def summary(self) -> str:
        text = (
            f"{self.files} files, {self.passages} passages: {self.added} added, {self.changed} changed, "
            f"{self.unchanged} unchanged, {self.removed} removed, {len(self.failed)} failed "
            f"({self.elapsed_ms:.0f} ms)"
        )
        return text


Parser = Callable[[Path, bytes], list[Passage]]


def _delete_passages(db: sqlite3.Connection, file_id: int) -> None:
    """Remove a file's passages from the FTS index (with their old values, as an external-content table
    needs) and from the table."""
    db.execute(
        "INSERT INTO passages_fts (passages_fts, rowid, heading, text)"
        " SELECT 'delete', id, heading, text FROM passages WHERE file_id = ?",
        (file_id,),
    )
    db.execute("DELETE FROM passages WHERE file_id = ?", (file_id,))


class KnowledgeIndex:
    """One base's index file. Thread-safe: one connection, one lock."""

    def __init__(self, path: Path, config_key: str) -> None:
        self.path = path
        self.config_key = json.dumps(
            {"parser": PARSER_VERSION, "config": config_key}, sort_keys=True
        )
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(
                    self.path, check_same_thread=False, isolation_level=None, timeout=30
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.executescript(_SCHEMA)
                conn.executescript(_TEMP)
            except sqlite3.Error as exc:
                raise KnowledgeError(
                    KNOWLEDGE_INDEX_FAILED,
                    f"cannot open the knowledge index {self.path}: {exc}",
                    "Check that ASSAY_HOME is writable; `assay knowledge index` rebuilds it.",
                ) from None
            self._conn = conn
        return self._conn

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    # --- writing ------------------------------------------------------------

    def update(self, sources: list[SourceFile], parser: Parser, max_file_bytes: int) -> IndexReport:
        """Bring the index in step with ``sources``: parse new and changed files, drop missing ones."""
        started = time.perf_counter()
        report = IndexReport()
        with self._lock:
            db = self._db()
            try:
                db.execute("BEGIN IMMEDIATE")
                row = db.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
                if (
                    row is None or row[0] != self.config_key
                ):  # new index, or parsing changed: start over
                    db.execute("INSERT INTO passages_fts (passages_fts) VALUES ('delete-all')")
                    db.execute("DELETE FROM passages")
                    db.execute("DELETE FROM files")
                    db.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('config', ?)", (self.config_key,)
                    )
                known = {
                    path: (fid, sha, status)
                    for fid, path, sha, status in db.execute(
                        "SELECT id, path, sha256, status FROM files"
                    )
                }
                seen: set[str] = set()
                for source in sources:
                    key = str(source.path)
                    if key in seen:
                        continue
                    seen.add(key)
                    self._update_file(db, source, known.get(key), parser, max_file_bytes, report)
                for path, (fid, _, _) in known.items():
                    if path not in seen:
                        _delete_passages(db, fid)
                        db.execute("DELETE FROM files WHERE id = ?", (fid,))
                        report.removed += 1
                self._index_new(db, report)
                db.execute("COMMIT")
            except BaseException as exc:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise KnowledgeError(
                        KNOWLEDGE_INDEX_FAILED,
                        f"cannot update the knowledge index {self.path}: {exc}",
                        "Check the disk and ASSAY_HOME; the index was left as it was.",
                    ) from None
                raise
            report.files, report.passages = db.execute(
                "SELECT count(*), coalesce(sum(passages), 0) FROM files"
            ).fetchone()
        report.elapsed_ms = (time.perf_counter() - started) * 1000
        return report

    def _update_file(
        self,
        db: sqlite3.Connection,
        source: SourceFile,
        known: tuple[int, str, str] | None,
        parser: Parser,
        max_file_bytes: int,
        report: IndexReport,
    ) -> None:
        kind = kind_of(source.path)
        now = time.time()
        sha = size = None
        passages: list[Passage] = []
        status, code, error = "indexed", None, None
        try:
            size = source.path.stat().st_size
            if size > max_file_bytes:
                status, code, error = (
                    "skipped",
                    "KNOWLEDGE_FILE_UNREADABLE",
                    (
                        f"{size:,} bytes, over the {max_file_bytes:,}-byte limit (ASSAY_KNOWLEDGE_MAX_FILE_BYTES)"
                    ),
                )
            else:
                data = source.path.read_bytes()
                sha = hashlib.sha256(data).hexdigest()
                if known is not None and known[1] == sha and known[2] == "indexed":
                    report.unchanged += 1
                    return
                passages = parser(source.path, data)
        except OSError as exc:
            status, code, error = (
                "failed",
                "KNOWLEDGE_FILE_UNREADABLE",
                f"{type(exc).__name__}: {exc.strerror or exc}",
            )
        except KnowledgeError as exc:
            status, code, error = "failed", exc.code, exc.message
        if known is not None:
            _delete_passages(db, known[0])
            report.changed += 1
        else:
            report.added += 1
        if code is not None:
            report.failed.append((source.display, code, error or ""))
        title = (
            next((p.heading.split(" > ")[0] for p in passages if p.heading), None)
            if kind == "markdown"
            else None
        )
        fid = db.execute(
            "INSERT INTO files (path, display, kind, sha256, byte_size, status, error_code, error, passages, title,"
            " indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET display=excluded.display,"
            " kind=excluded.kind, sha256=excluded.sha256, byte_size=excluded.byte_size, status=excluded.status,"
            " error_code=excluded.error_code, error=excluded.error, passages=excluded.passages, title=excluded.title,"
            " indexed_at=excluded.indexed_at RETURNING id",
            (
                str(source.path),
                source.display,
                kind,
                sha,
                size,
                status,
                code,
                error,
                len(passages),
                title,
                now,
            ),
        ).fetchone()[0]
        db.executemany(
            "INSERT INTO passages (file_id, heading, text, line_start, line_end, page, sha256) VALUES (?,?,?,?,?,?,?)",
            (
                (
                    fid,
                    p.heading,
                    p.text,
                    p.line_start,
                    p.line_end,
                    p.page,
                    hashlib.sha256(p.text.encode("utf-8")).hexdigest(),
                )
                for p in passages
            ),
        )
        if passages:
            report.new_files.append(fid)
            report.new_passages += len(passages)

    def _index_new(self, db: sqlite3.Connection, report: IndexReport) -> None:
        """Give the FTS index this update's new passages: row by row, or one rebuild when they are many."""
        if not report.new_files:
            return
        total = db.execute("SELECT count(*) FROM passages").fetchone()[0]
        if report.new_passages > REBUILD_SHARE * total:
            db.execute("INSERT INTO passages_fts (passages_fts) VALUES ('rebuild')")
            return
        for fid in report.new_files:
            db.execute(
                "INSERT INTO passages_fts (rowid, heading, text) SELECT id, heading, text FROM passages"
                " WHERE file_id = ?",
                (fid,),
            )

    # --- reading ------------------------------------------------------------

    _HIT_COLUMNS = (
        "p.id, f.display, p.heading, p.line_start, p.line_end, p.page, p.text, f.sha256, p.sha256"
    )

    def search(self, match: str, limit: int) -> list[Hit]:
        """The best ``limit`` passages for a MATCH expression from :func:`match_expression` (BM25, best first)."""
        if not match:
            return []
        with self._lock:
            match = self._without_common_terms(match)
            # rank the matches inside FTS5 first, then join only the best few to their passages and files
            rows = (
                self._db()
                .execute(
                    f"SELECT {self._HIT_COLUMNS}, best.score FROM"
                    f" (SELECT rowid, bm25(passages_fts, {HEADING_WEIGHT}, 1.0) AS score FROM passages_fts"
                    "  WHERE passages_fts MATCH ? ORDER BY score LIMIT ?) AS best"
                    " JOIN passages p ON p.id = best.rowid JOIN files f ON f.id = p.file_id ORDER BY best.score",
                    (match, limit),
                )
                .fetchall()
            )
        hits = []
        for row in rows:
            hit = Hit(*row[:9])
            hit.bm25 = -row[9]  # bm25() is lower-is-better; shown higher-is-better
            hits.append(hit)
        return hits

    def _without_common_terms(self, match: str) -> str:
        """``match`` less the words found in more than half the passages, when another word is left.

        FTS5's BM25 gives such a word an IDF of almost zero (1e-6), so it
        cannot change the order of passages that match the other words, but
        scoring it costs a pass over most of the index. Only in bases of
        :data:`PRUNE_MIN_PASSAGES` passages or more: in a smaller one the pass
        is cheap, and passages holding only such words still fill ``k``.
        Words are looked up after stemming (through the index's tokenizer).
        """
        words = match[1:-1].split('" OR "')
        if len(words) < 2:
            return match
        db = self._db()
        total = self._passage_count(db)
        if (
            total < PRUNE_MIN_PASSAGES
        ):  # cheap anyway: keep every match (passages holding only common words too)
            return match
        db.execute("DELETE FROM temp.query_words")
        db.executemany("INSERT INTO temp.query_words (rowid, word) VALUES (?, ?)", enumerate(words))
        stems: dict[int, list[str]] = {}
        for term, row in db.execute("SELECT term, doc FROM temp.query_terms"):
            stems.setdefault(row, []).append(term)
        common = set()
        for i, terms in stems.items():
            counts = [
                db.execute("SELECT doc FROM temp.passage_terms WHERE term = ?", (t,)).fetchone()
                for t in terms
            ]
            if all(c is not None and c[0] * 2 > total for c in counts):
                common.add(i)
        kept = [w for i, w in enumerate(words) if i not in common]
        return " OR ".join(f'"{w}"' for w in kept) if kept else match

    def _passage_count(self, db: sqlite3.Connection) -> int:
        return db.execute("SELECT count(*) FROM passages").fetchone()[0]

    def hits(self, ids: list[int]) -> dict[int, Hit]:
        """Passages by id (for a second ranker's picks)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = (
                self._db()
                .execute(
                    f"SELECT {self._HIT_COLUMNS} FROM passages p JOIN files f ON f.id = p.file_id WHERE p.id IN ({marks})",
                    ids,
                )
                .fetchall()
            )
        return {row[0]: Hit(*row) for row in rows}

    def passages(self) -> Iterator[tuple[int, str, str, str]]:
        """Every passage as ``(id, heading, text, sha256)``: what a second ranker indexes."""
        with self._lock:
            rows = (
                self._db()
                .execute("SELECT id, heading, text, sha256 FROM passages ORDER BY id")
                .fetchall()
            )
        yield from rows

    def files(self) -> list[FileState]:
        with self._lock:
            rows = (
                self._db()
                .execute(
                    "SELECT display, kind, status, passages, sha256, byte_size, error_code, error, title"
                    " FROM files ORDER BY display"
                )
                .fetchall()
            )
        return [FileState(*row) for row in rows]

    def headings(self, limit: int) -> list[tuple[str, str]]:
        """``(file, heading)`` of the top-level sections, in file order (for the prompt's short index)."""
        with self._lock:
            rows = (
                self._db()
                .execute(
                    "SELECT f.display, p.heading FROM passages p JOIN files f ON f.id = p.file_id"
                    " WHERE p.heading != '' GROUP BY f.display, p.heading ORDER BY f.display, min(p.id) LIMIT ?",
                    (limit,),
                )
                .fetchall()
            )
        return rows
