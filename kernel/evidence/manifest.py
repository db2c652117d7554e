"""What the report writer sees: a run's manifest, and details of a few artifacts.

Both are bounded: the manifest lists one short entry per artifact until its
character budget is spent (and says how many it left out); details accept
at most 12 ids per call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .canonical import dumps
from .catalog import ArtifactCatalog
from .errors import ArtifactDetailsLimit
from .records import ArtifactRecord
from .settings import DETAILS_MAX_IDS


def manifest_entry(record: ArtifactRecord, max_columns: int = 20) -> dict[str, Any]:
    cols = record.columns[:max_columns]
    entry: dict[str, Any] = {
        "artifact_id": record.artifact_id,
        "kind": record.kind,
        "status": record.status,
        "row_count": record.row_count,
        "columns": cols,
        "summary": record.summary(),
    }
    if len(record.columns) > max_columns:
        entry["more_columns"] = len(record.columns) - max_columns
    if not record.complete:
        entry["complete"] = False
        entry["incomplete"] = record.incomplete_note()
        if "rows_returned" in record.provenance:
            entry["rows_returned"] = record.provenance["rows_returned"]
    if record.name:
        entry["name"] = record.name
    if record.provenance.get("error"):
        entry["error"] = str(record.provenance["error"])[:200]
    return entry


def evidence_manifest(
    catalog: ArtifactCatalog, run_id: str | None, max_chars: int = 12_000
) -> dict[str, Any]:
    """One entry per artifact of ``run_id`` (all runs when ``None``) within ``max_chars``."""
    catalog.import_shared(run_id)  # records other workers kept in a shared store
    entries: list[dict[str, Any]] = []
    used, total = 0, 0
    for record in catalog.iter(run_id):
        total += 1
        entry = manifest_entry(record)
        size = len(dumps(entry)) + 1
        if used + size > max_chars:
            continue
        entries.append(entry)
        used += size
    return {
        "run_id": run_id,
        "count": total,
        "artifacts": entries,
        "omitted": total - len(entries),
        "truncated": total > len(entries),
    }


def artifact_details(
    catalog: ArtifactCatalog,
    artifact_ids: Iterable[str],
    *,
    preview_rows: int = 20,
    max_text: int = 4_000,
) -> list[dict[str, Any]]:
    """Full records (preview and SQL/code clipped) of at most 12 artifacts.

    An unknown id yields an entry with ``error: ARTIFACT_NOT_FOUND`` so the
    others still come back.
    """
    ids = list(dict.fromkeys(artifact_ids))
    if len(ids) > DETAILS_MAX_IDS:
        raise ArtifactDetailsLimit(len(ids), DETAILS_MAX_IDS)
    out: list[dict[str, Any]] = []
    for artifact_id in ids:
        record = catalog.get(artifact_id)
        if record is None:
            out.append({"artifact_id": artifact_id, "error": "ARTIFACT_NOT_FOUND"})
            continue
        data = record.model_dump(mode="json")
        data["preview"] = data["preview"][:preview_rows]
        data["preview_truncated"] = record.preview_truncated or len(record.preview) > preview_rows
        prov = dict(data["provenance"])
        for key in ("sql", "code", "error"):
            if isinstance(prov.get(key), str) and len(prov[key]) > max_text:
                prov[key] = prov[key][:max_text] + "..."
                prov[f"{key}_truncated"] = True
        data["provenance"] = prov
        if data.get("result") is not None and len(dumps(data["result"])) > max_text:
            data["result"] = None
            data["result_truncated"] = True
        out.append(data)
    return out
