"""The sandbox plugin: hardened, fail-closed execution of untrusted code.

Layers (as in the seed design):

* control - :class:`SandboxManager`: sessions, locks, TTLs, reaper, clean-up
  (``kernel.sandbox``, the subsystem :mod:`assay.plugins.sandbox_plugin` registers);
* execution - :class:`SandboxRuntime` plugins (``sandbox_runtimes/``) and
  their sessions, built on the hardened :class:`ContainerSpec`; the
  runtimes' contract and the fail-closed selection are the kernel's
  (:mod:`assay.kernel.sandbox.runtime`, :mod:`assay.kernel.sandbox.selection`), re-exported here;
* display - :class:`ExecutionResult`, the same for every runtime;
* user - :class:`SandboxSession`, from ``kernel.sandbox.open_session()``.

Importing this package loads all of it (see below for why that is cheap
enough); engines' SDKs load inside the runtime plugins.
"""

# Every submodule is imported here, eagerly. Measured (bench machine, after
# ``import assay``): the whole package ~33 ms, against ~27 ms for the manager
# alone, which any use of a sandbox loads anyway. Kernel start-up imports none
# of it: the runtime plugins register by path (``Lazy``), and the engines'
# SDKs load inside the runtimes.
from assay.kernel.sandbox.config import SandboxConfig, parse_size
from assay.kernel.sandbox.errors import (
    SANDBOX_CONFIG_INVALID,
    SANDBOX_EXEC_FAILED,
    SANDBOX_FILE_NOT_FOUND,
    SANDBOX_FILE_TOO_LARGE,
    SANDBOX_IMAGE_MISSING,
    SANDBOX_LANGUAGE_UNSUPPORTED,
    SANDBOX_LOCAL_NOT_ALLOWED,
    SANDBOX_OVERRIDE_REFUSED,
    SANDBOX_PATH_INVALID,
    SANDBOX_RUNTIME_DIR_UNSAFE,
    SANDBOX_RUNTIME_UNAVAILABLE,
    SANDBOX_SESSION_CLOSED,
    SANDBOX_SESSION_LIMIT,
    SANDBOX_SESSION_NOT_FOUND,
    SANDBOX_START_FAILED,
    SANDBOX_TIMEOUT,
    SANDBOX_UNKNOWN_RUNTIME,
    SandboxError,
)
from assay.kernel.sandbox.results import (
    ExecutionResult,
    FileInfo,
    OutputCapture,
    ProbeResult,
    ProducedFile,
    SessionStatus,
)
from assay.kernel.sandbox.runtime import ExecRequest, RuntimeSession, SandboxRuntime
from assay.kernel.sandbox.selection import LOCAL_WARNING, select_runtime

from .container import ContainerSession, ExecStream
from .manager import SandboxManager, close_all
from .session import SandboxSession
from .spec import ContainerSpec, TmpfsMount, Ulimit, build_spec, check_overrides

__all__ = [
    "ContainerSession",
    "ContainerSpec",
    "ExecRequest",
    "ExecStream",
    "ExecutionResult",
    "FileInfo",
    "LOCAL_WARNING",
    "OutputCapture",
    "ProbeResult",
    "ProducedFile",
    "RuntimeSession",
    "SANDBOX_CONFIG_INVALID",
    "SANDBOX_EXEC_FAILED",
    "SANDBOX_FILE_NOT_FOUND",
    "SANDBOX_FILE_TOO_LARGE",
    "SANDBOX_IMAGE_MISSING",
    "SANDBOX_LANGUAGE_UNSUPPORTED",
    "SANDBOX_LOCAL_NOT_ALLOWED",
    "SANDBOX_OVERRIDE_REFUSED",
    "SANDBOX_PATH_INVALID",
    "SANDBOX_RUNTIME_DIR_UNSAFE",
    "SANDBOX_RUNTIME_UNAVAILABLE",
    "SANDBOX_SESSION_CLOSED",
    "SANDBOX_SESSION_LIMIT",
    "SANDBOX_SESSION_NOT_FOUND",
    "SANDBOX_START_FAILED",
    "SANDBOX_TIMEOUT",
    "SANDBOX_UNKNOWN_RUNTIME",
    "SandboxConfig",
    "SandboxError",
    "SandboxManager",
    "SandboxRuntime",
    "SandboxSession",
    "SessionStatus",
    "TmpfsMount",
    "Ulimit",
    "build_spec",
    "check_overrides",
    "close_all",
    "parse_size",
    "select_runtime",
]
