"""Files as a datasource: a :class:`DatabaseResource` whose tables are registered files.

Every statement first checks that no file changed since it was registered (size and mtime; the SHA-256
when they differ): a changed file is ``FILE_CHANGED``, a missing one ``FILE_MISSING``, never silently
re-read. In a run that keeps evidence, the first query captures one ``source`` artifact per file (name,
size, SHA-256 of the bytes, format, schema per table), and every query artifact names them in its
provenance (``sources``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from assay.kernel.database_engine import DatabaseEngine
from assay.plugins.sql.errors import SqlError
from assay.plugins.sql.resource import DatabaseResource
from assay.plugins.sql.schema import TableInfo
from assay.plugins.sql.settings import DatasourceConfig, SqlSettings

from .catalog import FileFacts, Limits, TableSource, build
from .engine import FILES, SCHEME
from .errors import FILE_CHANGED, FILE_MISSING, FileError
from .sources import FileSpec

SOURCE_MEDIA_TYPE = "application/json"


def sha256_of(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def file_state(path: str | Path, size: int | None, mtime_ns: int | None, sha256: str | None) -> Any:
    """How ``path`` compares with what was registered: None when it is gone, else its ``stat`` with
    ``changed``: False when size and mtime are the same, or the size is and its SHA-256 (hashed only
    then) is the recorded one (touched, same bytes); True otherwise."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    if st.st_size == size and st.st_mtime_ns == mtime_ns:
        return st, False
    same = st.st_size == size and sha256 is not None and sha256_of(path) == sha256
    return st, not same


class FilesResource(DatabaseResource):
    """Registered files as read-only tables of one embedded DuckDB database owned by assay."""

    def __init__(
        self,
        name: str,
        specs: list[FileSpec],
        *,
        home: Path,
        limits: Limits | None = None,
        settings: SqlSettings | None = None,
        engines: Iterable[DatabaseEngine] | None = None,
        description: str = "",
        knowledge: Callable[[], Iterable[Any]] | None = None,
    ) -> None:
        self.specs = list(specs)
        self.directory, self.manifest = build(specs, Path(home), limits or Limits())
        self.upload_ids: dict[str, str] = {}  # path -> the service's upload id (RunUploads.open)
        url = f"{SCHEME}:///{self.directory / 'data.duckdb'}"
        engines = [FILES, *[e for e in (engines or ()) if getattr(e, "name", "") != FILES.name]]
        super().__init__(
            name,
            url,
            settings=settings,
            config=DatasourceConfig(url=url, description=description),
            engines=engines,
            description=description or "registered files, one table each",
            knowledge=knowledge,
        )
        self._sources: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
        self._facts_lock = threading.Lock()
        self._counts: dict[str, int] = {}

    # --- the files behind the tables ---------------------------------------

    @property
    def files(self) -> list[FileFacts]:
        seen: dict[str, FileFacts] = {}
        for table in self.manifest.tables:
            for facts in table.files:
                seen.setdefault(facts.path, facts)
        return list(seen.values())

    def check_unchanged(self) -> None:
        """Raise ``FILE_MISSING`` / ``FILE_CHANGED`` if a file is gone or its bytes changed."""
        for facts in self.files:
            state = file_state(facts.path, facts.size, facts.mtime_ns, facts.sha256)
            if state is None:
                raise FileError(
                    FILE_MISSING,
                    f"{Path(facts.path).name} is gone (registered from {facts.path})",
                    "Register the file again if it moved.",
                    details={"path": facts.path},
                )
            st, changed = state
            if not changed:
                facts.mtime_ns = st.st_mtime_ns  # the same, or touched with the same bytes
                continue
            raise FileError(
                FILE_CHANGED,
                f"{Path(facts.path).name} changed after it was registered "
                f"(size {facts.size:,} -> {st.st_size:,} bytes)",
                "Register the file again to query its new content; answers from the old content "
                "keep citing the old bytes.",
                details={"path": facts.path},
            )

    def _hash_files(self) -> None:
        """Each file's SHA-256, computed once and kept in the manifest (the next process reuses it)."""
        with self._facts_lock:
            missing = [f for f in self.files if f.sha256 is None]
            if not missing:
                return
            for facts in missing:
                facts.sha256 = sha256_of(facts.path)
            self.check_unchanged()  # what was hashed is what was registered
            try:
                (self.directory / "manifest.json").write_text(self.manifest.to_json())
            except OSError:
                pass  # a read-only home: computed again next time

    def source_document(self, facts: FileFacts) -> dict[str, Any]:
        tables = [t for t in self.manifest.tables if any(f.path == facts.path for f in t.files)]
        first: TableSource = tables[0]
        return {
            "name": Path(facts.path).name,
            "path": facts.path,
            "size": facts.size,
            "sha256": facts.sha256,
            "format": first.format,
            "datasource": self.name,
            "tables": {
                t.name: {
                    "columns": t.columns,
                    **({"sheet": t.sheet} if t.sheet else {}),
                    **({"encoding": t.encoding} if t.encoding else {}),
                    **({"renamed_columns": t.renamed} if t.renamed else {}),
                }
                for t in tables
            },
        }

    def source_artifacts(self, sink: Any) -> list[str]:
        """The ``source`` artifacts of this run (captured on first use): their ids."""
        return list(self._captured(sink).values())

    def _captured(self, sink: Any) -> dict[str, str]:
        """Path -> ``source`` artifact id of this run, captured on first use."""
        if sink is None:
            return {}
        try:
            return self._sources[sink]
        except (KeyError, TypeError):
            pass
        from assay.kernel.evidence.capture import capture_file

        self._hash_files()
        ids: dict[str, str] = {}
        for facts in self.files:
            doc = self.source_document(facts)
            record = capture_file(
                sink,
                data=json.dumps(doc, indent=1).encode(),
                name=doc["name"] + ".source.json",
                media_type=SOURCE_MEDIA_TYPE,
                kind="source",
                provenance={k: doc[k] for k in ("name", "size", "sha256", "format", "datasource")},
            )
            if record is not None:
                ids[facts.path] = record.artifact_id
        try:
            self._sources[sink] = ids
        except TypeError:
            pass
        return ids

    def recorded(self, sink: Any) -> dict[str, Any]:
        """What a run keeps of the files it used (its record's ``files``): per table given, each file's
        path, size, mtime, SHA-256 and ``source`` artifact of this run (an upload: its id too). A
        follow-up registers them again from this (:mod:`assay.plugins.files.thread`)."""
        sources = self._captured(sink)
        facts = {f.path: f for f in self.files}
        tables = []
        for spec in self.specs:
            files = []
            for path in spec.paths:
                fact = facts.get(str(path))
                if fact is None:
                    continue
                files.append(
                    {
                        "path": fact.path,
                        "name": Path(fact.path).name,
                        "size": fact.size,
                        "mtime_ns": fact.mtime_ns,
                        "sha256": fact.sha256,
                        "source_artifact_id": sources.get(fact.path),
                        **(
                            {"file_id": self.upload_ids[fact.path]}
                            if fact.path in self.upload_ids
                            else {}
                        ),
                    }
                )
            tables.append({"table": spec.name, "files": files})
        return {"datasource": self.name, "tables": tables}

    def sandbox_tables(self) -> list[dict[str, Any]]:
        """What the sandbox needs to read each table's file(s) the way the views do: name, format, the
        sniffed encoding, delimiter and columns, the sheet, and each file's real path, size and mtime
        (the code interpreter mounts them read-only and gives ``load_file`` this, docs/files.md)."""
        out = []
        for t in self.manifest.tables:
            out.append(
                {
                    "table": t.name,
                    "file": t.source_name or t.name,
                    "format": t.format,
                    "encoding": t.encoding,
                    "delimiter": t.delimiter,
                    "sheet": t.sheet,
                    "columns": [c["name"] for c in t.columns],
                    "datasource": self.name,
                    "files": [
                        {"path": f.path, "size": f.size, "mtime_ns": f.mtime_ns} for f in t.files
                    ],
                }
            )
        return out

    # --- statements ---------------------------------------------------------

    def query(self, sql: str, *, timeout_s: float | None = None, attempt: Any = None) -> Any:
        self.check_unchanged()
        try:
            return super().query(sql, timeout_s=timeout_s, attempt=attempt)
        except SqlError as exc:
            if isinstance(exc, FileError):
                raise
            for facts in self.files:  # a file deleted while the statement read it
                if not Path(facts.path).exists():
                    raise FileError(
                        FILE_MISSING,
                        f"{Path(facts.path).name} disappeared while it was read",
                        "Register the file again if it moved.",
                        details={"path": facts.path},
                    ) from None
            raise

    def tables(self, refresh: bool = False) -> list[TableInfo]:
        tables = super().tables(refresh)
        kinds = {t.name: t for t in self.manifest.tables}
        for info in tables:
            source = kinds.get(info.name)
            if (
                source is not None
                and source.format in ("parquet", "excel")
                and info.name not in self._counts
            ):
                self._counts[info.name] = self.row_count(info.name)
            if info.name in self._counts:
                info.row_estimate = self._counts[info.name]
        return tables

    def table(self, name: str) -> TableInfo:
        info = super().table(name)
        if (
            info.name not in self._counts
        ):  # a CSV or JSON file is counted when it is described, not before
            self._counts[info.name] = self.row_count(info.name)
        info.row_estimate = self._counts[info.name]
        return info

    def row_count(self, table: str) -> int:
        result = self.query(f'SELECT count(*) FROM "{table}"')
        return int(result.rows[0][0])

    def get_prompt(self, budget: Any = None) -> str:
        text = super().get_prompt(budget)
        return text.replace(
            f"duckdb database {self.name!r}",
            f"files datasource {self.name!r} (DuckDB SQL; each file is a table)",
            1,
        )

    def __repr__(self) -> str:
        return f"<FilesResource {self.name} {len(self.manifest.tables)} tables>"
