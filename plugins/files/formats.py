"""What a file is: its format (from the extension, checked against the first bytes), its text encoding,
and for CSV/TSV the dialect read from a bounded sample. Nothing here reads more than the sample.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import (
    FILE_EMPTY,
    FILE_FORMAT_MISMATCH,
    FILE_FORMAT_UNKNOWN,
    FILE_LINE_TOO_LONG,
    FILE_MALFORMED,
    FILE_NO_ROWS,
    FILE_NOT_TEXT,
    FILE_READER_MISSING,
    FILE_TOO_WIDE,
    FileError,
)

SAMPLE_BYTES = (
    1 << 20
)  # what the sniffer reads of a text file (DuckDB's own sniffer reads a sample too)
CSV, PARQUET, JSON, NDJSON, EXCEL = "csv", "parquet", "json", "ndjson", "excel"
_EXTENSIONS = {
    ".csv": CSV,
    ".tsv": CSV,
    ".tab": CSV,
    ".txt": CSV,
    ".parquet": PARQUET,
    ".pq": PARQUET,
    ".json": JSON,
    ".ndjson": NDJSON,
    ".jsonl": NDJSON,
    ".xlsx": EXCEL,
    ".xlsm": EXCEL,
    ".xls": EXCEL,
    ".ods": EXCEL,
}
_COMPRESSION = {".gz": "gzip", ".zst": "zstd"}
_MAGIC = {
    b"PAR1": PARQUET,
    b"PK\x03\x04": "zip",
    b"\xd0\xcf\x11\xe0": "ole",
    b"\x1f\x8b": "gzip",
    b"\x28\xb5\x2f\xfd": "zstd",
}
_DELIMITERS = (",", "\t", ";", "|")


@dataclass
class Sniffed:
    """A file's format and how to read it."""

    format: str
    extension: str
    compression: str | None = None
    encoding: str | None = None  # utf-8, utf-16, latin-1 (DuckDB reads them in place) or cp1252
    delimiter: str | None = None
    columns: list[str] = field(default_factory=list)
    whole_file_sampled: bool = False


def format_of(path: Path) -> tuple[str, str, str | None]:
    """(format, extension, compression) from the name: ``events.csv.gz`` is CSV, gzip."""
    suffixes = [s.lower() for s in path.suffixes]
    compression = None
    if suffixes and suffixes[-1] in _COMPRESSION:
        compression = _COMPRESSION[suffixes.pop()]
    ext = suffixes[-1] if suffixes else ""
    fmt = _EXTENSIONS.get(ext)
    if fmt is None or (compression and fmt in (PARQUET, EXCEL)):
        raise FileError(
            FILE_FORMAT_UNKNOWN,
            f"{path.name}: assay does not read {''.join(path.suffixes) or 'files without an extension'}",
            "Give a .csv/.tsv (optionally .gz or .zst), .parquet, .json, .ndjson/.jsonl, .xlsx, .xls "
            "or .ods file.",
        )
    return fmt, ext, compression


def check_magic(path: Path, fmt: str, ext: str, compression: str | None, head: bytes) -> None:
    """Refuse a file whose first bytes are another format than its name says (Parquet named ``.csv``)."""
    found = next((kind for magic, kind in _MAGIC.items() if head.startswith(magic)), None)
    if compression:
        if found != compression:
            raise _mismatch(path, compression, found)
        return
    expected = {PARQUET: PARQUET, EXCEL: "ole" if ext == ".xls" else "zip"}.get(fmt)
    if expected is not None:
        if fmt == EXCEL and ext != ".xls" and found == "ole":
            return  # an encrypted .xlsx is an OLE container: the Excel reader says FILE_ENCRYPTED
        if found != expected:
            raise _mismatch(path, fmt, found)
    elif found is not None:
        raise _mismatch(path, fmt, found)


def _mismatch(path: Path, expected: str, found: str | None) -> FileError:
    what = {
        "zip": "a zip archive (xlsx/ods?)",
        "ole": "an OLE document (xls?)",
        None: "something else",
    }.get(found, found)
    return FileError(
        FILE_FORMAT_MISMATCH,
        f"{path.name}: named as {expected} but its bytes are {what}",
        "Rename the file with the extension of its real format.",
    )


def read_head(path: Path, n: int = SAMPLE_BYTES) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def detect_encoding(path: Path, sample: bytes) -> str:
    """The encoding of a text sample: a BOM first, UTF-8 if it decodes, else charset-normalizer's guess,
    refused unless it is a Western single-byte encoding (read as Latin-1 or Windows-1252)."""
    if sample.startswith(codecs.BOM_UTF8):
        return "utf-8"
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    try:
        sample.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 3:  # a character cut at the sample's end
            return "utf-8"
    if b"\x00" in sample:
        raise _not_text(path)
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - the files extra installs it
        raise FileError(
            FILE_READER_MISSING, "charset-normalizer is not installed", "pip install 'assay[files]'"
        ) from None
    best = from_bytes(sample[:65536]).best()
    name = best.encoding if best is not None else None
    if name is None or any(name.startswith(p) for p in _NOT_WESTERN):
        raise FileError(
            FILE_NOT_TEXT,
            f"{path.name}: not text in UTF-8, UTF-16 or Latin-1/Windows-1252"
            + (f" (it looks like {name})" if name else ""),
            "Save the file as UTF-8 and register it again.",
        )
    # A Western single-byte file: Latin-1 unless it uses Windows-1252's own characters (0x80-0x9F: the euro
    # sign, curly quotes), which DuckDB cannot decode in place (the file is then transcoded once).
    return "cp1252" if any(0x80 <= b <= 0x9F for b in sample) else "latin-1"


_NOT_WESTERN = (
    "cp1251",
    "cp1253",
    "cp1255",
    "cp1256",
    "koi8",
    "shift_jis",
    "cp932",
    "euc",
    "gb",
    "big5",
    "iso8859_5",
    "iso8859_6",
    "iso8859_7",
    "iso8859_8",
    "cp866",
    "mac_cyrillic",
    "tis",
    "cp874",
    "hz",
    "iso2022",
    "johab",
    "cp949",
    "cp950",
    "utf_32",
)


def _not_text(path: Path) -> FileError:
    return FileError(
        FILE_NOT_TEXT,
        f"{path.name}: binary content, not text",
        "Check that this is the file you meant; a spreadsheet needs its own extension (.xlsx).",
    )


def decode_sample(path: Path, sample: bytes, encoding: str) -> str:
    codec = {"utf-8": "utf-8-sig", "utf-16": "utf-16", "latin-1": "latin-1", "cp1252": "cp1252"}[
        encoding
    ]
    text = sample.decode(
        codec, errors="replace"
    )  # only a character cut at the sample's end is replaced
    control = sum(1 for ch in text[:65536] if ch < " " and ch not in "\t\r\n")
    if "\x00" in text or control > max(8, len(text[:65536]) // 100):
        raise _not_text(path)
    return text


def sniff_text(
    path: Path,
    fmt: str,
    ext: str,
    compression: str | None,
    *,
    max_columns: int,
    max_line_bytes: int,
) -> Sniffed:
    """Encoding and, for CSV, delimiter and header, from the first :data:`SAMPLE_BYTES`; refuses bad input."""
    sniffed = Sniffed(format=fmt, extension=ext, compression=compression)
    if compression:
        return sniffed  # DuckDB decompresses and sniffs it; its errors are mapped when the view is checked
    size = path.stat().st_size
    sample = read_head(path)
    sniffed.whole_file_sampled = size <= len(sample)
    if not sample.strip():
        raise FileError(
            FILE_EMPTY, f"{path.name}: the file is empty", "Register a file with data in it."
        )
    sniffed.encoding = detect_encoding(path, sample)
    text = decode_sample(path, sample, sniffed.encoding)
    if fmt != CSV:
        return sniffed
    first_end = text.find("\n")
    if first_end < 0 and not sniffed.whole_file_sampled:
        raise FileError(
            FILE_LINE_TOO_LONG,
            f"{path.name}: the first line is longer than {len(sample):,} bytes",
            "A CSV header that long is not a table; check the file.",
        )
    if not sniffed.whole_file_sampled:
        cut = text.rfind("\n") + 1
        if text.count("\n") < 2:  # the sample holds no whole data row: how long is the line it cut?
            start = len(sample[: sample.rfind(b"\n") + 1])
            length = _line_length(path, start, max_line_bytes)
            if length > max_line_bytes:
                raise FileError(
                    FILE_LINE_TOO_LONG,
                    f"{path.name}: a line of more than {max_line_bytes:,} bytes",
                    "Raise [files] max_line_bytes, or fix the file.",
                )
        text = text[:cut]  # drop the line the sample cut
    longest = max((len(line) for line in text.splitlines()), default=0)
    if longest * (2 if sniffed.encoding == "utf-16" else 1) > max_line_bytes:
        raise FileError(
            FILE_LINE_TOO_LONG,
            f"{path.name}: a line of {longest:,} characters (the limit is "
            f"{max_line_bytes:,} bytes)",
            "Raise [files] max_line_bytes, or fix the file.",
        )
    header = text.splitlines()[0] if text.strip() else ""
    sniffed.delimiter = "\t" if ext in (".tsv", ".tab") else max(_DELIMITERS, key=header.count)
    rows = _rows(path, text, sniffed.delimiter, complete=sniffed.whole_file_sampled)
    width = len(rows[0])
    if width > max_columns:
        raise FileError(
            FILE_TOO_WIDE,
            f"{path.name}: {width:,} columns (the limit is {max_columns:,})",
            "Raise [files] max_columns, or select the columns you need into a narrower file.",
        )
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != width and row:
            raise FileError(
                FILE_MALFORMED,
                f"{path.name}: ragged rows: record {number} has {len(row)} fields, "
                f"the header has {width}",
                "Fix the file so that every row has the header's fields.",
                details={"record": number},
            )
    if len([r for r in rows[1:] if r]) == 0:
        raise FileError(
            FILE_NO_ROWS, f"{path.name}: a header and no rows", "Register a file with data rows."
        )
    sniffed.columns = rows[0]
    return sniffed


def _line_length(path: Path, start: int, limit: int) -> int:
    """The length of the line starting at ``start``, reading at most ``limit + 1`` bytes of it."""
    read = 0
    with open(path, "rb") as fh:
        fh.seek(start)
        while read <= limit:
            block = fh.read(min(1 << 20, limit + 1 - read))
            if not block:
                return read
            newline = block.find(b"\n")
            if newline >= 0:
                return read + newline
            read += len(block)
    return read


def _rows(path: Path, text: str, delimiter: str, *, complete: bool) -> list[list[str]]:
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, quotechar='"', strict=True)
    rows: list[list[str]] = []
    try:
        for row in reader:
            rows.append(row)
    except csv.Error as exc:
        if complete or "unexpected end of data" not in str(exc):
            raise FileError(
                FILE_MALFORMED,
                f"{path.name}: {exc} (near record {len(rows) + 1})",
                "Check the quotes: a quoted field must end with a closing quote.",
            ) from None
    if complete and text.count('"') % 2:
        raise FileError(
            FILE_MALFORMED,
            f"{path.name}: unbalanced quotes (an odd number of '\"')",
            "Check the quotes: a quoted field must end with a closing quote.",
        )
    if not rows:
        raise FileError(
            FILE_EMPTY, f"{path.name}: the file is empty", "Register a file with data in it."
        )
    return rows


def file_size(path: Path) -> int:
    return os.stat(path).st_size
