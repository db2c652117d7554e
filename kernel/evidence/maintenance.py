"""Store upkeep: verify every artifact, export one, collect unreferenced content."""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass, field
from typing import IO, Any

from .canonical import decode, dumps
from .capture import PYTHON_DOC, TABULAR
from .catalog import ArtifactCatalog
from .errors import ArtifactError, ArtifactSelectorInvalid
from .readback import open_verified_content, verify


@dataclass
class VerifyReport:
    checked: int = 0
    ok: int = 0
    missing: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.missing and not self.corrupt


def verify_all(catalog: ArtifactCatalog) -> VerifyReport:
    """Re-hash the content of every record; list artifacts whose content is missing or altered."""
    report = VerifyReport()
    seen: dict[
        str, str | None
    ] = {}  # sha256 -> error code (content shared by records is hashed once)
    for record in catalog.iter():
        report.checked += 1
        if record.sha256 not in seen:
            try:
                verify(catalog, record)
                seen[record.sha256] = None
            except ArtifactError as exc:
                seen[record.sha256] = exc.code
        code = seen[record.sha256]
        if code is None:
            report.ok += 1
        elif code == "ARTIFACT_FILE_MISSING":
            report.missing.append(record.artifact_id)
        else:
            report.corrupt.append(record.artifact_id)
    return report


@dataclass
class GcReport:
    removed: list[str] = field(default_factory=list)
    kept_recent: int = 0
    staging_removed: int = 0


def collect_garbage(
    catalog: ArtifactCatalog, *, grace_s: float = 3600.0, dry_run: bool = False
) -> GcReport:
    """Delete content no record references (older than ``grace_s``, so a capture
    that has published its bytes but not yet its record is never robbed)."""
    report = GcReport()
    catalog.import_shared(None)  # a shared store's records from other workers count as references
    referenced = catalog.referenced_hashes()
    now = time.time()
    for sha in list(catalog.store.iter_content()):
        if sha in referenced:
            continue
        modified = catalog.store.modified_at(sha)
        if modified is not None and now - modified < grace_s:
            report.kept_recent += 1
            continue
        # re-check: a record may have arrived since the first query
        if catalog.has_hash(sha):
            continue
        if not dry_run:
            catalog.store.delete(sha)
        report.removed.append(sha)
    if not dry_run:
        report.staging_removed = len(catalog.store.clean_staging(grace_s))
        cache = catalog.store.root / "cache"  # local copies of a remote store's content
        if cache.is_dir():
            for copy in cache.iterdir():
                if copy.name not in referenced:
                    copy.unlink(missing_ok=True)
    return report


def export(catalog: ArtifactCatalog, artifact_id: str, fmt: str, out: IO[bytes]) -> int:
    """Write an artifact as ``jsonl`` (the stored bytes) or ``csv``; returns rows written."""
    record, content = open_verified_content(catalog, artifact_id)
    data = content if isinstance(content, bytes) else None
    stream: IO[bytes] = io.BytesIO(data) if data is not None else open(content, "rb")
    with stream:
        if fmt == "jsonl":
            n = 0
            while chunk := stream.read(1 << 20):
                out.write(chunk)
                n += chunk.count(b"\n")
            return max(0, n - 1) if record.media_type == TABULAR else n
        if fmt != "csv":
            raise ArtifactSelectorInvalid(f"unknown export format {fmt!r}; use csv or jsonl")
        text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
        writer = csv.writer(text)
        n = 0
        if record.media_type == TABULAR:
            header = json.loads(stream.readline())
            writer.writerow(header["columns"])
            for line in stream:
                writer.writerow([_csv_cell(v) for v in decode(json.loads(line))])
                n += 1
        elif record.media_type == PYTHON_DOC:
            result = json.loads(stream.read()).get("result")
            if not isinstance(result, list):
                raise ArtifactSelectorInvalid("this Python artifact's result is not a list of rows")
            cols = record.columns
            if cols:
                writer.writerow(cols)
            for item in result:
                row = (
                    [item.get(c) for c in cols]
                    if isinstance(item, dict)
                    else (item if isinstance(item, list) else [item])
                )
                writer.writerow([_csv_cell(v) for v in decode(row)])
                n += 1
        else:
            raise ArtifactSelectorInvalid("only tabular and Python artifacts export to CSV")
        text.detach()
        return n


# A spreadsheet opening the export must run no formula: text cells starting like one get a leading quote.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    if isinstance(value, (dict, list)):
        return dumps(value)
    if isinstance(value, bytes):
        return value.hex()
    return value
