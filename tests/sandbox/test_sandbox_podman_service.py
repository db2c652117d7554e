"""The podman services assay starts: in a private, verified directory (issue 31 item 15), replaced when
podman's configuration changed since they started (item 16), and gone by themselves once idle."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import require
from tests.sandbox.conftest import podman_ready, sandbox_image

pytestmark = pytest.mark.podman


@pytest.fixture
def private_tmp(monkeypatch):
    """A temp dir of the test's own (short: socket paths are limited to 108 bytes) as TMPDIR, no
    XDG_RUNTIME_DIR, no system socket: the runtime starts services of its own there, stopped afterwards."""
    ok, what = podman_ready()
    require(ok, what)
    import assay.sandbox_runtimes.podman as podman_rt
    from assay.sandbox_runtimes import podman_service

    base = Path(tempfile.mkdtemp(prefix="ap", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    monkeypatch.setenv("TMPDIR", str(base))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(podman_rt, "SYSTEM_SOCKET", str(base / "no-system.sock"))
    yield base
    for sock in base.rglob("*.sock"):
        podman_service.stop_service(sock)
    shutil.rmtree(base, ignore_errors=True)


def _runtime(**overrides):
    from assay.plugins.sandbox import SandboxConfig
    from assay.sandbox_runtimes.podman import PodmanRuntime

    return PodmanRuntime(
        SandboxConfig.from_env(runtime="podman", image_python=sandbox_image(), **overrides)
    )


def test_starts_its_own_service_and_the_service_exits_when_idle(private_tmp, monkeypatch):
    import assay.sandbox_runtimes.podman as podman_rt
    from assay.sandbox_runtimes import podman_service

    monkeypatch.setattr(podman_service, "SERVICE_IDLE_S", 2)
    runtime = _runtime()
    probe = runtime.probe()
    sock = private_tmp / f"assay-podman-{os.getuid()}" / "podman.sock"
    assert probe.available and probe.endpoint == f"unix://{sock}" and probe.version
    runtime.close()
    # It runs with the short exec exit delay (conmon leftovers, issue 13 item 12).
    import tomllib

    from assay.sandbox_runtimes.podman_conf import EXEC_EXIT_DELAY_S

    conf = sock.parent / "podman.containers.conf"
    assert tomllib.loads(conf.read_text())["engine"]["exit_command_delay"] == EXEC_EXIT_DELAY_S
    service_env = [open(f"/proc/{pid}/environ", "rb").read() for pid in _pids_with(str(sock))]
    assert service_env and all(
        f"CONTAINERS_CONF={conf}".encode() in env.split(b"\0") for env in service_env
    )
    # Poll rarely: each ping is activity that restarts the service's idle clock.
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        time.sleep(5)
        if not podman_rt._pings(str(sock), 0.5):
            break
    assert not podman_rt._pings(str(sock), 0.5), (
        "the self-started podman service did not exit when idle"
    )


# --- item 15: the directory is private and verified ---------------------------------------------------


def test_service_directory_is_made_private(private_tmp):
    runtime = _runtime()
    try:
        assert runtime.probe().available
    finally:
        runtime.close()
    st = os.lstat(private_tmp / f"assay-podman-{os.getuid()}")
    assert st.st_uid == os.getuid() and st.st_mode & 0o777 == 0o700


def _world_writable(path: Path) -> None:
    path.mkdir()
    path.chmod(0o777)


def _someone_elses(path: Path) -> None:
    path.mkdir(mode=0o700)
    os.chown(path, 12345, 12345)


def _symlink(path: Path) -> None:
    target = path.with_name("elsewhere")
    target.mkdir(mode=0o700)
    path.symlink_to(target)


@pytest.mark.parametrize(
    "plant",
    [_world_writable, _someone_elses, _symlink],
    ids=["world-writable", "another-owner", "symlink"],
)
def test_a_planted_service_directory_is_refused(private_tmp, plant):
    """Another local user who makes the predictable directory first must not get assay's socket there."""
    if plant is _someone_elses:
        require(os.getuid() == 0, "root (to make a directory owned by another uid)")
    from assay.plugins.sandbox import SandboxConfig, SandboxError, SandboxManager
    from assay.sandbox_runtimes.podman import PodmanRuntime

    plant(private_tmp / f"assay-podman-{os.getuid()}")
    manager = SandboxManager(
        SandboxConfig.from_env(runtime="podman", image_python=sandbox_image()),
        {"podman": PodmanRuntime},
    )
    try:
        with pytest.raises(SandboxError) as caught:
            manager.open_session()
        assert caught.value.code == "SANDBOX_RUNTIME_DIR_UNSAFE"
        assert not list(private_tmp.rglob("*.sock")), (
            "a service was started in the planted directory"
        )
    finally:
        manager.close()


def test_service_lives_under_xdg_runtime_dir_when_set(private_tmp, monkeypatch):
    xdg = private_tmp / "xdg"
    xdg.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    runtime = _runtime()
    try:
        probe = runtime.probe()
    finally:
        runtime.close()
    assert probe.available and probe.endpoint == f"unix://{xdg}/assay-podman/podman.sock"
    assert not (private_tmp / f"assay-podman-{os.getuid()}").exists()


# --- item 16: a service is replaced when the configuration changed ------------------------------------


@pytest.fixture
def test_conf(private_tmp, monkeypatch):
    """A containers.conf of the test's own (the system's, which this machine needs), named by CONTAINERS_CONF."""
    path = private_tmp / "containers.conf"
    path.write_text(Path("/etc/containers/containers.conf").read_text())
    monkeypatch.setenv("CONTAINERS_CONF", str(path))
    return path


def test_service_is_replaced_when_a_runtime_is_registered_after_it_started(private_tmp, test_conf):
    """The issue's case: a runtime registered in containers.conf after the services started was unknown
    to them for as long as they lived; the sandbox was refused with a misleading seccomp message."""
    from assay.plugins.sandbox import SandboxConfig, SandboxManager

    runtime = _runtime(oci_runtime="assaytestrunc")
    manager = SandboxManager(
        SandboxConfig.from_env(
            runtime="podman", image_python=sandbox_image(), oci_runtime="assaytestrunc"
        ),
        runtime=runtime,
    )
    try:
        assert runtime.probe().available  # the main service starts, without the runtime
        _register(test_conf, "assaytestrunc", "/usr/bin/runc")
        with manager.open_session() as session:
            result = session.run_code("print(6 * 7)")
            assert result.exit_code == 0 and result.stdout.strip() == "42"
            assert manager.inspect(session.id).get("OCIRuntime") == "assaytestrunc"
    finally:
        manager.close()


def test_an_unregistered_oci_runtime_is_named_as_such(private_tmp, test_conf):
    from assay.plugins.sandbox import SandboxConfig, SandboxError, SandboxManager

    runtime = _runtime(oci_runtime="assaynosuchrt")
    manager = SandboxManager(
        SandboxConfig.from_env(
            runtime="podman", image_python=sandbox_image(), oci_runtime="assaynosuchrt"
        ),
        runtime=runtime,
    )
    try:
        with pytest.raises(SandboxError) as caught:
            manager.open_session()
        assert caught.value.code == "SANDBOX_START_FAILED"
        assert (
            "the OCI runtime 'assaynosuchrt' is not registered with podman" in caught.value.message
        )
    finally:
        manager.close()


def test_service_is_kept_while_the_configuration_is_unchanged(private_tmp, test_conf):
    from assay.sandbox_runtimes import podman_service

    first = _runtime()
    try:
        assert first.probe().available
        sock = private_tmp / f"assay-podman-{os.getuid()}" / "podman.sock"
        pids = podman_service.service_pids(sock)
        second = _runtime()
        assert second.probe().available
        second.close()
        assert pids and podman_service.service_pids(sock) == pids
    finally:
        first.close()


def _register(conf: Path, name: str, binary: str) -> None:
    text = conf.read_text()
    entry = f'{name} = ["{binary}"]'
    if "[engine.runtimes]" in text:
        conf.write_text(text.replace("[engine.runtimes]", "[engine.runtimes]\n" + entry, 1))
    else:
        conf.write_text(text + "\n[engine.runtimes]\n" + entry + "\n")


def _pids_with(text: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                found.append(pid)
        except OSError:
            continue
    return found
