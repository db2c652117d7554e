"""The podman runtime starts its own API service when no socket is given, and that
service exits by itself once idle (nothing outlives its users for long)."""

from __future__ import annotations

import os
import time

import pytest

from tests.conftest import require
from tests.sandbox.conftest import podman_ready

pytestmark = pytest.mark.podman


def test_starts_its_own_service_and_the_service_exits_when_idle(tmp_path, monkeypatch):
    ok, what = podman_ready()
    require(ok, what)
    import assay.sandbox_runtimes.podman as podman_rt
    from assay.kernel.sandbox import SandboxConfig

    sock = tmp_path / "svc" / "podman.sock"
    monkeypatch.setattr(podman_rt, "_own_socket_path", lambda: sock)
    monkeypatch.setattr(podman_rt, "SYSTEM_SOCKET", str(tmp_path / "no-system.sock"))
    monkeypatch.setattr(podman_rt, "PODMAN_SERVICE_IDLE_S", 2)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    runtime = podman_rt.PodmanRuntime(SandboxConfig.from_env(runtime="podman"))
    probe = runtime.probe()
    assert probe.available and probe.endpoint == f"unix://{sock}" and probe.version
    runtime.close()
    # It runs with the short exec exit delay (conmon leftovers, issue 13 item 12).
    import tomllib

    from assay.sandbox_runtimes.podman_conf import EXEC_EXIT_DELAY_S

    conf = sock.parent / "containers.conf"
    assert tomllib.loads(conf.read_text())["engine"]["exit_command_delay"] == EXEC_EXIT_DELAY_S
    service_env = [open(f"/proc/{pid}/environ", "rb").read() for pid in _pids_with(str(sock))]
    assert service_env and all(f"CONTAINERS_CONF={conf}".encode() in env.split(b"\0") for env in service_env)
    # Poll rarely: each ping is activity that restarts the service's idle clock.
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        time.sleep(5)
        if not podman_rt._pings(str(sock), 0.5):
            break
    assert not podman_rt._pings(str(sock), 0.5), "the self-started podman service did not exit when idle"


def _pids_with(text: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                found.append(pid)
        except OSError:
            continue
    return found
