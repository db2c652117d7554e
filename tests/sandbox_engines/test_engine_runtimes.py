"""The docker and nerdctl runtimes against real engines: probes, fail-closed
selection, images, files, labels, reaping and the gVisor opt-in.

docker talks to podman's Docker-compatible socket; nerdctl drives podman's
CLI (``SANDBOX_NERDCTL_BINARY=podman``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from assay.kernel.sandbox import SandboxError, SandboxManager, build_spec
from assay.kernel.sandbox.errors import (
    SANDBOX_IMAGE_MISSING,
    SANDBOX_PATH_INVALID,
    SANDBOX_RUNTIME_UNAVAILABLE,
    SANDBOX_START_FAILED,
)
from assay.kernel.sandbox.labels import EXPIRES, OWNER_PID, OWNER_START, owner_labels
from tests.conftest import require
from tests.sandbox_engines.engines import config_for, manager_for, runtime_class

MINE = ("docker", "nerdctl")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _socket_for(runtime, request):
    return request.getfixturevalue("podman_api_socket") if runtime == "docker" else None


def _labelled_containers() -> set[str]:
    done = subprocess.run(["podman", "ps", "-a", "-q", "--no-trunc", "--filter", "label=assay.sandbox=1"],
                          capture_output=True, text=True, timeout=60)
    return set(done.stdout.split())


def _exists(container_id: str) -> bool:
    return subprocess.run(["podman", "container", "exists", container_id], capture_output=True).returncode == 0


@pytest.mark.parametrize("runtime", MINE)
def test_probe_asks_the_engine_and_doctor_adds_runtime_details(runtime, request, sandbox_image):
    rt = runtime_class(runtime)(config_for(runtime, _socket_for(runtime, request)))
    try:
        probe = rt.probe()
        doctor = rt.doctor()
        limits = rt.enforced_limits()
    finally:
        rt.close()
    assert probe.available, probe.detail
    assert probe.version and probe.version[0].isdigit()
    assert doctor.available and doctor.version == probe.version
    assert doctor.cgroup_version in ("1", "2")
    assert doctor.oci_runtime == "runc"
    assert limits["seccomp (assay profile)"] is True


def test_docker_probe_fails_with_the_endpoint_when_nothing_listens(tmp_path):
    rt = runtime_class("docker")(config_for("docker", str(tmp_path / "nothing.sock"), probe_timeout=2))
    probe = rt.probe()
    assert not probe.available
    assert str(tmp_path / "nothing.sock") in probe.detail


@pytest.mark.parametrize("binary", ["/nonexistent/nerdctl", "false"])
def test_nerdctl_probe_fails_when_the_cli_is_missing_or_does_not_answer(binary):
    rt = runtime_class("nerdctl")(config_for("nerdctl", None, nerdctl_binary=binary, probe_timeout=5))
    probe = rt.probe()
    assert not probe.available
    assert binary in probe.detail


@pytest.mark.parametrize(
    "runtime,overrides",
    [("docker", {"docker_host": "unix:///nonexistent/docker.sock"}), ("nerdctl", {"nerdctl_binary": "false"})],
)
def test_named_runtime_that_does_not_answer_fails_closed_without_fallback(runtime, overrides):
    # Even with the local runtime allowed, a named runtime never falls back.
    config = config_for(runtime, None, allow_local_runtime=True, probe_timeout=2, **overrides)
    manager = SandboxManager(config, {runtime: runtime_class(runtime), "local": runtime_class("local")})
    with pytest.raises(SandboxError) as info:
        manager.open_session()
    assert info.value.code == SANDBOX_RUNTIME_UNAVAILABLE
    assert runtime in str(info.value)
    manager.close()


def test_docker_runtime_uses_DOCKER_HOST_when_its_own_setting_is_unset(podman_api_socket, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{podman_api_socket}")
    rt = runtime_class("docker")(config_for("docker", None, docker_host=None))
    try:
        probe = rt.probe()
    finally:
        rt.close()
    assert probe.available, probe.detail
    assert probe.endpoint == f"unix://{podman_api_socket}"


@pytest.mark.parametrize("runtime", MINE)
def test_missing_image_is_reported_and_leaves_no_container(runtime, request, sandbox_image):
    before = _labelled_containers()
    manager = manager_for(runtime, _socket_for(runtime, request),
                          image_python=f"localhost/assay-no-such-image:{uuid.uuid4().hex[:8]}")
    try:
        with pytest.raises(SandboxError) as info:
            manager.open_session()
        assert info.value.code == SANDBOX_IMAGE_MISSING
        assert "build-image" in (info.value.hint or "")
    finally:
        manager.close()
    assert _labelled_containers() - before == set()


@pytest.mark.parametrize("runtime", MINE)
def test_gvisor_opt_in_reaches_the_engine_and_is_not_silently_dropped(runtime, request, sandbox_image):
    # runsc is not installed on this machine: the engine must refuse, not run without it.
    require(subprocess.run(["sh", "-c", "command -v runsc"], capture_output=True).returncode != 0,
            "a machine without runsc (with runsc this would start a gVisor sandbox)")
    socket_path = _socket_for(runtime, request)
    config = config_for(runtime, socket_path, oci_runtime="runsc")
    rt = runtime_class(runtime)(config)
    spec = build_spec(config, language="python", name=f"assay-runsc-{uuid.uuid4().hex[:8]}",
                      labels=owner_labels("sbx_runsc", runtime, 60))
    if runtime == "docker":
        assert rt.host_config_kwargs(spec)["runtime"] == "runsc"
    else:
        args = rt.run_args(spec)
        assert args[args.index("--runtime") + 1] == "runsc"
    before = _labelled_containers()
    try:
        with pytest.raises(SandboxError) as info:
            rt.create_session(spec)
        assert info.value.code == SANDBOX_START_FAILED
        assert "runsc" in str(info.value)
    finally:
        rt.close()
    assert _labelled_containers() - before == set()


def test_docker_refuses_a_container_the_engine_did_not_create_as_specified(request, sandbox_image, monkeypatch):
    # What an engine that drops a setting looks like: the container comes up without it.
    socket_path = _socket_for("docker", request)
    config = config_for("docker", socket_path)
    rt = runtime_class("docker")(config)
    real = rt.host_config_kwargs

    def weaker(spec):
        kwargs = real(spec)
        kwargs.update(read_only=False, pids_limit=None)
        return kwargs

    monkeypatch.setattr(rt, "host_config_kwargs", weaker)
    spec = build_spec(config, language="python", name=f"assay-weak-{uuid.uuid4().hex[:8]}",
                      labels=owner_labels("sbx_weak", "docker", 60))
    before = _labelled_containers()
    try:
        with pytest.raises(SandboxError) as info:
            rt.create_session(spec)
        assert info.value.code == SANDBOX_START_FAILED
        assert "root filesystem is writable" in info.value.message and "pids limit" in info.value.message
    finally:
        rt.close()
    assert _labelled_containers() - before == set()


@pytest.mark.parametrize("runtime", MINE)
def test_files_go_in_with_their_owners_and_come_out_only_from_the_workspace(runtime, engine_managers):
    session = engine_managers(runtime).open_session()
    try:
        session.put_file("data/in.csv", b"a,b\n1,2\n")
        session.put_file("frozen.txt", b"do not touch", read_only=True)
        result = session.run_code(textwrap.dedent("""
            import os
            print(open('data/in.csv').read().splitlines()[1])
            open('data/in.csv', 'a').write('3,4\\n')
            try:
                open('frozen.txt', 'a').write('changed')
                print('frozen written')
            except PermissionError:
                print('frozen refused')
            open('out.txt', 'w').write('made inside')
            os.symlink('/etc/passwd', 'link')
        """))
        assert result.exit_code == 0, result.stderr
        assert result.stdout.splitlines() == ["1,2", "frozen refused"]
        assert session.get_file("data/in.csv") == b"a,b\n1,2\n3,4\n"
        assert session.get_file("out.txt") == b"made inside"
        assert "/workspace/out.txt" in [f.path for f in result.files]
        names = {f.name for f in session.list_files()}
        assert {"data", "frozen.txt", "out.txt", "link"} <= names
        for bad in ("link", "../etc/passwd", "/etc/passwd"):
            with pytest.raises(SandboxError) as info:
                session.get_file(bad)
            assert info.value.code in (SANDBOX_PATH_INVALID, "SANDBOX_FILE_NOT_FOUND"), bad
    finally:
        session.close()


@pytest.mark.parametrize("runtime", MINE)
def test_reaper_removes_containers_of_dead_owners_and_expired_ones_only(runtime, request, sandbox_image):
    config = config_for(runtime, _socket_for(runtime, request))
    rt = runtime_class(runtime)(config)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    made = {}
    try:
        for kind in ("dead-owner", "expired", "alive"):
            labels = owner_labels(f"sbx_reap_{kind}", runtime, 600)
            if kind == "dead-owner":
                labels[OWNER_PID], labels[OWNER_START] = str(dead.pid), "1"
            elif kind == "expired":
                labels[EXPIRES] = f"{time.time() - 1:.3f}"
            spec = build_spec(config, language="python", name=f"assay-reap-{kind}-{uuid.uuid4().hex[:8]}",
                              labels=labels)
            made[kind] = rt.create_session(spec)
        removed = set(rt.reap())
        # Other processes' reapers may get to an orphan first; either way it is gone.
        assert not _exists(made["dead-owner"].id)
        assert not _exists(made["expired"].id)
        assert made["alive"].id not in removed and _exists(made["alive"].id)
    finally:
        for session in made.values():
            session.destroy()
        rt.close()


def test_exit_clean_up_of_one_runtime_leaves_the_other_runtimes_containers(engine_managers):
    docker_session = engine_managers("docker").open_session()
    nerdctl_session = engine_managers("nerdctl").open_session()
    try:
        removed = engine_managers("nerdctl").runtime.reap(only_mine=True)
        assert docker_session.status().container not in removed
        assert docker_session.run_code("print('untouched')").stdout == "untouched\n"
        assert nerdctl_session.status().container in removed
    finally:
        docker_session.close()
        nerdctl_session.close()


HOLDER = """
import sys, time
sys.path.insert(0, {repo!r})
from tests.sandbox_engines.engines import manager_for
manager = manager_for({runtime!r}, {socket!r})
session = manager.open_session()
print(session.status().container, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("runtime", MINE)
def test_sigkilled_owner_leaves_no_orphan_after_the_next_start(runtime, request, sandbox_image):
    socket_path = _socket_for(runtime, request)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(repo=REPO, runtime=runtime, socket=socket_path)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        container = holder.stdout.readline().strip()
        assert container and _exists(container)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert _exists(container)  # SIGKILL gave it no chance to clean up
    manager = manager_for(runtime, socket_path)
    try:
        manager.runtime  # start-up: select the runtime and reap orphans
        assert not _exists(container)
    finally:
        manager.close()


def test_nerdctl_runs_argv_lists_without_a_shell_and_code_stays_literal(engine_managers, monkeypatch, tmp_path):
    seen = []
    real_popen = subprocess.Popen

    class Recorder(real_popen):  # type: ignore[misc, valid-type]
        def __init__(self, args, *a, **kw):
            seen.append((args, kw.get("shell", False)))
            super().__init__(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", Recorder)
    trap = tmp_path / "pwned"
    session = engine_managers("nerdctl").open_session()
    try:
        code = f"print('$(touch {trap}); `touch {trap}`; echo \"x\" > {trap}')"
        result = session.run_code(code)
    finally:
        session.close()
    assert result.stdout.startswith("$(touch ")
    assert not trap.exists()
    assert seen and all(isinstance(args, list) and shell is False for args, shell in seen)


def test_nerdctl_namespace_flag_only_when_configured():
    cls = runtime_class("nerdctl")
    plain = cls(config_for("nerdctl", None))
    assert "--namespace" not in plain.cli.argv("ps")
    spaced = cls(config_for("nerdctl", None, nerdctl_namespace="assay"))
    assert spaced.cli.argv("ps")[:3] == [spaced.cli.binary, "--namespace", "assay"]


@pytest.mark.parametrize("module", ["assay.sandbox_runtimes.docker", "assay.sandbox_runtimes.nerdctl"])
def test_importing_the_runtime_plugin_does_not_import_the_engine_sdk(module):
    code = f"import sys, {module}; print(sorted(m for m in ('docker', 'podman', 'requests') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
