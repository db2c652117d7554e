"""The evidence store: content-addressed artifacts, bounded previews, verified read-back.

Tools capture what an execution returned with :func:`capture_sql_execution`,
:func:`capture_python_execution` and :func:`capture_file`; the bytes go to a
content store (a plugin) under their SHA-256 and a record goes to the
catalog. :func:`read_artifact_result` reads a selected part back after
checking the hash. See docs/evidence.md.
"""

from typing import TYPE_CHECKING

from assay.kernel.lazy_exports import lazy_exports

# Public names -> the submodule defining them. Importing this package (or one
# of its submodules, as store plugins do) loads nothing else: each name
# imports its submodule on first access, keeping kernel start-up light.
_WHERE = {
    "canonical_value": "canonical", "decode": "canonical", "dumps": "canonical",
    "ArtifactSink": "capture", "capture_file": "capture", "capture_python_execution": "capture",
    "capture_rows": "capture", "capture_sql_execution": "capture", "RowBatches": "capture",
    "ArtifactCatalog": "catalog",
    "ARTIFACT_CAPTURE_FAILED": "errors", "ARTIFACT_DETAILS_LIMIT": "errors", "ARTIFACT_FILE_MISSING": "errors",
    "ARTIFACT_INTEGRITY_FAILED": "errors", "ARTIFACT_NOT_FOUND": "errors", "ARTIFACT_SELECTOR_INVALID": "errors",
    "ArtifactCaptureFailed": "errors", "ArtifactDetailsLimit": "errors", "ArtifactError": "errors",
    "ArtifactFileMissing": "errors", "ArtifactIntegrityFailed": "errors", "ArtifactNotFound": "errors",
    "ArtifactSelectorInvalid": "errors",
    "artifact_details": "manifest", "evidence_manifest": "manifest", "manifest_entry": "manifest",
    "render_preview": "preview",
    "get_record": "readback", "open_verified_content": "readback", "read_artifact_result": "readback",
    "resolve_catalog": "readback", "verify": "readback",
    "ArtifactRecord": "records", "ProducedFile": "records", "SelectedResult": "records", "Selectors": "records",
    "EvidenceSettings": "settings",
    "ContentStore": "content_store",
    "KernelEvidence": "kernel_evidence", "LocalContentStore": "local_store",
}


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())


if TYPE_CHECKING:
    from .canonical import canonical_value, decode, dumps
    from .capture import (
        ArtifactSink,
        RowBatches,
        capture_file,
        capture_python_execution,
        capture_rows,
        capture_sql_execution,
    )
    from .catalog import ArtifactCatalog
    from .errors import (
        ARTIFACT_CAPTURE_FAILED,
        ARTIFACT_DETAILS_LIMIT,
        ARTIFACT_FILE_MISSING,
        ARTIFACT_INTEGRITY_FAILED,
        ARTIFACT_NOT_FOUND,
        ARTIFACT_SELECTOR_INVALID,
        ArtifactCaptureFailed,
        ArtifactDetailsLimit,
        ArtifactError,
        ArtifactFileMissing,
        ArtifactIntegrityFailed,
        ArtifactNotFound,
        ArtifactSelectorInvalid,
    )
    from .manifest import artifact_details, evidence_manifest, manifest_entry
    from .preview import render_preview
    from .readback import get_record, open_verified_content, read_artifact_result, resolve_catalog, verify
    from .records import ArtifactRecord, ProducedFile, SelectedResult, Selectors
    from .settings import EvidenceSettings
    from .content_store import ContentStore
    from .kernel_evidence import KernelEvidence
    from .local_store import LocalContentStore

__all__ = [
                      "ARTIFACT_CAPTURE_FAILED",
                      "ARTIFACT_DETAILS_LIMIT",
                      "ARTIFACT_FILE_MISSING",
                      "ARTIFACT_INTEGRITY_FAILED",
                      "ARTIFACT_NOT_FOUND",
                      "ARTIFACT_SELECTOR_INVALID",
                      "ArtifactCaptureFailed",
                      "ArtifactCatalog",
                      "ArtifactDetailsLimit",
                      "ArtifactError",
                      "ArtifactFileMissing",
                      "ArtifactIntegrityFailed",
                      "ArtifactNotFound",
                      "ArtifactRecord",
                      "ArtifactSelectorInvalid",
                      "ArtifactSink",
                      "ContentStore",
                      "EvidenceSettings",
                      "KernelEvidence",
                      "LocalContentStore",
                      "ProducedFile",
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
