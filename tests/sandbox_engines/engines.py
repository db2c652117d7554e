"""Building sandbox managers for each runtime the way tests and the bench use them.

Each runtime is pointed at what this machine really has: podman at a private
``podman system service`` socket; docker at a private Docker Engine
(``docker_daemon.py``) and, as ``docker@podman``, at podman's
Docker-compatible API on that socket; nerdctl at podman's CLI
(``SANDBOX_NERDCTL_BINARY``, ``ASSAY_TEST_NERDCTL_BINARY`` overrides); local
with the explicit allow flag. ``podman+gvisor`` and ``docker+gvisor`` are
podman and the Docker Engine with ``oci_runtime="runsc"``.

Tests are parametrized over these *targets*; :data:`TARGETS` says which
runtime, which endpoint and which settings each one is.
"""

from __future__ import annotations

import importlib
import os
import re
from typing import Any

from assay.plugins.sandbox import SandboxConfig, SandboxManager, SandboxRuntime

#: target -> (runtime plugin, endpoint: "podman" socket, "dockerd" socket or None, settings)
TARGETS: dict[str, tuple[str, str | None, dict[str, Any]]] = {
    "podman": ("podman", "podman", {}),
    "docker": ("docker", "dockerd", {}),
    "docker@podman": ("docker", "podman", {}),
    "nerdctl": ("nerdctl", None, {}),
    "local": ("local", None, {}),
    "podman+gvisor": ("podman", "podman", {"oci_runtime": "runsc"}),
    "docker+gvisor": ("docker", "dockerd", {"oci_runtime": "runsc"}),
}
CONTAINER_RUNTIMES = ("podman", "docker", "docker@podman", "nerdctl")
ALL_RUNTIMES = (*CONTAINER_RUNTIMES, "local")
GVISOR_TARGETS = ("podman+gvisor", "docker+gvisor")
#: The hardening checks and the escape suite run on these: every engine, runc and gVisor.
HARDENED_TARGETS = (*CONTAINER_RUNTIMES, *GVISOR_TARGETS)
#: Targets whose containers podman's CLI can see and steer (the others are on the private dockerd).
PODMAN_BACKED = ("podman", "docker@podman", "nerdctl", "podman+gvisor")
TEST_IMAGE = os.environ.get("ASSAY_TEST_SANDBOX_IMAGE", "localhost/assay-sandbox-python:bookworm")
NERDCTL_BINARY = os.environ.get("ASSAY_TEST_NERDCTL_BINARY", "podman")


def runtime_of(target: str) -> str:
    """The runtime plugin a test target uses (``docker+gvisor`` -> ``docker``)."""
    return TARGETS[target][0]


def endpoint_of(target: str) -> str | None:
    """Which private endpoint a target needs: ``"podman"``, ``"dockerd"`` or None."""
    return TARGETS[target][1]


def is_gvisor(target: str) -> bool:
    return TARGETS[target][2].get("oci_runtime") == "runsc"


def runtime_class(name: str) -> type[SandboxRuntime]:
    """The runtime plugin class ``name`` from ``assay.sandbox_runtimes.<name>``."""
    module = importlib.import_module(f"assay.sandbox_runtimes.{name}")
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, SandboxRuntime)
            and getattr(value, "name", None) == name
        ):
            return value
    raise LookupError(f"sandbox_runtimes.{name} defines no runtime named {name!r}")


def config_for(name: str, socket_path: str | None, **overrides: Any) -> SandboxConfig:
    """A config selecting runtime ``name`` against this machine's engines."""
    values: dict[str, Any] = dict(runtime=name, image_python=TEST_IMAGE, env_allow="")
    if name == "docker":
        values["docker_host"] = f"unix://{socket_path}"
    elif name == "podman":
        values["podman_socket"] = socket_path
    elif name == "nerdctl":
        values["nerdctl_binary"] = NERDCTL_BINARY
    elif name == "local":
        values["allow_local_runtime"] = True
    values.update(overrides)
    return SandboxConfig(**values)


class TrackingManager(SandboxManager):
    """A manager that remembers every session id it opened (for leak checks)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.opened: list[str] = []

    def connect(self, language: str = "python", **overrides: Any) -> str:
        session_id = super().connect(language, **overrides)
        self.opened.append(session_id)
        return session_id


def manager_for(name: str, socket_path: str | None, **overrides: Any) -> TrackingManager:
    return TrackingManager(config_for(name, socket_path, **overrides), {name: runtime_class(name)})


def host_pids_running(marker: str) -> list[int]:
    """PIDs on this host whose command line contains ``marker``.

    Container processes are visible in the host's /proc, so this proves a
    sandboxed process is gone rather than merely unawaited.
    """
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if marker.encode() in cmdline:
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    state = fh.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != b"Z":  # a zombie has no work left; its parent reaps it
                found.append(int(entry))
    return found


def tmpfs_size(options: str) -> int | None:
    match = re.search(r"(?:^|,)size=(\d+)([kmg]?)", options)
    if not match:
        return None
    return int(match.group(1)) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[match.group(2)]
