"""The user layer: the Python API the kernel's tools use.

>>> with kernel.sandbox.open_session() as sb:      # doctest: +SKIP
...     sb.put_file("data.csv", b"a,b\\n1,2\\n")
...     result = sb.run_code("import pandas as pd; print(pd.read_csv('data.csv'))")
...     png = sb.get_file("chart.png")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.kernel.sandbox.results import ExecutionResult, FileInfo, SessionStatus

if TYPE_CHECKING:
    from .manager import SandboxManager


class SandboxSession:
    """One sandbox: a long-lived container whose working directory persists.

    Each :meth:`run_code` is a fresh process. Not thread-safe to share
    across runs; calls on one session are serialised by its lock anyway.
    """

    def __init__(self, manager: SandboxManager, session_id: str) -> None:
        self._manager = manager
        self.id = session_id
        self.runtime = manager.runtime.name
        self.isolated = manager.runtime.isolated
        self.workdir = manager.config.workdir

    @property
    def data_root(self) -> str:
        """Where the session's registered data files are (``/data`` in a container)."""
        return self._manager.data_root(self.id)

    def run_code(
        self,
        code: str,
        *,
        language: str = "python",
        timeout_s: float | None = None,
        grace_s: float = 0.0,
    ) -> ExecutionResult:
        """Run ``code``; timeouts and OOM kills are reported in the result, not raised.

        ``grace_s`` (a few seconds at most) lets a client that enforces ``timeout_s``
        itself report after it.
        """
        return self._manager.execute(
            self.id, code, language=language, timeout_s=timeout_s, grace_s=grace_s
        )

    @property
    def supports_resident(self) -> bool:
        """Whether this session can hold a resident process (container runtimes)."""
        return self._manager.resident_supported(self.id)

    def start_resident(self, program: str, *, ready_timeout_s: float | None = None) -> str:
        """Start ``program`` (Python) as the session's one long-lived process; the line it reports when ready.

        It runs in the same container under its own uid, outside the per-call kill
        (see :mod:`assay.plugins.sandbox.resident`), until :meth:`stop_resident` or the session ends.
        """
        return self._manager.start_resident(self.id, program, ready_timeout_s=ready_timeout_s)

    @property
    def caller_uids(self) -> tuple[int, ...]:
        """The uids assay's own callers of a resident process run as: a channel's relay (the
        keeper's uid) and a call's client under the launcher (the code's uid), never the
        resident's own - which is the uid of everything the resident forks. They are this session's
        own (no other session has them; see :mod:`assay.kernel.sandbox.uids`)."""
        users = self._manager.session_users(self.id)
        if users is None:
            return ()
        keeper, code, _ = users
        return tuple(int(user.split(":")[0]) for user in (keeper, code))

    def open_channel(self, program: str, args: list[str] | None = None) -> Any:
        """An exec of ``program`` (assay's own Python, never the user's code) that stays open with stdin attached.

        Returns a :class:`~assay.plugins.sandbox.channel.Channel`; raises ``SANDBOX_EXEC_FAILED``
        where the runtime has none (nerdctl, local).
        """
        return self._manager.open_channel(self.id, program, list(args or []))

    def stop_resident(self) -> bool:
        """Kill the resident process and everything it started."""
        return self._manager.stop_resident(self.id)

    def put_file(self, path: str, data: bytes, *, read_only: bool = False) -> str:
        """Upload ``data`` to ``path`` (relative to the working directory); returns the full path."""
        return self._manager.put_file(self.id, path, data, read_only=read_only)

    def get_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """Download a regular file from the working directory (symlinks and escapes are refused)."""
        return self._manager.get_file(self.id, path, max_bytes)

    def list_files(self, path: str = "/workspace") -> list[FileInfo]:
        """Entries of a directory inside the working directory."""
        return self._manager.list_files(self.id, path)

    def configure(
        self, *, timeout_s: float | None = None, env: dict[str, str] | None = None
    ) -> SessionStatus:
        return self._manager.configure(self.id, timeout_s=timeout_s, env=env)

    def status(self) -> SessionStatus:
        return self._manager.status(self.id)

    def close(self) -> None:
        """Remove the sandbox. Safe to call twice."""
        self._manager.disconnect(self.id)

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        iso = "isolated" if self.isolated else "NOT ISOLATED"
        return f"<SandboxSession {self.id} on {self.runtime} ({iso})>"
