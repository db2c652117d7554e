"""The code interpreter's error codes (artifact and sandbox codes pass through unchanged)."""

from __future__ import annotations

PYTHON_EXECUTION_FAILED = "PYTHON_EXECUTION_FAILED"
PYTHON_TIMEOUT = "PYTHON_TIMEOUT"
PYTHON_OUT_OF_MEMORY = "PYTHON_OUT_OF_MEMORY"
PYTHON_RESULT_INVALID = "PYTHON_RESULT_INVALID"
SANDBOX_UNAVAILABLE = "SANDBOX_UNAVAILABLE"
CODE_INTERPRETER_PROTOCOL_ERROR = "CODE_INTERPRETER_PROTOCOL_ERROR"

# Sandbox codes that mean "no sandbox can be had here": reported as SANDBOX_UNAVAILABLE.
UNAVAILABLE_CAUSES = frozenset(
    {
        "SANDBOX_RUNTIME_UNAVAILABLE",
        "SANDBOX_LOCAL_NOT_ALLOWED",
        "SANDBOX_UNKNOWN_RUNTIME",
        "SANDBOX_IMAGE_MISSING",
    }
)

UNAVAILABLE_HINT = (
    "Nothing was run: the sandbox fails closed. Start a container engine (podman, docker or nerdctl) with "
    "the sandbox image (scripts/build-sandbox-image.sh builds localhost/assay-sandbox-python:bookworm; "
    "set SANDBOX_IMAGE_PYTHON to it), or set SANDBOX_RUNTIME to an engine that answers; "
    "`assay sandbox doctor` shows what was tried. Only if running untrusted code on this host "
    "unisolated is acceptable, set SANDBOX_ALLOW_LOCAL_RUNTIME=1."
)
