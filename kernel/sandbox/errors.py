"""The sandbox's error codes.

Every failure the sandbox reports is a :class:`SandboxError` with one of the
stable codes below. A timed-out or OOM-killed execution is *not* an error: it
is an :class:`~kernel.sandbox.results.ExecutionResult` with ``timed_out`` or
``oom_killed`` set, because the model needs to see what happened.
"""

from __future__ import annotations

from assay.kernel.errors import AssayError

SANDBOX_RUNTIME_UNAVAILABLE = "SANDBOX_RUNTIME_UNAVAILABLE"
SANDBOX_LOCAL_NOT_ALLOWED = "SANDBOX_LOCAL_NOT_ALLOWED"
SANDBOX_UNKNOWN_RUNTIME = "SANDBOX_UNKNOWN_RUNTIME"
SANDBOX_OVERRIDE_REFUSED = "SANDBOX_OVERRIDE_REFUSED"
SANDBOX_CONFIG_INVALID = "SANDBOX_CONFIG_INVALID"
SANDBOX_IMAGE_MISSING = "SANDBOX_IMAGE_MISSING"
SANDBOX_LANGUAGE_UNSUPPORTED = "SANDBOX_LANGUAGE_UNSUPPORTED"
SANDBOX_START_FAILED = "SANDBOX_START_FAILED"
SANDBOX_EXEC_FAILED = "SANDBOX_EXEC_FAILED"
SANDBOX_TIMEOUT = "SANDBOX_TIMEOUT"
SANDBOX_SESSION_NOT_FOUND = "SANDBOX_SESSION_NOT_FOUND"
SANDBOX_SESSION_CLOSED = "SANDBOX_SESSION_CLOSED"
SANDBOX_SESSION_LIMIT = "SANDBOX_SESSION_LIMIT"
SANDBOX_PATH_INVALID = "SANDBOX_PATH_INVALID"
SANDBOX_FILE_NOT_FOUND = "SANDBOX_FILE_NOT_FOUND"
SANDBOX_FILE_TOO_LARGE = "SANDBOX_FILE_TOO_LARGE"
SANDBOX_RUNTIME_DIR_UNSAFE = "SANDBOX_RUNTIME_DIR_UNSAFE"

ALL_CODES = (
    SANDBOX_RUNTIME_UNAVAILABLE,
    SANDBOX_LOCAL_NOT_ALLOWED,
    SANDBOX_UNKNOWN_RUNTIME,
    SANDBOX_OVERRIDE_REFUSED,
    SANDBOX_CONFIG_INVALID,
    SANDBOX_IMAGE_MISSING,
    SANDBOX_LANGUAGE_UNSUPPORTED,
    SANDBOX_START_FAILED,
    SANDBOX_EXEC_FAILED,
    SANDBOX_TIMEOUT,
    SANDBOX_SESSION_NOT_FOUND,
    SANDBOX_SESSION_CLOSED,
    SANDBOX_SESSION_LIMIT,
    SANDBOX_PATH_INVALID,
    SANDBOX_FILE_NOT_FOUND,
    SANDBOX_FILE_TOO_LARGE,
    SANDBOX_RUNTIME_DIR_UNSAFE,
)


class SandboxError(AssayError):
    """A sandbox failure with a stable ``SANDBOX_*`` code."""

    code = "SANDBOX_ERROR"


def unavailable(message: str, hint: str = "", **details: object) -> SandboxError:
    """``SANDBOX_RUNTIME_UNAVAILABLE`` with the standard fix-it hint."""
    return SandboxError(
        SANDBOX_RUNTIME_UNAVAILABLE,
        message,
        hint
        or (
            "Start a container engine (docker, podman or nerdctl) or point SANDBOX_RUNTIME at one "
            "that answers; run `assay sandbox doctor` to see what was tried. Only if you accept "
            "running untrusted code on this host unisolated, set SANDBOX_ALLOW_LOCAL_RUNTIME=1."
        ),
        details=dict(details),
    )
