"""The evidence store: content-addressed artifacts, bounded previews, verified read-back.

Tools capture what an execution returned with :func:`capture_sql_execution`,
:func:`capture_python_execution` and :func:`capture_file`; the bytes go to a
content store (a plugin) under their SHA-256 and a record goes to the
catalog. :func:`read_artifact_result` reads a selected part back after
checking the hash. See docs/evidence.md.
"""

# Every submodule is imported here, eagerly. Measured (bench machine, after
# ``import assay``): the whole package ~31 ms, against ~27 ms for capture and
# readback alone, which any use of evidence loads anyway. Kernel start-up
# imports none of it: plugins name their evidence code by path, and the
# kernel imports this package only when a run first captures.
from .canonical import canonical_value, decode, dumps
from .capture import (
    RowBatches,
    capture_file,
    capture_python_execution,
    capture_rows,
    capture_sql_execution,
)
from .catalog import ArtifactCatalog
from .content_store import ContentStore, ContentStream
from .errors import (
    ARTIFACT_CAPTURE_FAILED,
    ARTIFACT_DETAILS_LIMIT,
    ARTIFACT_FILE_MISSING,
    ARTIFACT_INCOMPLETE,
    ARTIFACT_INTEGRITY_FAILED,
    ARTIFACT_NOT_FOUND,
    ARTIFACT_QUOTA_EXCEEDED,
    ARTIFACT_SELECTOR_INVALID,
    ArtifactCaptureFailed,
    ArtifactDetailsLimit,
    ArtifactError,
    ArtifactFileMissing,
    ArtifactIncomplete,
    ArtifactIntegrityFailed,
    ArtifactNotFound,
    ArtifactQuotaExceeded,
    ArtifactSelectorInvalid,
)
from .kernel_evidence import KernelEvidence
from .local_store import LocalContentStore
from .manifest import artifact_details, evidence_manifest, manifest_entry
from .preview import render_preview
from .readback import (
    get_record,
    open_verified_content,
    read_artifact_result,
    resolve_catalog,
    verify,
)
from .records import ArtifactRecord, ProducedFile, SelectedResult, Selectors
from .settings import EvidenceSettings
from .sink import ArtifactSink, Quota

__all__ = [
    "ARTIFACT_CAPTURE_FAILED",
    "ARTIFACT_DETAILS_LIMIT",
    "ARTIFACT_FILE_MISSING",
    "ARTIFACT_INCOMPLETE",
    "ARTIFACT_INTEGRITY_FAILED",
    "ARTIFACT_NOT_FOUND",
    "ARTIFACT_QUOTA_EXCEEDED",
    "ARTIFACT_SELECTOR_INVALID",
    "ArtifactCaptureFailed",
    "ArtifactCatalog",
    "ArtifactDetailsLimit",
    "ArtifactError",
    "ArtifactFileMissing",
    "ArtifactIncomplete",
    "ArtifactIntegrityFailed",
    "ArtifactNotFound",
    "ArtifactQuotaExceeded",
    "ArtifactRecord",
    "ArtifactSelectorInvalid",
    "ArtifactSink",
    "ContentStore",
    "ContentStream",
    "EvidenceSettings",
    "KernelEvidence",
    "LocalContentStore",
    "ProducedFile",
    "Quota",
    "RowBatches",
    "SelectedResult",
    "Selectors",
    "artifact_details",
    "canonical_value",
    "capture_file",
    "capture_python_execution",
    "capture_rows",
    "capture_sql_execution",
    "decode",
    "dumps",
    "evidence_manifest",
    "get_record",
    "manifest_entry",
    "open_verified_content",
    "read_artifact_result",
    "render_preview",
    "resolve_catalog",
    "verify",
]
