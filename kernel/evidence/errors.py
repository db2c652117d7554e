"""Error codes of the evidence store, each an :class:`assay.AssayError` subclass."""

from __future__ import annotations

from ..errors import AssayError

ARTIFACT_NOT_FOUND = "ARTIFACT_NOT_FOUND"
ARTIFACT_FILE_MISSING = "ARTIFACT_FILE_MISSING"
ARTIFACT_INTEGRITY_FAILED = "ARTIFACT_INTEGRITY_FAILED"
ARTIFACT_SELECTOR_INVALID = "ARTIFACT_SELECTOR_INVALID"
ARTIFACT_CAPTURE_FAILED = "ARTIFACT_CAPTURE_FAILED"
ARTIFACT_DETAILS_LIMIT = "ARTIFACT_DETAILS_LIMIT"
ARTIFACT_INCOMPLETE = "ARTIFACT_INCOMPLETE"
ARTIFACT_STORE_UNKNOWN = "ARTIFACT_STORE_UNKNOWN"
ARTIFACT_STORE_UNAVAILABLE = "ARTIFACT_STORE_UNAVAILABLE"
ARTIFACT_QUOTA_EXCEEDED = "ARTIFACT_QUOTA_EXCEEDED"


class ArtifactError(AssayError):
    """Base class of every evidence-store error."""

    code = "ARTIFACT_ERROR"


class ArtifactNotFound(ArtifactError):
    code = ARTIFACT_NOT_FOUND

    def __init__(self, artifact_id: str, where: str = "in the catalog") -> None:
        super().__init__(
            message=f"no artifact {artifact_id!r} {where}",
            hint="Use an artifact id returned by a tool call or listed by report_evidence_manifest.",
            details={"artifact_id": artifact_id},
        )


class ArtifactFileMissing(ArtifactError):
    code = ARTIFACT_FILE_MISSING

    def __init__(self, artifact_id: str, sha256: str) -> None:
        super().__init__(
            message=f"artifact {artifact_id!r} is recorded but its content ({sha256[:12]}...) is gone",
            hint="The evidence was deleted from the store; it cannot be read. Do not cite it.",
            details={"artifact_id": artifact_id, "sha256": sha256},
        )


class ArtifactIntegrityFailed(ArtifactError):
    code = ARTIFACT_INTEGRITY_FAILED

    def __init__(self, artifact_id: str, expected: str, actual: str) -> None:
        super().__init__(
            message=f"artifact {artifact_id!r} content does not match its SHA-256 (expected "
            f"{expected[:12]}..., found {actual[:12]}...)",
            hint="The stored evidence was altered; it cannot be trusted. Do not cite it.",
            details={
                "artifact_id": artifact_id,
                "expected_sha256": expected,
                "actual_sha256": actual,
            },
        )


class ArtifactSelectorInvalid(ArtifactError):
    code = ARTIFACT_SELECTOR_INVALID

    def __init__(self, message: str) -> None:
        super().__init__(
            message=message,
            hint="Selectors: field=<column>, rows=[start, stop], path=[row, column-or-key, ...]; "
            "row indexes start at 0 and may be negative.",
        )


class ArtifactIncomplete(ArtifactError):
    """A selector needs data an incomplete artifact did not keep (its end, or rows past the kept ones)."""

    code = ARTIFACT_INCOMPLETE

    def __init__(self, artifact_id: str, what: str, note: str, kept: int | None = None) -> None:
        rows = (
            f"Only rows 0..{kept - 1} were kept and nothing is known of the rows after them: cite one "
            "of those by a non-negative index, "
            if kept
            else "Its result was not kept: "
        )
        super().__init__(
            message=f"artifact {artifact_id!r}: {what}; {note}",
            hint=rows
            + "or compute the figure in the query itself (an aggregate, ORDER BY ... LIMIT) "
            "so the whole answer fits, or raise ASSAY_ARTIFACT_MAX_BYTES and run it again.",
            details={"artifact_id": artifact_id, "rows_kept": kept},
        )


class ArtifactCaptureFailed(ArtifactError):
    code = ARTIFACT_CAPTURE_FAILED

    def __init__(self, what: str, cause: BaseException | str, lost: str = "") -> None:
        reason = cause if isinstance(cause, str) else f"{type(cause).__name__}: {cause}"
        already = "query" if what == "sql" else ("code" if what == "python" else "call")
        super().__init__(
            message=f"the {what} result could not be stored as evidence: {reason}"
            + (f"; {lost}" if lost else ""),
            hint=f"The {already} already ran; do not re-run it. Its result was not kept, so do not "
            "cite it; report that the evidence could not be captured.",
            details={"kind": what},
        )


class ArtifactDetailsLimit(ArtifactError):
    code = ARTIFACT_DETAILS_LIMIT

    def __init__(self, asked: int, limit: int) -> None:
        super().__init__(
            message=f"{asked} artifact ids asked for; at most {limit} per call",
            hint=f"Split the ids into calls of at most {limit}.",
            details={"asked": asked, "limit": limit},
        )


class ArtifactQuotaExceeded(ArtifactError):
    """A capture would take a run (or, in the service, an owner) past its evidence quota; nothing of it is kept."""

    code = ARTIFACT_QUOTA_EXCEEDED

    def __init__(self, scope: str, limit: int, used: int, size: int, setting: str) -> None:
        super().__init__(
            message=f"this {scope}'s evidence quota is {limit:,} bytes: {used:,} are taken and this capture "
            f"needs {size:,} more, so nothing of it was kept",
            hint="Capture less: select fewer rows or columns, aggregate in SQL, write smaller files. "
            f"The operator can raise {setting}.",
            details={"scope": scope, "limit": limit, "used": used, "size": size},
        )
