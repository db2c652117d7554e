"""A knowledge base the model can be given: a :class:`assay.Resource` of type ``knowledge``.

The base is a set of paths; its index (:mod:`.index`) lives in
``ASSAY_HOME/knowledge/NAME.sqlite`` and is brought in step with the files
on first use, again when a search comes more than ``refresh_s`` after the
last check (only changed files are parsed again), and by
``assay knowledge index``.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay import PromptBudget, Resource, ResourceType

from .errors import KNOWLEDGE_BASE_NOT_FOUND, KNOWLEDGE_QUERY_EMPTY, KnowledgeError
from .index import Hit, IndexReport, KnowledgeIndex, SourceFile, match_expression
from .parsing import parse
from .retrievers import run_retrievers
from .settings import KnowledgeBaseConfig, KnowledgeSettings

BM25_POOL = 4  # BM25 gives this many times k candidates when a second ranker is fused with it
MAX_NOTE_CHARS = 600  # a passage given to a database's schema index as a table's note, at most
_NAME_WORD = re.compile(r"[A-Za-z0-9_$]+(?:\.[A-Za-z0-9_$]+)*")


@dataclass
class SearchResult:
    base: str
    query: str
    match: str
    hits: list[Hit]
    rankers: list[str]
    warnings: list[dict[str, str]] = field(default_factory=list)


class KnowledgeBase(Resource):
    """Markdown, text, CSV data dictionaries and PDFs under some paths, searchable with BM25."""

    type = ResourceType.KNOWLEDGE

    def __init__(
        self,
        name: str,
        config: KnowledgeBaseConfig,
        *,
        home: Path,
        settings: KnowledgeSettings | None = None,
        retrievers: list[Any] | Callable[[], list[Any]] | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.description = config.description
        self.settings = settings or KnowledgeSettings()
        # second rankers: a list, or a function giving them (the kernel's registry, read at search time)
        self._retrievers = retrievers or []
        key = f"{self.settings.passage_chars}"
        self.index = KnowledgeIndex(Path(home) / "knowledge" / f"{name}.sqlite", key)
        self._fresh: IndexReport | None = None
        self._checked_at = 0.0
        self._lock = threading.Lock()
        self._naming: tuple[tuple[str, frozenset[str]], dict[str, list[str]]] | None = None

    # --- the files ------------------------------------------------------------

    def sources(self) -> tuple[list[SourceFile], list[str]]:
        """The files the base holds now, and the configured paths that do not exist."""
        roots = [Path(p) for p in self.config.paths]
        several = len(roots) > 1
        files: list[SourceFile] = []
        missing: list[str] = []
        for root in roots:
            if root.is_file():
                files.append(SourceFile(root, root.name))
            elif root.is_dir():
                for dirpath, dirnames, filenames in os.walk(root):
                    dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                    for fname in sorted(filenames):
                        path = Path(dirpath) / fname
                        if (
                            fname.startswith(".")
                            or path.suffix.lower() not in self.settings.extensions
                        ):
                            continue
                        rel = path.relative_to(root).as_posix()
                        files.append(SourceFile(path, f"{root.name}/{rel}" if several else rel))
            else:
                missing.append(str(root))
        return files, missing

    def refresh(self, force: bool = False) -> IndexReport:
        """Bring the index in step with the files: unless ``force``, only when the last check is older than
        ``refresh_s`` (a long-running process sees edited files; an unchanged base costs one hash per file)."""
        with self._lock:
            if (
                self._fresh is not None
                and not force
                and time.monotonic() - self._checked_at < self.settings.refresh_s
            ):
                return self._fresh
            files, missing = self.sources()
            if missing and not files:
                raise KnowledgeError(
                    KNOWLEDGE_BASE_NOT_FOUND,
                    f"knowledge base {self.name!r}: no such path: {', '.join(missing)}",
                    "Fix the path in ASSAY_KNOWLEDGE or [knowledge.bases] (relative paths are resolved against "
                    "the working directory).",
                )
            report = self.index.update(
                files,
                lambda path, data: parse(path, data, self.settings.passage_chars),
                self.settings.max_file_bytes,
            )
            report.failed.extend(
                (path, KNOWLEDGE_BASE_NOT_FOUND, "no such path") for path in missing
            )
            self._fresh, self._checked_at = report, time.monotonic()
            return report

    # --- searching ------------------------------------------------------------

    def search(self, query: str, k: int = 5) -> SearchResult:
        """The ``k`` best passages for ``query`` (any text: it is never read as FTS5 syntax)."""
        match = match_expression(query)
        if not match:
            raise KnowledgeError(
                KNOWLEDGE_QUERY_EMPTY,
                "the query holds no word to search for",
                "Search with words, such as 'refund rate denominator'.",
            )
        self.refresh()
        k = max(1, min(int(k), self.settings.max_k))
        retrievers = self.active_retrievers()
        bm25 = self.index.search(match, k * BM25_POOL if retrievers else k)
        hits, warnings = run_retrievers(retrievers, query, self.name, self.index, bm25, k)
        return SearchResult(
            self.name, query, match, hits, ["bm25", *(r.name for r in retrievers)], warnings
        )

    def active_retrievers(self) -> list[Any]:
        """The registered second rankers, less those ``ASSAY_KNOWLEDGE_RETRIEVERS`` leaves out."""
        found = list(self._retrievers() if callable(self._retrievers) else self._retrievers)
        chosen = self.settings.retrievers
        return found if chosen is None else [r for r in found if r.name in chosen]

    # --- definitions naming tables ---------------------------------------------

    def content_digest(self) -> str:
        """A digest of the files the base holds now (their names and SHA-256): it changes with the base."""
        self.refresh()
        parts = sorted(f"{f.display}:{f.sha256}:{f.status}" for f in self.index.files())
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

    def definitions_naming(self, names: list[str]) -> dict[str, list[str]]:
        """The passages whose text names one of ``names`` (a table, ``table.column`` or ``schema.table``,
        matched as a whole word, case-insensitively; a name that is one plain word only when written as code,
        `orders`), by the name they name: what a database puts into
        its schema index as that table's notes. Each passage is its heading and text, cut to
        :data:`MAX_NOTE_CHARS`."""
        wanted = {n.lower(): n for n in names}
        key = (self.content_digest(), frozenset(wanted))
        if self._naming is not None and self._naming[0] == key:
            return self._naming[1]
        found: dict[str, list[str]] = {}
        for _, heading, text, _ in self.index.passages():
            named: set[str] = set()
            body = f"{heading}\n{text}"
            for match in _NAME_WORD.finditer(body):
                word = match.group()
                if (
                    "_" not in word
                    and "." not in word
                    and body[match.start() - 1 : match.start()] != "`"
                ):
                    continue  # a plain word ("orders") names a table only when quoted as code
                parts = word.lower().split(".")
                # "orders", "orders.total", "public.orders", "public.orders.total": each prefix of 1-3 parts
                for start in range(len(parts)):
                    for end in range(start + 1, min(len(parts), start + 3) + 1):
                        name = wanted.get(".".join(parts[start:end]))
                        if name is not None:
                            named.add(name)
            note = (f"{heading}: {text}" if heading else text)[:MAX_NOTE_CHARS]
            for name in named:
                found.setdefault(name, []).append(note)
        self._naming = (key, found)
        return found

    # --- describing -------------------------------------------------------------

    def get_prompt(self, budget: PromptBudget | None = None) -> str:
        limit = min((budget or PromptBudget()).max_chars, self.settings.prompt_chars)
        head = f"knowledge base {self.name!r}" + (
            f": {self.description}" if self.description else ""
        )
        try:
            report = self.refresh()
        except KnowledgeError as exc:
            return f"{head}\n(unavailable: {exc.code}: {exc.message})"[:limit]
        head += (
            f"\n{report.files} files, {report.passages} passages. Search it with knowledge_search(query) "
            "for the definition of a metric or term before computing it, and cite the passage from the "
            "search's artifact. Contents:"
        )
        if report.failed:
            head += f"\n({len(report.failed)} file(s) could not be indexed: `assay knowledge ls {self.name}`)"
        lines = [head]
        used = len(head)
        shown_file = None
        headings = self.index.headings(400)
        files = self.index.files()
        for display, heading in headings:
            line = (f"- {display}: " if display != shown_file else "  ") + heading
            if used + len(line) + 1 > limit - 40:
                lines.append(
                    f"... ({len(headings)} sections in {len(files)} files; search to see the rest)"
                )
                break
            lines.append(line)
            used += len(line) + 1
            shown_file = display
        listed = {d for d, _ in headings}
        for state in files:
            if state.display not in listed and state.status == "indexed" and state.passages:
                line = f"- {state.display} ({state.passages} passages)"
                if used + len(line) + 1 > limit - 40:
                    break
                lines.append(line)
                used += len(line) + 1
        return "\n".join(lines)[:limit]

    def close(self) -> None:
        self.index.close()

    def __repr__(self) -> str:
        return f"<KnowledgeBase {self.name} {', '.join(self.config.paths)}>"
