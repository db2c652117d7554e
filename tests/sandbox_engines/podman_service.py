"""A private ``podman system service`` for tests and benchmarks.

The docker runtime is tested against podman's Docker-compatible API, so a
test session starts its own API service on a socket in a temporary
directory and stops it, by the PID it started, when the session ends.
Nothing else on the machine is touched.
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def socket_answers(path: str, timeout: float = 2.0) -> bool:
    """Whether the Docker-compatible API on ``path`` answers ``GET /_ping`` with OK."""
    conn = _UnixHTTPConnection(path, timeout)
    try:
        conn.request("GET", "/_ping")
        resp = conn.getresponse()
        return resp.status == 200 and resp.read().strip() == b"OK"
    except OSError:
        return False
    finally:
        conn.close()


def podman_usable() -> bool:
    """podman is installed and answers ``podman version`` (a real call, not ``which``)."""
    if not shutil.which("podman"):
        return False
    try:
        done = subprocess.run(
            ["podman", "version", "--format", "{{.Client.Version}}"],
            capture_output=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def image_present(image: str) -> bool:
    try:
        done = subprocess.run(["podman", "image", "exists", image], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@contextmanager
def podman_service(start_timeout: float = 30.0) -> Iterator[str]:
    """Start ``podman system service --time=0`` on a fresh socket; yield the socket path.

    The service is stopped with SIGTERM (then SIGKILL) by its own PID and the
    directory removed, even when the body raises.
    """
    from assay.sandbox_runtimes.podman_conf import service_environment

    tmp = tempfile.mkdtemp(prefix="assay-podman-")
    path = os.path.join(tmp, "podman.sock")
    log = open(os.path.join(tmp, "service.log"), "wb")
    proc = subprocess.Popen(
        ["podman", "system", "service", "--time=0", f"unix://{path}"],
        # As the runtime starts its own service: a short exec exit delay (conmon leftovers).
        env={**os.environ, **service_environment(tmp)},
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a Ctrl-C in the test run reaches us, not the service first
        cwd=tmp,  # conmon writes an empty "oom" marker into its working directory
    )
    try:
        deadline = time.monotonic() + start_timeout
        while not (os.path.exists(path) and socket_answers(path)):
            if proc.poll() is not None:
                log.flush()
                with open(os.path.join(tmp, "service.log"), "rb") as fh:
                    tail = fh.read()[-2000:].decode(errors="replace")
                raise RuntimeError(f"podman system service exited with {proc.returncode}: {tail}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"podman system service did not answer on {path} in {start_timeout}s"
                )
            time.sleep(0.05)
        yield path
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
