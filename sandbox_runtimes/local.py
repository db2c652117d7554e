"""The local runtime: a subprocess on this host. NOT ISOLATED.

Only used when ``SANDBOX_ALLOW_LOCAL_RUNTIME=1`` (explicitly with
``SANDBOX_RUNTIME=local``, or as the last resort of detection). What it does
do: a fresh temporary directory per session as the working directory, an
environment built from the allow-list only (never the host's), rlimits
(address space, CPU seconds, file size, processes, open files, no core
dumps), its own process group killed on timeout, output capped while
streaming, and a loud warning in the log and in every result
(``isolated: false``).

When assay runs as root and its Python is usable by other users, each
session's code runs as a uid of its own (an unused number, never root's and
never another session's): the code cannot read the caller's
``/proc/<pid>/environ`` (its secrets) or signal other processes,
RLIMIT_NPROC really limits it, and after each call every process of that
uid is killed. Otherwise the code runs as this same user: it can read the
caller's environment through ``/proc``, and doctor and every result say so
plainly, and every call's processes carry a per-call token in their
environment: whatever still carries it after the call is killed, so a
``setsid`` daemon does not outlive its call there either (unless it scrubs
its own environment: this runtime is not a boundary). What it cannot do: stop the
code from reading the host's world-readable files or using the network.
"""

from __future__ import annotations

import os
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from typing import Any

from assay.kernel.log import get_logger
from assay.plugins.sandbox import (
    LOCAL_WARNING,
    SANDBOX_EXEC_FAILED,
    SANDBOX_FILE_NOT_FOUND,
    SANDBOX_FILE_TOO_LARGE,
    SANDBOX_PATH_INVALID,
    ContainerSpec,
    ExecRequest,
    ExecutionResult,
    FileInfo,
    OutputCapture,
    ProbeResult,
    ProducedFile,
    RuntimeSession,
    SandboxError,
    SandboxRuntime,
)
from assay.plugins.sandbox.spec import normalize_language

log = get_logger("assay.sandbox.local")

# RLIMIT_AS headroom above the memory budget (see _limits): enough for
# pandas + matplotlib + OpenBLAS to load and work on a small frame.
LOCAL_ADDRESS_SPACE_HEADROOM = 1024 * 1024**2
# Session uids (when assay runs as root) come from this range: far above any
# distribution's users and podman's default subordinate ranges.
SESSION_UID_BASE = 0x5A00_0000
SESSION_UID_SPAN = 1 << 24
ENVIRONMENT_READABLE = (
    "the code runs as the same user as this process: it can read the caller's environment "
    "(/proc/<pid>/environ, secrets included); only as root, with a Python every user may run, does each "
    "local session get a uid of its own"
)
CALL_TOKEN = "ASSAY_SANDBOX_CALL"


class LocalRuntime(SandboxRuntime):
    """Subprocesses with rlimits in a temp dir. Not a security boundary."""

    name = "local"
    isolated = False
    description = "host subprocess with rlimits (NOT isolated)"

    def probe(self) -> ProbeResult:
        ok = os.name == "posix"
        return ProbeResult(
            runtime=self.name,
            available=ok,
            isolated=False,
            version=f"python {sys.version.split()[0]}",
            detail="local subprocess runtime (NOT isolated)"
            if ok
            else "needs a POSIX host for rlimits",
        )

    def create_session(self, spec: ContainerSpec) -> LocalSession:
        spec.check()
        log.warning("sandbox_local_runtime", warning=LOCAL_WARNING)
        return LocalSession(spec)

    def enforced_limits(self) -> dict[str, bool | str]:
        return {
            "network none": False,
            "memory limit": "RLIMIT_AS (address space, not RSS)",
            "cpu quota": "RLIMIT_CPU (seconds, not a share)",
            "pids limit": "RLIMIT_NPROC (per user)",
            "read-only rootfs": False,
            "file-size limit": True,
            "non-root": os.getuid() != 0 or own_uid_possible(),
            "host files hidden": False,
            "environment allow-list": (
                "enforced: each session runs as its own uid, the caller's environment is unreadable"
                if own_uid_possible()
                else "the code's own only; NOT the caller's: " + ENVIRONMENT_READABLE
            ),
            "processes end with the call": "yes (the session's uid)"
            if own_uid_possible()
            else "those carrying the call's token (a daemon that scrubs its environment escapes)",
        }


class LocalSession(RuntimeSession):
    def __init__(self, spec: ContainerSpec) -> None:
        self.spec = spec
        self.root = tempfile.mkdtemp(prefix="assay-sbx-")
        os.makedirs(os.path.join(self.root, ".tmp"), exist_ok=True)
        self.id = self.root
        self.data_root = self._link_data_files(spec)
        self._destroyed = False
        self._procs: set[int] = set()
        # As root: a uid of the session's own (see the module docstring); else this user.
        self.uid: int | None = _free_uid() if own_uid_possible() else None
        if self.uid is not None:
            for path in (self.root, os.path.join(self.root, ".tmp")):
                os.chown(path, self.uid, self.uid)
                os.chmod(path, 0o700)

    @staticmethod
    def _link_data_files(spec: ContainerSpec) -> str | None:
        """The registered data files (datamounts.py) as links in a directory of the session's own:
        nothing here is isolated, so the code could read them anyway; the runner is told where they are."""
        if not spec.data_files:
            return None
        root = tempfile.mkdtemp(prefix="assay-sbx-data-")
        for mount in spec.data_files:
            link = os.path.join(root, os.path.relpath(mount.target, "/data"))
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(mount.source, link)
        os.chmod(root, 0o755)
        return root

    # --- paths ---------------------------------------------------------------------

    def _host_path(self, path: str) -> str:
        """Map a ``/workspace/...`` path to the temp dir, refusing escapes."""
        rel = os.path.relpath(path, self.spec.workdir)
        if rel.startswith(".."):
            raise SandboxError(SANDBOX_PATH_INVALID, f"{path!r} is outside the working directory")
        return os.path.normpath(os.path.join(self.root, rel))

    def _sandbox_path(self, host: str) -> str:
        rel = os.path.relpath(host, self.root)
        return self.spec.workdir if rel == "." else f"{self.spec.workdir}/{rel}"

    def _checked(self, path: str) -> str:
        host = self._host_path(path)
        real = os.path.realpath(host)
        if real != host or not (real == self.root or real.startswith(self.root + os.sep)):
            raise SandboxError(
                SANDBOX_PATH_INVALID,
                f"{path!r} is a symlink or resolves outside the working directory",
            )
        return host

    # --- execution -------------------------------------------------------------------

    def _env(self, request: ExecRequest, token: str) -> dict[str, str]:
        env = {**self.spec.environment, **request.env, CALL_TOKEN: token}
        tmp = os.path.join(self.root, ".tmp")
        env.update(HOME=tmp, TMPDIR=tmp, MPLCONFIGDIR=os.path.join(tmp, ".matplotlib"))
        return env

    def _program(self, language: str, code: str) -> list[str]:
        if language == "python":
            return [sys.executable, "-E", "-s", "-c", code]
        return ["/bin/sh", "-c", code]

    def _limits(self, timeout_s: float):
        spec = self.spec
        uid = self.uid
        nproc = _user_process_count(uid) + spec.pids_limit

        def apply() -> None:
            import resource

            def setl(which: int, value: int) -> None:
                soft, hard = resource.getrlimit(which)
                if hard != resource.RLIM_INFINITY:
                    value = min(value, hard)
                resource.setrlimit(which, (value, value))

            # Address space counts mappings, not memory used: shared libraries and
            # the allocator arenas of numpy/OpenBLAS/matplotlib reserve far more
            # than they touch, so the limit leaves room for them above the budget.
            setl(resource.RLIMIT_AS, spec.memory_bytes + LOCAL_ADDRESS_SPACE_HEADROOM)
            setl(resource.RLIMIT_CPU, int(timeout_s) + 1)
            setl(resource.RLIMIT_FSIZE, spec.max_file_size)
            setl(resource.RLIMIT_NPROC, nproc)
            setl(resource.RLIMIT_NOFILE, 256)
            setl(resource.RLIMIT_CORE, 0)
            if uid is not None:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)

        return apply

    def execute(self, request: ExecRequest) -> ExecutionResult:
        lang = normalize_language(request.language)
        out, err = OutputCapture(request.stdout_limit), OutputCapture(request.stderr_limit)
        before = self._scan()
        token = secrets.token_hex(12)
        started = time.perf_counter()
        try:
            proc = subprocess.Popen(
                self._program(lang, request.code),
                cwd=self.root,
                env=self._env(request, token),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=self._limits(request.timeout_s),
                close_fds=True,
            )
        except OSError as exc:
            raise SandboxError(
                SANDBOX_EXEC_FAILED, f"local runtime could not start the code: {exc}"
            ) from None
        self._procs.add(proc.pid)
        assert proc.stdout is not None and proc.stderr is not None  # both PIPE above
        timed_out = False
        deadline = started + request.timeout_s + request.grace_s
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        exited_at = None
        try:
            while True:
                now = time.perf_counter()
                if proc.poll() is None and now >= deadline:
                    timed_out = True
                    _killpg(proc.pid)
                    proc.wait()
                    break
                if proc.poll() is not None:
                    exited_at = exited_at or now
                    _killpg(proc.pid)  # stragglers left in the group
                    if not sel.get_map() or now - exited_at > 0.25:
                        break
                if not sel.get_map():
                    try:
                        proc.wait(timeout=max(0.0, min(deadline - now, 0.1)))
                    except subprocess.TimeoutExpired:
                        pass
                    continue
                for key, _ in sel.select(timeout=max(0.0, min(deadline - now, 0.1))):
                    data = os.read(key.fd, 65536)
                    if not data:
                        sel.unregister(key.fileobj)
                    else:
                        key.data.write(data)
        finally:
            sel.close()
            proc.stdout.close()
            proc.stderr.close()
            self._procs.discard(proc.pid)
            if self.uid is not None:
                self._kill_session_processes()
            else:  # a scan of /proc (~30 ms on a host with 800 processes): only without a uid of its own
                _kill_carrying(f"{CALL_TOKEN}={token}".encode())
        code = proc.returncode
        exit_code = 128 - code if code is not None and code < 0 else code
        stderr = err.text()
        oom = bool(not timed_out and code != 0 and "MemoryError" in stderr[-2000:])
        return ExecutionResult(
            exit_code=None if timed_out else exit_code,
            stdout=out.text(),
            stderr=stderr,
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
            timed_out=timed_out,
            oom_killed=oom,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            files=self._produced(before),
            isolated=False,
            runtime="local",
            language=lang,
            warnings=[LOCAL_WARNING] + ([] if self.uid is not None else [ENVIRONMENT_READABLE]),
        )

    def _kill_session_processes(self) -> None:
        """SIGKILL every process of the session's uid (what the call left: setsid daemons too)."""
        if self.uid is None:
            return
        for _ in range(3):
            pid = os.fork()
            if (
                pid == 0
            ):  # only system calls here, then _exit: safe after fork in a threaded process
                try:
                    os.setresgid(self.uid, self.uid, self.uid)
                    os.setresuid(self.uid, self.uid, self.uid)
                    os.kill(-1, signal.SIGKILL)
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
            if not _uid_has_processes(self.uid):
                return

    def _scan(self) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if not (dirpath == self.root and d == ".tmp")]
            for name in filenames:
                full = os.path.join(dirpath, name)
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    found[full] = (st.st_mtime_ns, st.st_size)
            if len(found) >= 5000:
                break
        return found

    def _produced(self, before: dict[str, tuple[int, int]]) -> list[ProducedFile]:
        after = self._scan()
        return [
            ProducedFile(path=self._sandbox_path(p), size=size, modified=mtime / 1e9)
            for p, (mtime, size) in after.items()
            if before.get(p) != (mtime, size)
        ][:500]

    # --- files --------------------------------------------------------------------------

    def put_file(self, path: str, data: bytes, *, read_only: bool = False) -> None:
        host = self._host_path(path)
        parent = os.path.dirname(host)
        os.makedirs(parent, exist_ok=True)
        if os.path.realpath(parent) != parent:
            raise SandboxError(SANDBOX_PATH_INVALID, f"{path!r} goes through a symlink")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        fd = os.open(host, flags, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if read_only:
            os.chmod(host, 0o444)
        if (
            self.uid is not None
        ):  # the session's uid owns what it may change: its directories, writable files
            here = parent
            while here != self.root and here.startswith(self.root + os.sep):
                os.chown(here, self.uid, self.uid)
                here = os.path.dirname(here)
            if not read_only:
                os.chown(host, self.uid, self.uid)

    def _lstat(self, path: str) -> tuple[str, os.stat_result]:
        """The host path of sandbox ``path`` and its lstat; SANDBOX_FILE_NOT_FOUND when it is not there."""
        host = self._checked(path)
        try:
            return host, os.lstat(host)
        except FileNotFoundError:
            raise SandboxError(SANDBOX_FILE_NOT_FOUND, f"no file {path!r} in the sandbox") from None

    def get_file(self, path: str, max_bytes: int) -> bytes:
        host, st = self._lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise SandboxError(SANDBOX_PATH_INVALID, f"{path!r} is not a regular file")
        if st.st_size > max_bytes:
            raise SandboxError(SANDBOX_FILE_TOO_LARGE, f"{path!r} is larger than {max_bytes} bytes")
        fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise SandboxError(SANDBOX_FILE_TOO_LARGE, f"{path!r} is larger than {max_bytes} bytes")
        return data

    def list_files(self, path: str) -> list[FileInfo]:
        host, st = self._lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            return [
                FileInfo(
                    path=path,
                    name=os.path.basename(path),
                    size=st.st_size,
                    is_dir=False,
                    modified=st.st_mtime,
                )
            ]
        out = []
        for entry in sorted(os.scandir(host), key=lambda e: e.name):
            if host == self.root and entry.name == ".tmp":
                continue
            s = entry.stat(follow_symlinks=False)
            out.append(
                FileInfo(
                    path=self._sandbox_path(entry.path),
                    name=entry.name,
                    size=s.st_size,
                    is_dir=stat.S_ISDIR(s.st_mode),
                    modified=s.st_mtime,
                )
            )
        return out

    # --- life cycle ----------------------------------------------------------------------

    def alive(self) -> bool:
        return not self._destroyed and os.path.isdir(self.root)

    def destroy(self) -> None:
        if self._destroyed:
            return
        self._destroyed = True
        for pid in list(self._procs):
            _killpg(pid)
        self._kill_session_processes()
        shutil.rmtree(self.root, ignore_errors=True)
        if self.data_root:
            shutil.rmtree(self.data_root, ignore_errors=True)
        if self.uid is not None:
            _TAKEN_UIDS.discard(self.uid)

    def inspect(self) -> dict[str, Any]:
        return {"root": self.root, "isolated": False}


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _user_process_count(uid: int | None = None) -> int:
    uid = os.getuid() if uid is None else uid
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def _uid_has_processes(uid: int) -> bool:
    return _user_process_count(uid) > 0


def _free_uid() -> int:
    """An unused uid from the session range (no process runs as it, no other session took it)."""
    for _ in range(64):
        uid = SESSION_UID_BASE + secrets.randbelow(SESSION_UID_SPAN)
        if uid not in _TAKEN_UIDS and not _uid_has_processes(uid):
            _TAKEN_UIDS.add(uid)
            return uid
    raise SandboxError(SANDBOX_EXEC_FAILED, "no free uid for a local sandbox session")


_TAKEN_UIDS: set[int] = set()


def own_uid_possible() -> bool:
    """Whether sessions can run as a uid of their own: assay is root and its Python is usable by anyone."""
    if os.getuid() != 0:
        return False
    return all(
        _world_usable(p) for p in (os.path.realpath(sys.executable), sys.base_prefix, sys.prefix)
    )


def _world_usable(path: str) -> bool:
    """Every directory on the way is searchable by others, and the path itself readable by them."""
    try:
        here = os.path.realpath(path)
        if not os.stat(here).st_mode & stat.S_IROTH:
            return False
        while True:
            parent = os.path.dirname(here)
            if parent == here:
                return True
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
            here = parent
    except OSError:
        return False


def _kill_carrying(tag: bytes) -> None:
    """SIGKILL every process whose environment carries ``tag`` (a call's leftovers), until none is left."""
    me = os.getpid()
    for _ in range(5):
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if tag in fh.read():
                        found.append(int(entry))
            except OSError:
                continue
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)
