"""The ``podman system service`` processes assay starts for itself: where they live, when they are replaced.

Where. The services' sockets, lock, log and configuration live in one
directory: ``$XDG_RUNTIME_DIR/assay-podman`` when ``XDG_RUNTIME_DIR`` is set,
else ``$TMPDIR/assay-podman-<uid>``. Either way the directory is made with
mode 0700 and then checked with ``lstat``: a real directory (not a symlink),
owned by this uid, with no group or other permission bits. Anything else is
refused (``SANDBOX_RUNTIME_DIR_UNSAFE``): under a shared temp directory the
name is predictable, and another local user who made it first (or a symlink
to a directory of theirs) would decide which socket assay talks to, and so
see and answer every sandbox request.

When. A service keeps the engine configuration it started with: a runtime
registered in ``containers.conf`` later (gVisor's ``runsc``) stays unknown to
it for as long as it lives. Each service's *fingerprint* - the podman
version and the bytes of every configuration file podman reads (see
:func:`assay.sandbox_runtimes.podman_conf.sources`), plus the service's own
settings - is recorded beside its socket when it starts. Before a service is
used again (each time a sandbox is created) the fingerprint is computed anew;
a service whose record differs, or has none, is stopped (SIGTERM, then
SIGKILL; found by its command line in ``/proc``) and started again on the
same socket. A call that is streaming through the old service at that
moment (in this process or another) fails once; containers are not touched
(``conmon`` keeps them).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from assay.kernel.log import get_logger
from assay.plugins.sandbox import SANDBOX_RUNTIME_DIR_UNSAFE, SANDBOX_START_FAILED, SandboxError

from . import podman_conf

log = get_logger("assay.sandbox.podman")

SERVICE_IDLE_S = 600
STOP_WAIT_S = 5.0
_VERSIONS: dict[
    tuple, str
] = {}  # podman binary (path, device, inode, size, mtime) -> its --version


def service_dir() -> Path:
    """The private directory of assay's own podman services (made and verified; see the module doc)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return private_dir(Path(xdg) / "assay-podman")
    return private_dir(Path(tempfile.gettempdir()) / f"assay-podman-{os.getuid()}")


def private_dir(path: Path) -> Path:
    """``path`` as a directory only this uid can use: made 0700 if missing, refused when it is not that."""
    try:
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)  # whatever the umask was
    except FileExistsError:
        pass
    except OSError as exc:
        raise _unsafe(path, f"it cannot be created ({exc.strerror})") from None
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise _unsafe(path, "it is a symbolic link")
    if not stat.S_ISDIR(st.st_mode):
        raise _unsafe(path, "it is not a directory")
    if st.st_uid != os.getuid():
        raise _unsafe(
            path, f"it is owned by uid {st.st_uid}, not by this process's uid {os.getuid()}"
        )
    if st.st_mode & 0o077:
        raise _unsafe(path, f"its mode is {stat.S_IMODE(st.st_mode):04o}, not 0700")
    return path


def _unsafe(path: Path, why: str) -> SandboxError:
    return SandboxError(
        SANDBOX_RUNTIME_DIR_UNSAFE,
        f"the directory for assay's podman service, {path}, is not safe to use: {why}",
        "Another user may have made it to intercept sandbox requests: check and remove it, or set "
        "XDG_RUNTIME_DIR to this user's private runtime directory, or point SANDBOX_PODMAN_SOCKET at a "
        "podman socket you trust.",
    )


def main_socket() -> Path:
    return service_dir() / "podman.sock"


def runtime_socket(oci_runtime: str) -> Path:
    """The socket of the service whose default OCI runtime is ``oci_runtime`` (beside the first)."""
    return service_dir() / f"podman-{oci_runtime}.sock"


def podman_version(binary: str) -> str:
    """``podman --version`` of ``binary`` (asked again whenever the file itself changes)."""
    st = os.stat(binary)
    key = (binary, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _VERSIONS:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
        _VERSIONS[key] = done.stdout.strip() or f"unknown (exit {done.returncode})"
    return _VERSIONS[key]


def fingerprint(binary: str, oci_runtime: str | None) -> str:
    """The podman version, every configuration file's bytes, and this service's own settings, hashed."""
    digest = hashlib.sha256()
    parts = [
        podman_version(binary),
        f"runtime={oci_runtime or ''}",
        f"idle={SERVICE_IDLE_S}",
        f"exit_delay={podman_conf.EXEC_EXIT_DELAY_S}",
    ]
    for path in podman_conf.sources():
        try:
            parts.append(f"{path}:{hashlib.sha256(Path(path).read_bytes()).hexdigest()}")
        except FileNotFoundError:
            parts.append(f"{path}:missing")
        except OSError as exc:
            parts.append(f"{path}:unreadable {exc.errno}")
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def _record_path(sock: Path) -> Path:
    return sock.with_name(sock.name + ".json")


def recorded_fingerprint(sock: Path) -> str | None:
    try:
        return json.loads(_record_path(sock).read_text()).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        return None


def is_current(sock: Path, oci_runtime: str | None) -> bool:
    """Whether the service on ``sock`` was started with the configuration podman has now."""
    binary = shutil.which("podman")
    return binary is not None and recorded_fingerprint(sock) == fingerprint(binary, oci_runtime)


def ensure_service(sock: Path, oci_runtime: str | None, ready_timeout_s: float) -> Path:
    """A service answering on ``sock`` that runs with today's configuration (started or replaced here)."""
    with open(sock.parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        binary = shutil.which("podman")
        if binary is None:
            raise RuntimeError(
                "the podman binary is not on PATH and SANDBOX_PODMAN_SOCKET is not set"
            )
        current = fingerprint(binary, oci_runtime)
        if pings(str(sock), 1.0):
            if recorded_fingerprint(sock) == current:
                return sock
            log.info(
                "podman_service_replaced",
                socket=str(sock),
                reason="the podman version or containers.conf changed since it started",
            )
            stop_service(sock)
        sock.unlink(missing_ok=True)
        _record_path(sock).unlink(missing_ok=True)
        conf_name = sock.name.removesuffix(".sock") + ".containers.conf"
        env = {**os.environ, **podman_conf.service_environment(sock.parent, filename=conf_name)}
        if oci_runtime and not runtime_registered(binary, oci_runtime, env):
            raise SandboxError(
                SANDBOX_START_FAILED,
                f"the OCI runtime {oci_runtime!r} is not registered with podman",
                "Register it in containers.conf ([engine.runtimes]; for gVisor see docs/sandbox_engines.md), "
                "or unset SANDBOX_OCI_RUNTIME.",
            )
        with open(sock.parent / "service.log", "ab") as logf:
            subprocess.Popen(
                [
                    binary,
                    *(["--runtime", oci_runtime] if oci_runtime else []),
                    "system",
                    "service",
                    f"--time={SERVICE_IDLE_S}",
                    f"unix://{sock}",
                ],
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=logf,
                start_new_session=True,
                close_fds=True,
                env=env,
                # conmon drops marker files (an empty "oom" after an OOM kill) into its
                # working directory: keep them in the service's own directory.
                cwd=sock.parent,
            )
        deadline = time.monotonic() + ready_timeout_s
        while time.monotonic() < deadline:
            if pings(str(sock), 0.5):
                _record_path(sock).write_text(
                    json.dumps({"fingerprint": current, "started": time.time()})
                )
                log.info("podman_service_started", socket=str(sock))
                return sock
            time.sleep(0.03)
    raise RuntimeError(f"started `podman system service` on {sock} but it did not answer in time")


def runtime_registered(binary: str, oci_runtime: str, env: dict[str, str]) -> bool:
    """Whether podman, with the configuration ``env`` names, knows the OCI runtime ``oci_runtime``."""
    done = subprocess.run(
        [binary, "--runtime", oci_runtime, "info", "--format", "{{.Host.OCIRuntime.Name}}"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode == 0:
        return True
    return "OCI runtime" not in done.stderr or "not found" not in done.stderr


def stop_service(sock: Path) -> None:
    """Stop the ``podman system service`` of this uid listening on ``sock`` (found in /proc)."""
    pids = service_pids(sock)
    for sig, wait in ((signal.SIGTERM, STOP_WAIT_S), (signal.SIGKILL, STOP_WAIT_S)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + wait
        while time.monotonic() < end and any(_alive(pid) for pid in pids):
            time.sleep(0.05)
        pids = [pid for pid in pids if _alive(pid)]
        if not pids:
            return


def service_pids(sock: Path) -> list[int]:
    """Processes of this uid whose command line is ``podman ... system service ... unix://<sock>``."""
    target = f"unix://{sock}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != os.getuid():
                continue
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if target in argv and b"system" in argv and b"service" in argv:
            found.append(int(name))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return False


def pings(path: str, timeout: float) -> bool:
    if not os.path.exists(path):
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(b"GET /_ping HTTP/1.0\r\nHost: d\r\n\r\n")
            head = s.recv(64)
            return head.startswith(b"HTTP/1.") and b" 200" in head
    except OSError:
        return False
