"""The display layer: one result type for every runtime.

:class:`OutputCapture` keeps at most ``limit`` bytes of a stream *while* it
is streamed (the rest is counted and dropped), so a 1 GiB flood costs the
host nothing but the time to drain it. Runtimes feed it chunks; the result
carries truncation flags instead of the flood.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field


class ProducedFile(BaseModel):
    """A file the execution created or changed in the working directory."""

    path: str
    size: int
    modified: float


class FileInfo(BaseModel):
    """One entry of :meth:`SandboxSession.list_files`."""

    path: str
    name: str
    size: int
    is_dir: bool
    modified: float


class ExecutionResult(BaseModel):
    """What one execution did, identical in shape for every runtime."""

    exit_code: int | None = Field(description="The program's exit code; None if it never finished.")
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False
    oom_killed: bool = False
    duration_ms: float = 0.0
    files: list[ProducedFile] = Field(default_factory=list)
    isolated: bool = True
    runtime: str = ""
    session_id: str | None = None
    language: str = "python"
    warnings: list[str] = Field(
        default_factory=list, description="Loud notes, e.g. the local runtime."
    )

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.oom_killed

    def summary(self) -> str:
        """One line for people: outcome, duration, runtime."""
        if self.timed_out:
            what = "timed out"
        elif self.oom_killed:
            what = "killed: out of memory"
        else:
            what = f"exit {self.exit_code}"
        iso = "" if self.isolated else " NOT ISOLATED"
        return f"{what} in {self.duration_ms:.0f} ms on {self.runtime}{iso}"


class ProbeResult(BaseModel):
    """What a runtime's real probe found (``assay sandbox doctor`` prints it)."""

    runtime: str
    available: bool
    isolated: bool = True
    version: str | None = None
    detail: str = ""
    endpoint: str | None = None
    oci_runtime: str | None = None
    oci_runtimes: list[str] = Field(default_factory=list)
    cgroup_version: str | None = None
    info: dict[str, Any] = Field(default_factory=dict)


class SessionStatus(BaseModel):
    """The control layer's view of one session."""

    id: str
    runtime: str
    isolated: bool
    language: str
    state: Literal["starting", "idle", "busy", "closed", "expired", "broken"]
    container: str | None = None
    created_at: datetime
    last_used_at: datetime
    expires_at: datetime
    idle_expires_at: datetime
    executions: int = 0


class OutputCapture:
    """Keep the first ``limit`` bytes of a stream (and optionally its last
    ``tail`` bytes), count the rest."""

    __slots__ = ("limit", "_parts", "kept", "total", "_tail", "_tail_size")

    def __init__(self, limit: int, *, tail: int = 0) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self.kept = 0
        self.total = 0
        self._tail = b""
        self._tail_size = tail

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self.limit - self.kept
        if room > 0:
            piece = data[:room]
            self._parts.append(piece)
            self.kept += len(piece)
        if self._tail_size and self.total > self.limit:
            self._tail = (self._tail + data)[-self._tail_size :]

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def getvalue(self) -> bytes:
        return b"".join(self._parts)

    def tail(self) -> bytes:
        """The last bytes seen past the limit (empty if the limit was never reached)."""
        return self._tail

    def text(self) -> str:
        return self.getvalue().decode("utf-8", errors="replace")
