"""The execution layer's interface: what a runtime plugin implements.

A runtime plugin registers a :class:`SandboxRuntime` subclass through the
``register_sandbox_runtimes`` hook. The control layer constructs it with the
:class:`SandboxConfig`, calls :meth:`SandboxRuntime.probe` (a *real* probe:
a daemon ping or a version call over the socket or CLI, never ``which``),
and then :meth:`SandboxRuntime.create_session` once per sandbox session.

Container runtimes should subclass :class:`assay.plugins.sandbox.container.ContainerSession`
for their sessions: it implements execution, timeouts, output caps and file
transfer on top of four small primitives (exec with streamed output, put a
tar archive, hard reset, destroy), so every engine behaves the same.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .config import SandboxConfig
from .results import ExecutionResult, FileInfo, ProbeResult


@dataclass
class ExecRequest:
    """One execution, as the control layer hands it to a runtime session."""

    code: str
    language: str = "python"
    timeout_s: float = 30.0
    stdout_limit: int = 1024**2
    stderr_limit: int = 1024**2
    env: dict[str, str] = field(default_factory=dict)
    #: Seconds the launcher allows past ``timeout_s`` (a client that enforces
    #: ``timeout_s`` itself, further in, needs them to report).
    grace_s: float = 0.0


class RuntimeSession(ABC):
    """One live sandbox (a container, or a temp dir for local) owned by one session.

    The control layer serialises calls (one lock per session), so an
    implementation need not be thread-safe, except :meth:`destroy`, which the
    reaper or a signal handler may call while an execution is running and
    which must then make that execution end promptly.
    """

    #: Identifier of the underlying container (or directory), for status and tests.
    id: str
    #: The spec the sandbox was created from (None for the local runtime): the sandbox plugin's
    #: hardened ``ContainerSpec`` (:mod:`assay.plugins.sandbox.spec`), which the kernel never imports.
    spec: Any

    @abstractmethod
    def execute(self, request: ExecRequest) -> ExecutionResult:
        """Run ``request.code`` in a fresh process; never raise for the code's own failures.

        Must kill the work at ``request.timeout_s`` (``timed_out=True``), cap
        stdout/stderr *while streaming*, and report ``oom_killed`` and the
        files produced in the working directory.
        """

    @abstractmethod
    def put_file(self, path: str, data: bytes, *, read_only: bool = False) -> None:
        """Write ``data`` at ``path`` (already checked to lie in the working directory)."""

    @abstractmethod
    def get_file(self, path: str, max_bytes: int) -> bytes:
        """Read a regular file (no symlinks, inside the working directory), at most ``max_bytes``."""

    @abstractmethod
    def list_files(self, path: str) -> list[FileInfo]:
        """The entries of directory ``path`` (or the file itself)."""

    @abstractmethod
    def destroy(self) -> None:
        """Remove the sandbox and everything in it. Idempotent; never raises."""

    #: Whether :meth:`start_resident` works here (container runtimes: yes).
    supports_resident = False

    def start_resident(self, program: str, env: dict[str, str], ready_timeout_s: float) -> str:
        """Start ``program`` (Python) as the session's long-lived resident process; its ready line.

        See :mod:`assay.plugins.sandbox.resident`. Runtimes without it raise.
        """
        from .errors import SANDBOX_EXEC_FAILED, SandboxError

        raise SandboxError(SANDBOX_EXEC_FAILED, "this runtime has no resident processes")

    def stop_resident(self) -> bool:
        """Kill the resident process and everything it started (True when done)."""
        return True

    def open_channel(self, program: str, args: list[str], on_use: Any = None) -> Any:
        """A :class:`~assay.plugins.sandbox.channel.Channel` to ``program`` (optional; see channel.py)."""
        from .errors import SANDBOX_EXEC_FAILED, SandboxError

        raise SandboxError(SANDBOX_EXEC_FAILED, "this runtime has no channels")

    def alive(self) -> bool:
        """Whether the sandbox can still run code (default: assume so)."""
        return True

    def inspect(self) -> dict[str, Any]:
        """The engine's view of the sandbox (for tests and ``status``)."""
        return {}


class SandboxRuntime(ABC):
    """A sandbox engine plugin: docker, podman, nerdctl, local, ...

    Subclasses set ``name`` (unique) and ``isolated`` (False only for the
    local runtime). Construction must be cheap and must not contact the
    engine; :meth:`probe` does that.
    """

    name: ClassVar[str]
    isolated: ClassVar[bool] = True
    #: One line for ``assay sandbox doctor``.
    description: ClassVar[str] = ""

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config

    @abstractmethod
    def probe(self) -> ProbeResult:
        """Ask the engine itself whether it answers (ping/version), with a timeout.

        Never raises: an unreachable engine is ``ProbeResult(available=False,
        detail=<what failed>)``; the control layer turns that into
        ``SANDBOX_RUNTIME_UNAVAILABLE``.
        """

    def doctor(self) -> ProbeResult:
        """A slower, detailed probe for ``assay sandbox doctor``: version, OCI runtime,
        cgroup version (default: :meth:`probe`)."""
        return self.probe()

    @abstractmethod
    def create_session(self, spec: Any) -> RuntimeSession:
        """Create and start one hardened sandbox from ``spec`` (a ``ContainerSpec``, already checked).

        Raises ``SandboxError`` (``SANDBOX_IMAGE_MISSING``,
        ``SANDBOX_START_FAILED``) on failure, leaving nothing behind.
        """

    def reap(self, *, only_mine: bool = False) -> list[str]:
        """Remove labelled containers whose owner is gone or whose time is up.

        With ``only_mine`` remove every container this process created (exit
        clean-up). Returns the ids removed. Runtimes without containers return [].
        """
        return []

    def uid_block_holders(self, block: str) -> list[str]:
        """Ids of the engine's containers (any state, any owner) labelled with uid block ``block``
        (``labels.UID_BLOCK``; see :mod:`assay.kernel.sandbox.uids`).

        Isolated runtimes must answer from the engine itself: a runtime that cannot is refused
        sessions (``SANDBOX_START_FAILED``), since two sessions sharing uids share the kernel's
        per-uid quotas. Raise on an engine error.
        """
        raise NotImplementedError(
            f"the {self.name} runtime cannot list its containers by uid block"
        )

    def image_present(self, image: str) -> bool | None:
        """Whether ``image`` exists locally (None when the runtime cannot tell)."""
        return None

    def enforced_limits(self) -> dict[str, bool | str]:
        """Which limits this runtime enforces here, for ``assay sandbox doctor``."""
        return {}

    def close(self) -> None:
        """Release connections or helper processes (e.g. a socket service it started)."""
