"""One datasource's DuckDB file under ``ASSAY_HOME/files/``: a read-only view per CSV/Parquet/JSON file
(read in place), a table per Excel sheet (loaded once), and ``manifest.json`` saying what each was built
from (path, size, mtime; the SHA-256 once computed).

The directory is built under a temporary name and renamed into place: a file that fails leaves nothing
behind (nothing half-registered). The same files, unchanged, find the directory already built.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import shutil
import threading
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import (
    FILE_CORRUPT,
    FILE_FORMAT_MISMATCH,
    FILE_LINE_TOO_LONG,
    FILE_MALFORMED,
    FILE_NO_ROWS,
    FILE_TOO_WIDE,
    FileError,
)
from .formats import (
    CSV,
    EXCEL,
    JSON,
    NDJSON,
    PARQUET,
    Sniffed,
    check_magic,
    format_of,
    read_head,
    sniff_text,
)
from .sources import FileSpec

BUILD_VERSION = 2  # bump when the views' SQL changes: old directories are then rebuilt, not reused


@dataclass(frozen=True)
class Limits:
    max_columns: int = 2048
    max_line_bytes: int = 2 * 1024 * 1024
    max_excel_expanded_bytes: int = 1 << 30


@dataclass
class FileFacts:
    path: str
    size: int
    mtime_ns: int
    sha256: str | None = None

    @classmethod
    def of(cls, path: Path) -> FileFacts:
        st = path.stat()
        return cls(str(path), st.st_size, st.st_mtime_ns)


@dataclass
class TableSource:
    """One table of the datasource and the file(s) it comes from."""

    name: str
    format: str
    kind: str  # "view" (read in place) or "table" (loaded: Excel)
    files: list[FileFacts]
    columns: list[dict[str, str]] = field(default_factory=list)
    sheet: str | None = None
    encoding: str | None = None
    delimiter: str | None = None
    renamed: dict[str, str] = field(default_factory=dict)  # header as written -> column name
    read_paths: list[str] = field(
        default_factory=list
    )  # what the view reads: the files, or their UTF-8 copies
    source_name: str = (
        ""  # the name the file(s) were registered under (a workbook's, for each sheet)
    )


@dataclass
class Manifest:
    key: str
    tables: list[TableSource]

    @property
    def allowed_paths(self) -> list[str]:
        return sorted(
            {
                p
                for t in self.tables
                if t.kind == "view"
                for p in (t.read_paths or [f.path for f in t.files])
            }
        )

    def to_json(self) -> str:
        return json.dumps(
            {"version": BUILD_VERSION, "key": self.key, "tables": [asdict(t) for t in self.tables]},
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        data = json.loads(text)
        tables = [
            TableSource(**{**t, "files": [FileFacts(**f) for f in t["files"]]})
            for t in data["tables"]
        ]
        return cls(data["key"], tables)


def key_for(specs: list[FileSpec], limits: Limits) -> str:
    facts = [
        (s.name, [asdict(FileFacts.of(p)) for p in s.paths])
        for s in sorted(specs, key=lambda s: s.name)
    ]
    text = json.dumps([BUILD_VERSION, asdict(limits), facts], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


_build_lock = threading.Lock()
_COPIES: contextvars.ContextVar[Path] = contextvars.ContextVar("assay_files_copies")


def build(specs: list[FileSpec], home: Path, limits: Limits) -> tuple[Path, Manifest]:
    """The datasource's directory (``data.duckdb`` + ``manifest.json``), built unless it already is."""
    root = home / "files"
    key = key_for(specs, limits)
    final = root / key
    with _build_lock:
        if (final / "manifest.json").exists():
            return final, Manifest.from_json((final / "manifest.json").read_text())
        root.mkdir(parents=True, exist_ok=True)
        staging = root / f".{key}.{os.getpid()}.{threading.get_ident()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        copies = root / f"{key}.copies"  # UTF-8 copies of Windows-1252 files: a path that stays put
        token = _COPIES.set(copies)
        try:
            manifest = _build_into(staging / "data.duckdb", key, specs, limits)
            (staging / "manifest.json").write_text(manifest.to_json())
            try:
                os.rename(staging, final)
            except OSError:  # another process built it first: theirs is the same
                shutil.rmtree(staging, ignore_errors=True)
            return final, Manifest.from_json((final / "manifest.json").read_text())
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(copies, ignore_errors=True)
            raise
        finally:
            _COPIES.reset(token)


def _build_into(db_path: Path, key: str, specs: list[FileSpec], limits: Limits) -> Manifest:
    import duckdb

    con = duckdb.connect(
        str(db_path),
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
    )
    try:
        tables: list[TableSource] = []
        for spec in specs:
            tables.extend(_register(con, spec, limits))
        con.execute("CHECKPOINT")
        return Manifest(key, tables)
    finally:
        con.close()


def _register(con: Any, spec: FileSpec, limits: Limits) -> list[TableSource]:
    sniffs: list[Sniffed] = []
    for path in spec.paths:
        fmt, ext, compression = format_of(path)
        check_magic(path, fmt, ext, compression, read_head(path, 8))
        if fmt == EXCEL:
            sniffs.append(Sniffed(format=fmt, extension=ext))
        elif fmt == PARQUET:
            sniffs.append(Sniffed(format=fmt, extension=ext))
        else:
            sniffs.append(
                sniff_text(
                    path,
                    fmt,
                    ext,
                    compression,
                    max_columns=limits.max_columns,
                    max_line_bytes=limits.max_line_bytes,
                )
            )
    formats = {s.format for s in sniffs}
    if len(formats) > 1:
        raise FileError(
            FILE_FORMAT_MISMATCH,
            f"table {spec.name!r}: its files mix formats ({', '.join(sorted(formats))})",
            "Give one format per name.",
        )
    first = sniffs[0]
    if first.format == EXCEL:
        if len(spec.paths) > 1:
            raise FileError(
                FILE_FORMAT_MISMATCH,
                f"table {spec.name!r}: several workbooks under one name",
                "Name each workbook on its own.",
            )
        return _load_excel(con, spec, first, limits)
    facts = [FileFacts.of(p) for p in spec.paths]
    read_paths = [str(p) for p in spec.paths]
    if (
        first.encoding == "cp1252"
    ):  # DuckDB decodes Latin-1, not Windows-1252: a UTF-8 copy, made once
        copies = Path(str(_COPIES.get())) / spec.name
        copies.mkdir(parents=True, exist_ok=True)
        read_paths = [str(_transcoded(p, copies, i)) for i, p in enumerate(spec.paths)]
    source = read_sql(
        replace(first, encoding="utf-8") if first.encoding == "cp1252" else first,
        read_paths,
        limits,
        sniff=True,
    )
    try:
        con.execute(f"CREATE VIEW {_ident(spec.name)} AS SELECT * FROM {source}")
        if (
            first.format != CSV or not first.delimiter
        ):  # a CSV's sample was checked row by row already
            con.execute(
                f"SELECT * FROM {_ident(spec.name)} LIMIT 2048"
            ).fetchall()  # the sample parses
        described = con.execute(f"DESCRIBE {_ident(spec.name)}").fetchall()
    except FileError:
        raise
    except Exception as exc:  # noqa: BLE001 - DuckDB's errors, mapped to the file's codes
        con.execute(f"DROP VIEW IF EXISTS {_ident(spec.name)}")
        raise duckdb_file_error(spec.paths[0], first.format, exc) from None
    columns = [{"name": row[0], "type": row[1]} for row in described]
    if first.format == CSV and first.delimiter:
        # The sniffed types frozen into the view: a statement binds it without sniffing the file again.
        frozen = (
            read_sql(first, read_paths, limits, columns=columns)
            if first.encoding != "cp1252"
            else read_sql(replace(first, encoding="utf-8"), read_paths, limits, columns=columns)
        )
        con.execute(f"CREATE OR REPLACE VIEW {_ident(spec.name)} AS SELECT * FROM {frozen}")
    if len(columns) > limits.max_columns:
        con.execute(f"DROP VIEW {_ident(spec.name)}")
        raise FileError(
            FILE_TOO_WIDE,
            f"{spec.paths[0].name}: {len(columns):,} columns (the limit is {limits.max_columns:,})",
            "Raise [files] max_columns.",
        )
    renamed = {}
    if first.columns and len(first.columns) == len(columns):
        renamed = {
            (h or f"(empty #{i + 1})"): c["name"]
            for i, (h, c) in enumerate(zip(first.columns, columns))
            if h != c["name"]
        }
    return [
        TableSource(
            spec.name,
            first.format,
            "view",
            facts,
            columns,
            encoding=first.encoding,
            delimiter=first.delimiter,
            renamed=renamed,
            read_paths=read_paths,
            source_name=spec.name,
        )
    ]


def _transcoded(path: Path, directory: Path, index: int) -> Path:
    out = directory / f"{path.stem}.{index}.utf8{path.suffix}"
    with (
        open(path, encoding="cp1252", errors="replace", newline="") as src,
        open(out, "w", encoding="utf-8", newline="") as dst,
    ):
        while block := src.read(1 << 20):
            dst.write(block)
    return out


def read_sql(
    sniffed: Sniffed,
    paths: list[str],
    limits: Limits,
    columns: list[dict[str, str]] | None = None,
    sniff: bool = False,
) -> str:
    """The DuckDB table function that reads these files in place (``columns``: with these names and types,
    not sniffed again; ``sniff``: DuckDB's type sniffer reads one small buffer, not its default 32 MiB)."""
    files = "[" + ", ".join(_literal(p) for p in paths) + "]"
    if sniffed.format == CSV:
        opts = ["header = true", "strict_mode = true", f"max_line_size = {limits.max_line_bytes}"]
        if sniff and not sniffed.compression:
            opts.append(f"buffer_size = {max(4 << 20, 2 * limits.max_line_bytes)}")
        if columns:
            spec = ", ".join(f"{_literal(c['name'])}: {_literal(c['type'])}" for c in columns)
            opts += ["auto_detect = false", f"columns = {{{spec}}}"]
        if sniffed.delimiter:
            opts += [f"delim = {_literal(sniffed.delimiter)}", "quote = '\"'", "escape = '\"'"]
        if sniffed.encoding and sniffed.encoding != "utf-8":
            opts.append(f"encoding = {_literal(sniffed.encoding)}")
        if sniffed.compression:
            opts.append(f"compression = {_literal(sniffed.compression)}")
        return f"read_csv({files}, {', '.join(opts)})"
    if sniffed.format == PARQUET:
        return f"read_parquet({files})"
    if sniffed.format == NDJSON:
        return f"read_json({files}, format = 'newline_delimited')"
    if sniffed.format == JSON:
        return f"read_json({files}, format = 'auto')"
    raise AssertionError(sniffed.format)


def duckdb_file_error(path: Path, fmt: str, exc: BaseException) -> FileError:
    text = str(exc).split("\n\n")[0][:400]
    low = text.lower()
    if "maximum line size" in low:
        return FileError(
            FILE_LINE_TOO_LONG,
            f"{path.name}: a line is longer than the limit: {text}",
            "Raise [files] max_line_bytes, or fix the file.",
        )
    if fmt == PARQUET:
        return FileError(
            FILE_CORRUPT,
            f"{path.name}: not a readable Parquet file: {text}",
            "Check that the file was written completely.",
        )
    if "no rows" in low or "empty" in low:
        return FileError(
            FILE_NO_ROWS, f"{path.name}: no rows: {text}", "Register a file with data rows."
        )
    return FileError(
        FILE_MALFORMED,
        f"{path.name}: cannot be read as {fmt}: {text}",
        "Fix the file (its quotes, its rows' fields, its JSON) and register it again.",
    )


def _load_excel(con: Any, spec: FileSpec, sniffed: Sniffed, limits: Limits) -> list[TableSource]:
    from .excel import check_container, read_sheets, table_name

    path = spec.paths[0]
    check_container(path, sniffed.extension, limits.max_excel_expanded_bytes)
    facts = FileFacts.of(path)
    sheets = list(read_sheets(path))
    out = []
    for sheet, arrow in sheets:
        name = table_name(spec.name, sheet, len(sheets))
        if arrow.num_columns > limits.max_columns:
            raise FileError(
                FILE_TOO_WIDE,
                f"{path.name} [{sheet}]: {arrow.num_columns:,} columns",
                "Raise [files] max_columns.",
            )
        con.register("assay_sheet", arrow)
        try:
            con.execute(f"CREATE TABLE {_ident(name)} AS SELECT * FROM assay_sheet")
        finally:
            con.unregister("assay_sheet")
        described = con.execute(f"DESCRIBE {_ident(name)}").fetchall()
        out.append(
            TableSource(
                name,
                EXCEL,
                "table",
                [facts],
                [{"name": r[0], "type": r[1]} for r in described],
                sheet=sheet,
                source_name=spec.name,
            )
        )
    return out


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
