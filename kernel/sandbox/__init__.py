"""The sandbox contract the kernel keeps: what a runtime plugin implements, and fail-closed selection.

* :mod:`.runtime` - :class:`SandboxRuntime` and :class:`RuntimeSession`, which
  ``register_sandbox_runtimes`` plugins (``sandbox_runtimes/``) implement;
* :mod:`.selection` - :func:`select_runtime`: the runtime to use, or a refusal;
* :mod:`.config` (the ``[sandbox]`` settings), :mod:`.results` (what every
  runtime returns), :mod:`.errors` (the ``SANDBOX_*`` codes), :mod:`.uids`.

The sandbox itself - manager, sessions, the hardened container spec, the
launcher, seccomp - is the ``sandbox`` plugin (:mod:`assay.plugins.sandbox`),
which re-exports these names too.
"""

from .config import SandboxConfig, parse_size
from .errors import SandboxError
from .results import (
    ExecutionResult,
    FileInfo,
    OutputCapture,
    ProbeResult,
    ProducedFile,
    SessionStatus,
)
from .runtime import ExecRequest, RuntimeSession, SandboxRuntime
from .selection import LOCAL_WARNING, select_runtime

__all__ = [
    "LOCAL_WARNING",
    "ExecRequest",
    "ExecutionResult",
    "FileInfo",
    "OutputCapture",
    "ProbeResult",
    "ProducedFile",
    "RuntimeSession",
    "SandboxConfig",
    "SandboxError",
    "SandboxRuntime",
    "SessionStatus",
    "parse_size",
    "select_runtime",
]
