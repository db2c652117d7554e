"""A private Docker Engine (``dockerd``) for tests and benchmarks.

The docker runtime is tested against a real Docker Engine as well as
podman's Docker-compatible API. A test session starts its own ``dockerd``
on a socket in a temporary directory, with its own data and exec roots
(never the system's daemon or socket), registers gVisor (``runsc``, with the
runtime flags it needs here) when it is installed, loads the sandbox image
from podman (``podman save | docker load``: no registry), and stops the
daemon by the PID it started when the session ends.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tests.sandbox_engines.podman_service import socket_answers

# Flags runsc needs under an engine here: the engine's "none" network still fails
# runsc's root-network-namespace check, and without --oci-seccomp runsc ignores the
# container's seccomp profile (the same flags as scripts/setup-system.sh's wrapper for podman).
RUNSC_ARGS = ["--network=none", "--oci-seccomp"]


def dockerd_binary() -> str | None:
    return shutil.which("dockerd") or (shutil.which("dockerd", path="/usr/sbin:/usr/local/sbin"))


def docker_cli() -> str | None:
    """A docker client for ``load`` (docker.io's own first; any client speaks to 20.10)."""
    return shutil.which("docker", path="/usr/bin") or shutil.which("docker")


def runsc_binary() -> str | None:
    return shutil.which("runsc")


@contextmanager
def docker_daemon(image: str | None = None, start_timeout: float = 60.0) -> Iterator[str]:
    """Start a private ``dockerd``; load ``image`` into it from podman; yield the socket path.

    Stopped with SIGTERM (then SIGKILL) by its own PID, its directory removed,
    even when the body raises.
    """
    binary = dockerd_binary()
    if binary is None:
        raise RuntimeError("dockerd is not installed (apt-get install docker.io)")
    tmp = tempfile.mkdtemp(prefix="assay-dockerd-")
    sock = os.path.join(tmp, "docker.sock")
    config: dict[str, object] = {}
    if runsc_binary():
        config["runtimes"] = {"runsc": {"path": runsc_binary(), "runtimeArgs": RUNSC_ARGS}}
    with open(os.path.join(tmp, "daemon.json"), "w") as fh:
        json.dump(config, fh)
    log = open(os.path.join(tmp, "dockerd.log"), "wb")
    proc = subprocess.Popen(
        [
            binary,
            "--host",
            f"unix://{sock}",
            "--data-root",
            os.path.join(tmp, "data"),
            "--exec-root",
            os.path.join(tmp, "exec"),
            "--pidfile",
            os.path.join(tmp, "dockerd.pid"),
            "--config-file",
            os.path.join(tmp, "daemon.json"),
            # Sandboxes have no network: no bridge, no iptables rules on the host.
            "--bridge=none",
            "--iptables=false",
            "--ip-masq=false",
            "--exec-opt",
            "native.cgroupdriver=cgroupfs",
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a Ctrl-C in the test run reaches us, not the daemon first
    )
    try:
        deadline = time.monotonic() + start_timeout
        while not (os.path.exists(sock) and socket_answers(sock)):
            if proc.poll() is not None:
                log.flush()
                raise RuntimeError(f"dockerd exited with {proc.returncode}: {_tail(tmp)}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"dockerd did not answer on {sock} in {start_timeout}s: {_tail(tmp)}"
                )
            time.sleep(0.1)
        if image:
            load_image(sock, image)
        yield sock
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        log.close()
        _unmount_under(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def load_image(sock: str, image: str, timeout: float = 600) -> None:
    """``podman save IMAGE | docker load`` into the daemon on ``sock``."""
    cli = docker_cli()
    if cli is None:
        raise RuntimeError("no docker client to load the image with")
    save = subprocess.Popen(
        ["podman", "save", image], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        done = subprocess.run(
            [cli, "-H", f"unix://{sock}", "load", "--quiet"],
            stdin=save.stdout,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        assert save.stdout is not None
        save.stdout.close()
        save_err = save.stderr.read().decode(errors="replace") if save.stderr else ""
        save.wait(timeout=60)
    if save.returncode != 0 or done.returncode != 0:
        raise RuntimeError(
            f"loading {image} into dockerd failed: {save_err[-500:]} {done.stderr[-500:]}"
        )


def _tail(tmp: str) -> str:
    try:
        with open(os.path.join(tmp, "dockerd.log"), "rb") as fh:
            return fh.read()[-2000:].decode(errors="replace")
    except OSError:
        return ""


def _unmount_under(root: str) -> None:
    """Unmount whatever the daemon left mounted under ``root`` (deepest first), so it can be removed."""
    try:
        with open("/proc/self/mountinfo") as fh:
            points = [line.split()[4] for line in fh]
    except OSError:
        return
    for point in sorted((p for p in points if p.startswith(root + "/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)
