"""The control layer: sessions, one lock each, TTLs, the reaper, clean-up.

A :class:`SandboxManager` (one per :class:`~assay.kernel.Kernel`, its
``kernel.sandbox``) selects the runtime (fail-closed, once, lazily), then
connects, configures, executes in, reports on and disconnects sessions. Each
session has its own lock, so executions in one session are serialised while
sessions run in parallel. A background reaper closes sessions idle longer
than ``SANDBOX_IDLE_TTL`` (300 s) or older than ``SANDBOX_MAX_LIFETIME``
(3600 s), even if the caller forgets them, and removes orphaned containers
left by dead processes. Everything is removed at exit and on SIGTERM/SIGINT.
"""

from __future__ import annotations

import atexit
import builtins
import threading
import time
import uuid
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from assay.kernel import exit_signals
from assay.kernel.log import get_logger
from assay.kernel.sandbox import uids
from assay.kernel.sandbox.config import SandboxConfig
from assay.kernel.sandbox.errors import (
    SANDBOX_FILE_TOO_LARGE,
    SANDBOX_OVERRIDE_REFUSED,
    SANDBOX_SESSION_CLOSED,
    SANDBOX_SESSION_LIMIT,
    SANDBOX_SESSION_NOT_FOUND,
    SANDBOX_START_FAILED,
    SandboxError,
)
from assay.kernel.sandbox.results import ExecutionResult, FileInfo, ProbeResult, SessionStatus
from assay.kernel.sandbox.runtime import ExecRequest, RuntimeSession, SandboxRuntime
from assay.kernel.sandbox.selection import LOCAL_WARNING, select_runtime

from .datamounts import DataMount
from .labels import owner_labels
from .paths import sandbox_path
from .spec import build_spec, check_overrides, normalize_language

if TYPE_CHECKING:
    from .session import SandboxSession

log = get_logger("assay.sandbox")


# Most seconds ``execute(grace_s=...)`` may add to an execution's time limit.
MAX_GRACE_S = 5.0


@dataclass
class _Session:
    id: str
    language: str
    runtime: RuntimeSession
    timeout_s: float
    env: dict[str, str]
    created: float = field(default_factory=time.time)
    last_used: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock)
    executions: int = 0
    state: str = "idle"
    closed: bool = False


class SandboxManager:
    """Sessions on one runtime, for one kernel (or one program)."""

    def __init__(
        self,
        config: SandboxConfig | None = None,
        runtimes: Mapping[str, type[SandboxRuntime]] | None = None,
        *,
        runtime: SandboxRuntime | None = None,
    ) -> None:
        self.config = config or SandboxConfig.from_env()
        self._runtime_classes = dict(runtimes or {})
        self._runtime = runtime
        self.probes: list[ProbeResult] = []
        self._sessions: dict[str, _Session] = {}
        self._starting = 0  # sessions being made: they count against max_sessions from the check on
        self._lock = threading.RLock()
        self._closed = False
        self._reaper: threading.Thread | None = None
        self._stop = threading.Event()
        self._pool: list[RuntimeSession] = []
        self._pool_lock = threading.RLock()  # re-entrant: a signal handler may close mid-refill
        self._pool_filling = False
        _MANAGERS.add(self)
        _install_exit_handlers()

    @classmethod
    def for_kernel(cls, kernel: Any) -> SandboxManager:
        """A manager on the kernel's registered runtimes and the ``[sandbox]`` section of
        its settings (what ``kernel.sandbox`` makes)."""
        return cls(
            SandboxConfig.from_settings(kernel.settings),
            kernel.registry("sandbox_runtimes").as_dict(),
        )

    @property
    def closed(self) -> bool:
        return self._closed

    # --- runtime ---------------------------------------------------------------

    @property
    def runtime(self) -> SandboxRuntime:
        """The selected runtime (selected on first use; fail-closed)."""
        if self._runtime is not None and self._reaper is not None:
            if not exit_signals.installed():
                _install_exit_handlers()  # first use from the main thread, if the first ever was not
            return self._runtime
        with self._lock:
            if self._closed:
                raise SandboxError(SANDBOX_SESSION_CLOSED, "the sandbox manager is closed")
            if self._runtime is None:
                self._runtime, self.probes = select_runtime(self.config, self._runtime_classes)
            if self._reaper is None:
                self._start_up()
        return self._runtime

    @property
    def isolated(self) -> bool:
        return self.runtime.isolated

    def _start_up(self) -> None:
        assert self._runtime is not None
        try:
            removed = self._runtime.reap()
            if removed:
                log.info("sandbox_orphans_removed", runtime=self._runtime.name, count=len(removed))
        except Exception as exc:  # noqa: BLE001 - a failed sweep must not block work
            log.warning("sandbox_reap_failed", runtime=self._runtime.name, error=repr(exc))
        self._reaper = threading.Thread(
            target=self._reap_loop, name="assay-sandbox-reaper", daemon=True
        )
        self._reaper.start()
        if self.config.pool_size > 0:
            self._refill_pool()

    # --- control layer: connect / configure / execute / disconnect / status / list

    def connect(
        self, language: str = "python", *, data_files: tuple[DataMount, ...] = (), **overrides: Any
    ) -> str:
        """Start a session; returns its id. ``overrides`` may only tighten limits.

        ``data_files``: registered files to mount read-only under ``/data`` (datamounts.py), given by
        the host, never by an override; such a session is always created fresh (no pooled sandbox).
        """
        lang = normalize_language(language)
        data_files = tuple(data_files)
        checked = check_overrides(self.config, overrides)
        runtime = self.runtime
        with (
            self._lock
        ):  # the slot is taken here, under the lock, so concurrent connects cannot all pass
            open_count = sum(1 for s in self._sessions.values() if not s.closed) + self._starting
            if open_count >= self.config.max_sessions:
                raise SandboxError(
                    SANDBOX_SESSION_LIMIT,
                    f"{open_count} sandbox sessions are open (SANDBOX_MAX_SESSIONS)",
                    "Close sessions you no longer need.",
                )
            self._starting += 1
        try:
            session_id = "sbx_" + uuid.uuid4().hex[:16]
            pooled = not checked and not data_files and lang == "python"
            rs = self._take_pooled() if pooled else None
            if rs is None:
                rs = self._create(session_id, lang, overrides, data_files=data_files)
        except BaseException:
            with self._lock:
                self._starting -= 1
            raise
        if not runtime.isolated:
            log.warning("sandbox_local_session", session=session_id, warning=LOCAL_WARNING)
        timeout = float(checked.get("timeout", self.config.timeout))
        rec = _Session(session_id, lang, rs, timeout, dict(checked.get("env", {})))
        with self._lock:
            self._sessions[session_id] = rec
            self._starting -= 1
        log.info(
            "sandbox_session_open", session=session_id, runtime=runtime.name, container=rs.id[:12]
        )
        if self.config.pool_size > 0:
            self._refill_pool()
        return session_id

    def _create(
        self,
        session_id: str,
        language: str,
        overrides: dict[str, Any],
        *,
        pooled: bool = False,
        data_files: tuple[DataMount, ...] = (),
    ) -> RuntimeSession:
        """A new sandbox whose uids no other container of the engine has (see uids.py)."""
        runtime = self.runtime
        name = f"assay-{session_id.replace('_', '-')}"
        for attempt in range(uids.ATTEMPTS):
            block = uids.pick(self.config.uid_range)
            labels = owner_labels(session_id, runtime.name, self.config.max_lifetime, pooled=pooled)
            spec = build_spec(
                self.config,
                language=language,
                name=f"{name}-{attempt}" if attempt else name,
                labels=labels,
                overrides=overrides,
                users=block,
                data_files=data_files,
            )
            rs = runtime.create_session(spec)
            if not runtime.isolated:
                return rs  # no engine, no uids of its own: the local runtime runs as assay's user
            try:
                others = [
                    c
                    for c in runtime.uid_block_holders(block.label)
                    if not uids.same_container(c, rs.id)
                ]
            except Exception as exc:  # noqa: BLE001 - unknown means not shown to be free: refused
                rs.destroy()
                raise SandboxError(
                    SANDBOX_START_FAILED,
                    f"{runtime.name}: could not check that the session's uids are its own: {exc}",
                    "Check the engine (assay sandbox doctor).",
                ) from None
            if not others:
                return rs
            log.info("sandbox_uid_block_taken", block=block.label, holders=[c[:12] for c in others])
            rs.destroy()
        raise SandboxError(
            SANDBOX_START_FAILED,
            f"no free uid block in SANDBOX_UID_RANGE={self.config.uid_range} after "
            f"{uids.ATTEMPTS} tries",
            "Widen SANDBOX_UID_RANGE, or remove sandboxes left over (assay sandbox doctor).",
        )

    def configure(
        self, session_id: str, *, timeout_s: float | None = None, env: dict[str, str] | None = None
    ) -> SessionStatus:
        """Change a session's default timeout or extra environment (within the limits)."""
        rec = self._get(session_id)
        update: dict[str, Any] = {}
        if timeout_s is not None:
            update["timeout"] = timeout_s
        if env is not None:
            update["env"] = env
        checked = check_overrides(self.config, update)
        with rec.lock:
            if "timeout" in checked:
                rec.timeout_s = float(checked["timeout"])
            if "env" in checked:
                rec.env = dict(checked["env"])
            rec.last_used = time.time()
        return self._status(rec)

    def execute(
        self,
        session_id: str,
        code: str,
        *,
        language: str | None = None,
        timeout_s: float | None = None,
        grace_s: float = 0.0,
    ) -> ExecutionResult:
        """Run ``code`` in the session (a fresh process; files in the workdir persist).

        ``grace_s`` (at most :data:`MAX_GRACE_S`) extends the launcher's timer past the
        checked ``timeout_s``, for a client that enforces ``timeout_s`` itself and must
        still report afterwards (the code interpreter's notebook client).
        """
        rec = self._get(session_id)
        lang = normalize_language(language or rec.language)
        timeout = rec.timeout_s if timeout_s is None else float(timeout_s)
        if not (0 < timeout <= self.config.timeout):
            raise SandboxError(
                SANDBOX_OVERRIDE_REFUSED,
                f"timeout {timeout_s!r} s is outside (0, {self.config.timeout}] s",
                "Raise SANDBOX_TIMEOUT on the host if longer executions are really needed.",
            )
        request = ExecRequest(
            code=code,
            language=lang,
            timeout_s=timeout,
            stdout_limit=self.config.output_limit,
            stderr_limit=self.config.output_limit,
            env=rec.env,
            grace_s=min(max(0.0, float(grace_s)), MAX_GRACE_S),
        )
        with self._locked(rec):
            rec.state = "busy"
            try:
                result = rec.runtime.execute(request)
            finally:
                rec.state = "idle"
                rec.executions += 1
                rec.last_used = time.time()
        result.session_id = rec.id
        if not self.runtime.isolated:
            result.isolated = False
            if LOCAL_WARNING not in result.warnings:
                result.warnings.insert(0, LOCAL_WARNING)
        return result

    def disconnect(self, session_id: str) -> None:
        """Close the session and remove its sandbox. Unknown or closed ids are ignored."""
        with self._lock:
            rec = self._sessions.pop(session_id, None)
        if rec is not None:
            self._destroy(rec, "disconnect")

    def status(self, session_id: str) -> SessionStatus:
        return self._status(self._get(session_id))

    def inspect(self, session_id: str) -> dict[str, Any]:
        """The engine's own view of the session's sandbox (e.g. ``podman inspect``)."""
        return self._get(session_id).runtime.inspect()

    def list(self) -> list[SessionStatus]:
        """The open sessions. One the reaper has closed but not yet removed is not open."""
        with self._lock:
            recs = list(self._sessions.values())
        return [status for status in map(self._status, recs) if status.state != "closed"]

    # --- files -------------------------------------------------------------------

    def data_root(self, session_id: str) -> str:
        """Where the session's data files are: ``/data``, or the local runtime's own directory."""
        return str(getattr(self._get(session_id).runtime, "data_root", None) or "/data")

    def resident_supported(self, session_id: str) -> bool:
        return bool(getattr(self._get(session_id).runtime, "supports_resident", False))

    def start_resident(
        self, session_id: str, program: str, *, ready_timeout_s: float | None = None
    ) -> str:
        """Start the session's resident process (see :mod:`assay.plugins.sandbox.resident`); its ready line."""
        rec = self._get(session_id)
        wait = (
            self.config.timeout
            if ready_timeout_s is None
            else min(float(ready_timeout_s), self.config.timeout)
        )
        with self._locked(rec):
            line = rec.runtime.start_resident(program, rec.env, wait)
            rec.last_used = time.time()
        return line

    def open_channel(self, session_id: str, program: str, args: builtins.list[str]) -> Any:
        """An attached exec of ``program`` (assay's own Python) as the keeper's uid; see channel.py."""
        rec = self._get(session_id)

        def touch() -> None:  # a channel's exchanges count as use (the idle reaper)
            if rec.closed:
                from .channel import ChannelBroken

                raise ChannelBroken("the session is closed", delivered=False)
            rec.last_used = time.time()

        with self._locked(rec):
            return rec.runtime.open_channel(program, args, touch)

    def session_users(self, session_id: str) -> tuple[str, str, str] | None:
        """The session's own (keeper, code, resident) uid:gid, or None where it has none (local)."""
        spec = getattr(self._get(session_id).runtime, "spec", None)
        if spec is None or not self.runtime.isolated:
            return None
        return spec.user, spec.exec_user, spec.resident_user

    def stop_resident(self, session_id: str) -> bool:
        """Kill the session's resident process and everything it started."""
        rec = self._get(session_id)
        with self._locked(rec):
            return rec.runtime.stop_resident()

    def put_file(self, session_id: str, path: str, data: bytes, *, read_only: bool = False) -> str:
        rec = self._get(session_id)
        if len(data) > self.config.max_file_size:
            raise SandboxError(
                SANDBOX_FILE_TOO_LARGE,
                f"{len(data)} bytes exceed the {self.config.max_file_size}-byte file limit",
                "Upload a smaller file or a sample of it.",
            )
        full = sandbox_path(self.config.workdir, path)
        with self._locked(rec):
            rec.runtime.put_file(full, bytes(data), read_only=read_only)
            rec.last_used = time.time()
        return full

    def get_file(self, session_id: str, path: str, max_bytes: int | None = None) -> bytes:
        rec = self._get(session_id)
        limit = (
            self.config.max_file_size
            if max_bytes is None
            else min(int(max_bytes), self.config.max_file_size)
        )
        full = sandbox_path(self.config.workdir, path)
        with self._locked(rec):
            data = rec.runtime.get_file(full, limit)
            rec.last_used = time.time()
        return data

    def list_files(self, session_id: str, path: str = "") -> builtins.list[FileInfo]:
        rec = self._get(session_id)
        full = sandbox_path(self.config.workdir, path or self.config.workdir, allow_root=True)
        with self._locked(rec):
            files = rec.runtime.list_files(full)
            rec.last_used = time.time()
        return files

    # --- user layer -----------------------------------------------------------------

    def open_session(
        self, language: str = "python", *, data_files: tuple[DataMount, ...] = (), **overrides: Any
    ) -> SandboxSession:
        """A :class:`SandboxSession` (the user layer) on a new sandbox (``data_files``: see :meth:`connect`)."""
        from .session import SandboxSession

        return SandboxSession(self, self.connect(language, data_files=data_files, **overrides))

    # --- reaping and clean-up ----------------------------------------------------------

    def reap_expired(self, now: float | None = None) -> builtins.list[str]:
        """Close sessions past their idle TTL or maximum lifetime; returns their ids."""
        now = time.time() if now is None else now
        expired = []
        with self._lock:
            for rec in list(self._sessions.values()):
                if now - rec.created >= self.config.max_lifetime:
                    rec.closed = True  # even mid-execution: the destroy below ends it
                    why = "max lifetime"
                elif now - rec.last_used >= self.config.idle_ttl and rec.lock.acquire(
                    blocking=False
                ):
                    # Holding the lock while marking it closed: an execution that was
                    # about to start sees SANDBOX_SESSION_CLOSED, never a half-removed sandbox.
                    rec.closed = True
                    rec.lock.release()
                    why = "idle ttl"
                else:
                    continue
                expired.append((rec, why))
        for rec, why in expired:
            log.info("sandbox_session_expired", session=rec.id, reason=why)
            self._destroy(rec, why)
            with self._lock:  # listed until its sandbox is really gone
                self._sessions.pop(rec.id, None)
        return [r.id for r, _ in expired]

    def _reap_loop(self) -> None:
        while not self._stop.wait(self.config.reap_interval):
            try:
                self.reap_expired()
                if self._runtime is not None:
                    self._runtime.reap()
            except Exception as exc:  # noqa: BLE001 - the reaper must keep running
                log.warning("sandbox_reaper_error", error=repr(exc))

    def close(self, *, sweep: bool = False) -> None:
        """Destroy every session and pooled sandbox; stop the reaper. Idempotent.

        With ``sweep`` (process exit, SIGTERM/SIGINT) also remove every container
        this *process* created, in case a removal above failed; without it other
        managers in the process (other kernels) keep their sandboxes.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            recs = list(self._sessions.values())
            self._sessions.clear()
        self._stop.set()
        for rec in recs:
            self._destroy(rec, "manager closed")
        with self._pool_lock:
            pooled, self._pool = self._pool, []
        for rs in pooled:
            rs.destroy()
        if self._runtime is not None:
            if sweep:
                try:
                    self._runtime.reap(only_mine=True)
                except Exception as exc:  # noqa: BLE001
                    log.warning("sandbox_final_reap_failed", error=repr(exc))
            self._runtime.close()
        _MANAGERS.discard(self)

    def __enter__(self) -> SandboxManager:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- warm pool (off by default; each sandbox is handed out once) -------------------

    def _take_pooled(self) -> RuntimeSession | None:
        if self.config.pool_size <= 0:
            return None
        with self._pool_lock:
            while self._pool:
                rs = self._pool.pop(0)
                if rs.alive():
                    return rs
                rs.destroy()
        return None

    def _refill_pool(self) -> None:
        with self._pool_lock:
            if self._pool_filling or self._closed:
                return
            self._pool_filling = True

        def fill() -> None:
            try:
                while not self._closed:
                    with self._pool_lock:
                        if len(self._pool) >= self.config.pool_size:
                            return
                    rs = self._create("pool_" + uuid.uuid4().hex[:12], "python", {}, pooled=True)
                    with self._pool_lock:
                        if self._closed:
                            rs.destroy()
                            return
                        self._pool.append(rs)
            except Exception as exc:  # noqa: BLE001
                log.warning("sandbox_pool_fill_failed", error=repr(exc))
            finally:
                with self._pool_lock:
                    self._pool_filling = False

        threading.Thread(target=fill, name="assay-sandbox-pool", daemon=True).start()

    # --- internals --------------------------------------------------------------------

    def _get(self, session_id: str) -> _Session:
        with self._lock:
            rec = self._sessions.get(session_id)
        if rec is None or rec.closed:
            raise SandboxError(
                SANDBOX_SESSION_NOT_FOUND,
                f"no open sandbox session {session_id!r}",
                "It was closed or expired (idle TTL / maximum lifetime); open a new one.",
            )
        return rec

    @contextmanager
    def _locked(self, rec: _Session) -> Iterator[None]:
        with rec.lock:
            if rec.closed:
                raise SandboxError(SANDBOX_SESSION_CLOSED, f"sandbox session {rec.id} was closed")
            yield

    def _destroy(self, rec: _Session, why: str) -> None:
        rec.closed = True
        rec.state = "closed"
        rec.runtime.destroy()
        log.info("sandbox_session_closed", session=rec.id, reason=why)

    def _status(self, rec: _Session) -> SessionStatus:
        def ts(t: float) -> datetime:
            return datetime.fromtimestamp(t, tz=UTC)

        state: Any = rec.state if not rec.closed else "closed"  # SessionStatus validates it
        if not rec.closed and not rec.runtime.alive() and state == "idle":
            state = "broken"
        return SessionStatus(
            id=rec.id,
            runtime=self.runtime.name,
            isolated=self.runtime.isolated,
            language=rec.language,
            state=state,
            container=rec.runtime.id,
            created_at=ts(rec.created),
            last_used_at=ts(rec.last_used),
            expires_at=ts(rec.created + self.config.max_lifetime),
            idle_expires_at=ts(rec.last_used + self.config.idle_ttl),
            executions=rec.executions,
        )


# --- process-wide clean-up -------------------------------------------------------------

_MANAGERS: weakref.WeakSet[SandboxManager] = weakref.WeakSet()
_HANDLERS_INSTALLED = False


def close_all() -> None:
    """Close every live manager (at exit and on SIGTERM/SIGINT)."""
    for manager in list(_MANAGERS):
        try:
            manager.close(sweep=True)
        except Exception as exc:  # noqa: BLE001
            log.warning("sandbox_close_failed", error=repr(exc))


def _install_exit_handlers() -> None:
    """``atexit`` clean-up once; the SIGTERM/SIGINT handlers as soon as a call comes from the main thread.

    Marking them installed before knowing the thread could run was the bug
    where a sandbox first used from a worker thread was never cleaned up on
    SIGTERM: the signal part stays pending until it really is installed.
    """
    global _HANDLERS_INSTALLED
    if not _HANDLERS_INSTALLED:
        _HANDLERS_INSTALLED = True
        atexit.register(close_all)
        exit_signals.on_exit_signal(close_all)
    exit_signals.install()
