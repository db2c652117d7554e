"""Input artifacts: read from the evidence store, hash-checked, described for the sandbox.

Every listed id must name an artifact of the caller's run, or of a run in its
scope (in the service: a run of the caller's owner); anything else answers
``ARTIFACT_NOT_FOUND``, like an id that does not exist. Every listed id is
resolved and its bytes verified on the host BEFORE the sandbox is touched, so an unknown, missing or altered artifact fails the call
before any code runs. The bytes are hashed again here (the store's check and
this read are separate opens of the file), and the runner hashes the copy
inside the sandbox once more before the cell starts.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.kernel.evidence import ArtifactIntegrityFailed, ArtifactNotFound, open_verified_content
from assay.kernel.evidence.readback import resolve_catalog

TABULAR = "application/x-ndjson"
PYTHON_DOC = "application/vnd.assay.python+json"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class InputArtifact:
    """One verified input, ready to upload."""

    artifact_id: str
    sha256: str
    data: bytes
    meta: dict[str, Any]
    path: str  # inside the sandbox, relative to its working directory
    meta_path: str

    def manifest(self) -> dict[str, str]:
        return {"id": self.artifact_id, "path": self.path, "sha256": self.sha256}


def _extension(record: Any) -> str:
    if record.media_type == TABULAR:
        return ".jsonl"
    if record.media_type == PYTHON_DOC or record.media_type.endswith("json"):
        return ".json"
    suffix = posixpath.splitext(record.name or "")[1]
    return _SAFE.sub("", suffix)[:12] or ".bin"


def resolve_inputs(
    source: Any, ids: list[str], workdir: str, may_read: Callable[[str], bool] | None = None
) -> list[InputArtifact]:
    """Read and verify each artifact; raises the evidence store's ARTIFACT_* errors.

    ``may_read(run_id)``: whether the caller may read an artifact that run captured
    (:meth:`RunContext.may_read`). An artifact outside it is answered exactly like an id that
    does not exist (``ARTIFACT_NOT_FOUND``), so nothing tells whether another run's id is real.
    """

    out: list[InputArtifact] = []
    seen: set[str] = set()
    for artifact_id in ids:
        if artifact_id in seen:
            continue
        seen.add(artifact_id)
        if may_read is not None:
            found = resolve_catalog(source).get(artifact_id)
            if found is None or not may_read(found.run_id):
                raise ArtifactNotFound(artifact_id, "among the artifacts this run may read")
        record, content = open_verified_content(source, artifact_id)
        data = Path(content).read_bytes() if isinstance(content, (str, Path)) else bytes(content)
        actual = hashlib.sha256(data).hexdigest()
        if actual != record.sha256:  # changed between the store's check and this read
            raise ArtifactIntegrityFailed(artifact_id, record.sha256, actual)
        safe_id = _SAFE.sub("_", artifact_id)
        path = (
            f"inputs/{safe_id}{_extension(record)}"  # relative to the sandbox's working directory
        )
        meta = {
            "id": artifact_id,
            "kind": record.kind,
            "status": record.status,
            "media_type": record.media_type,
            "name": record.name,
            "tabular": record.media_type == TABULAR,
            "columns": list(record.columns),
            "row_count": record.row_count,
            "sha256": record.sha256,
            "path": path,
        }
        out.append(
            InputArtifact(
                artifact_id, record.sha256, data, meta, path, f"inputs/{safe_id}.meta.json"
            )
        )
    return out


def meta_bytes(item: InputArtifact) -> bytes:
    return json.dumps(item.meta, ensure_ascii=False, sort_keys=True).encode("utf-8")
