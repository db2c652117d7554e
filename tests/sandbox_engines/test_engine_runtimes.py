"""The docker and nerdctl runtimes against real engines: probes, fail-closed
selection, images, files, labels, reaping and the gVisor opt-in.

docker talks to a private Docker Engine (target ``docker``) and to podman's
Docker-compatible socket (``docker@podman``); nerdctl drives podman's CLI
(``SANDBOX_NERDCTL_BINARY=podman``).
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

from assay.kernel.sandbox.errors import (
    SANDBOX_IMAGE_MISSING,
    SANDBOX_PATH_INVALID,
    SANDBOX_RUNTIME_UNAVAILABLE,
    SANDBOX_START_FAILED,
)
from assay.plugins.sandbox import SandboxError, SandboxManager, build_spec
from assay.plugins.sandbox.labels import (
    EXPIRES,
    OWNER_PID,
    OWNER_START,
    owner_labels,
    process_start_time,
)
from tests.sandbox_engines.engines import (
    GVISOR_TARGETS,
    config_for,
    manager_for,
    runtime_class,
    runtime_of,
)

MINE = ("docker", "docker@podman", "nerdctl")  # test targets (engines.TARGETS)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _socket_for(target, request):
    return request.getfixturevalue("endpoint_socket")(target)


def _cli(target, request) -> list[str]:
    return request.getfixturevalue("engine_cli")(target)


def _labelled_containers(cli: list[str]) -> set[str]:
    """The sandbox containers this test process owns (not a parallel worker's, nor another suite's)."""
    done = subprocess.run(
        [
            *cli,
            "ps",
            "-a",
            "-q",
            "--no-trunc",
            "--filter",
            "label=assay.sandbox=1",
            "--filter",
            f"label=assay.sandbox.owner-pid={os.getpid()}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def _exists(cli: list[str], container_id: str) -> bool:
    return (
        subprocess.run([*cli, "container", "inspect", container_id], capture_output=True).returncode
        == 0
    )


@pytest.mark.parametrize("target", MINE)
def test_probe_asks_the_engine_and_doctor_adds_runtime_details(target, request, sandbox_image):
    runtime = runtime_of(target)
    rt = runtime_class(runtime)(config_for(runtime, _socket_for(target, request)))
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
    if target == "docker":  # the real engine, not podman's compatible API
        assert probe.info["engine"] == "docker" and probe.version.startswith("20.10"), probe.detail


def test_docker_probe_fails_with_the_endpoint_when_nothing_listens(tmp_path):
    rt = runtime_class("docker")(
        config_for("docker", str(tmp_path / "nothing.sock"), probe_timeout=2)
    )
    probe = rt.probe()
    assert not probe.available
    assert str(tmp_path / "nothing.sock") in probe.detail


@pytest.mark.parametrize("binary", ["/nonexistent/nerdctl", "false"])
def test_nerdctl_probe_fails_when_the_cli_is_missing_or_does_not_answer(binary):
    rt = runtime_class("nerdctl")(
        config_for("nerdctl", None, nerdctl_binary=binary, probe_timeout=5)
    )
    probe = rt.probe()
    assert not probe.available
    assert binary in probe.detail


@pytest.mark.parametrize(
    "runtime,overrides",
    [
        ("docker", {"docker_host": "unix:///nonexistent/docker.sock"}),
        ("nerdctl", {"nerdctl_binary": "false"}),
    ],
)
def test_named_runtime_that_does_not_answer_fails_closed_without_fallback(runtime, overrides):
    # Even with the local runtime allowed, a named runtime never falls back.
    config = config_for(runtime, None, allow_local_runtime=True, probe_timeout=2, **overrides)
    manager = SandboxManager(
        config, {runtime: runtime_class(runtime), "local": runtime_class("local")}
    )
    with pytest.raises(SandboxError) as info:
        manager.open_session()
    assert info.value.code == SANDBOX_RUNTIME_UNAVAILABLE
    assert runtime in str(info.value)
    manager.close()


def test_docker_runtime_uses_DOCKER_HOST_when_its_own_setting_is_unset(
    podman_api_socket, monkeypatch
):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{podman_api_socket}")
    rt = runtime_class("docker")(config_for("docker", None, docker_host=None))
    try:
        probe = rt.probe()
    finally:
        rt.close()
    assert probe.available, probe.detail
    assert probe.endpoint == f"unix://{podman_api_socket}"


@pytest.mark.parametrize("target", MINE)
def test_missing_image_is_reported_and_leaves_no_container(target, request, sandbox_image):
    cli = _cli(target, request)
    before = _labelled_containers(cli)
    manager = manager_for(
        runtime_of(target),
        _socket_for(target, request),
        image_python=f"localhost/assay-no-such-image:{uuid.uuid4().hex[:8]}",
    )
    try:
        with pytest.raises(SandboxError) as info:
            manager.open_session()
        assert info.value.code == SANDBOX_IMAGE_MISSING
        assert "build-image" in (info.value.hint or "")
    finally:
        manager.close()
    assert _labelled_containers(cli) - before == set()


@pytest.mark.parametrize("target", GVISOR_TARGETS)
def test_gvisor_opt_in_starts_a_sandbox_under_gvisors_kernel(
    target, fresh_session, engine_managers
):
    session = fresh_session(target)
    inspect = engine_managers(target).inspect(session.id)
    assert (inspect.get("OCIRuntime") or inspect["HostConfig"].get("Runtime")) == "runsc"
    result = session.run_code(
        "import os, platform; print(platform.release()); print(open('/proc/version').read())"
    )
    assert result.exit_code == 0, result.stderr
    release = result.stdout.splitlines()[0]
    assert release != os.uname().release, "the sandbox ran on the host's kernel, not gVisor's"
    assert release == "4.4.0", result.stdout  # the kernel version gVisor reports


# A runtime named but not there: the engine must refuse (or assay must), never run under runc.
# On podman's compatible API even runsc is "not there": that API ignores the OCI runtime.
FAIL_CLOSED = [
    ("docker", "assay-no-such-runtime"),
    ("docker@podman", "runsc"),
    ("docker@podman", "assay-no-such-runtime"),
    ("nerdctl", "assay-no-such-runtime"),
    ("podman", "assay-no-such-runtime"),
]


@pytest.mark.parametrize("target,oci_runtime", FAIL_CLOSED)
def test_a_named_oci_runtime_the_engine_does_not_have_fails_closed(
    target, oci_runtime, request, sandbox_image
):
    runtime = runtime_of(target)
    config = config_for(runtime, _socket_for(target, request), oci_runtime=oci_runtime)
    rt = runtime_class(runtime)(config)
    spec = build_spec(
        config,
        language="python",
        name=f"assay-ocirt-{uuid.uuid4().hex[:8]}",
        labels=owner_labels("sbx_ocirt", runtime, 60),
    )
    if runtime == "docker":
        assert rt.host_config_kwargs(spec)["runtime"] == oci_runtime
    elif runtime == "nerdctl":
        args = rt.run_args(spec)
        assert args[args.index("--runtime") + 1] == oci_runtime
    cli = _cli(target, request)
    before = _labelled_containers(cli)
    try:
        with pytest.raises(SandboxError) as info:
            rt.create_session(spec)
        assert info.value.code == SANDBOX_START_FAILED
        assert oci_runtime in str(info.value)
    finally:
        rt.close()
    assert _labelled_containers(cli) - before == set()


@pytest.mark.parametrize("target", ["docker", "docker@podman"])
def test_docker_refuses_a_container_the_engine_did_not_create_as_specified(
    target, request, sandbox_image, monkeypatch
):
    # What an engine that drops a setting looks like: the container comes up without it.
    socket_path = _socket_for(target, request)
    config = config_for("docker", socket_path)
    rt = runtime_class("docker")(config)
    real = rt.host_config_kwargs

    def weaker(spec):
        kwargs = real(spec)
        kwargs.update(read_only=False, pids_limit=None)
        return kwargs

    monkeypatch.setattr(rt, "host_config_kwargs", weaker)
    spec = build_spec(
        config,
        language="python",
        name=f"assay-weak-{uuid.uuid4().hex[:8]}",
        labels=owner_labels("sbx_weak", "docker", 60),
    )
    cli = _cli(target, request)
    before = _labelled_containers(cli)
    try:
        with pytest.raises(SandboxError) as info:
            rt.create_session(spec)
        assert info.value.code == SANDBOX_START_FAILED
        assert (
            "root filesystem is writable" in info.value.message
            and "pids limit" in info.value.message
        )
    finally:
        rt.close()
    assert _labelled_containers(cli) - before == set()


@pytest.mark.parametrize("runtime", [*MINE, *GVISOR_TARGETS])
def test_files_go_in_with_their_owners_and_come_out_only_from_the_workspace(
    runtime, engine_managers
):
    session = engine_managers(runtime).open_session()
    try:
        session.put_file("data/in.csv", b"a,b\n1,2\n")
        session.put_file("frozen.txt", b"do not touch", read_only=True)
        result = session.run_code(
            textwrap.dedent("""
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
        """)
        )
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


@pytest.mark.parametrize("target", MINE)
def test_reaper_removes_containers_of_dead_owners_and_expired_ones_only(
    target, request, sandbox_image
):
    runtime, cli = runtime_of(target), _cli(target, request)
    config = config_for(runtime, _socket_for(target, request))
    rt = runtime_class(runtime)(config)
    # The dead owner ends, and the expired one (made last) expires, only once the containers exist:
    # a reaper of this process's other managers (or of another process) must not remove one while
    # it is being created.
    owner = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    made = {}
    expires = 0.0
    try:
        for kind in ("dead-owner", "alive", "expired"):
            labels = owner_labels(f"sbx_reap_{kind}", runtime, 600)
            if kind == "dead-owner":
                labels[OWNER_PID] = str(owner.pid)
                labels[OWNER_START] = process_start_time(owner.pid) or ""
            elif kind == "expired":
                expires = time.time() + 3
                labels[EXPIRES] = f"{expires:.3f}"
            spec = build_spec(
                config,
                language="python",
                name=f"assay-reap-{kind}-{uuid.uuid4().hex[:8]}",
                labels=labels,
            )
            made[kind] = rt.create_session(spec)
        owner.communicate(timeout=30)  # now the owner is dead
        time.sleep(max(0.0, expires - time.time()) + 0.1)
        removed = set(rt.reap())
        # Other processes' reapers may get to an orphan first; either way it is gone.
        assert not _exists(cli, made["dead-owner"].id)
        assert not _exists(cli, made["expired"].id)
        assert made["alive"].id not in removed and _exists(cli, made["alive"].id)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        for session in made.values():
            session.destroy()
        rt.close()


def test_exit_clean_up_of_one_runtime_leaves_the_other_runtimes_containers(engine_managers):
    docker_session = engine_managers(
        "docker@podman"
    ).open_session()  # on the same engine as nerdctl's
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


@pytest.mark.parametrize("target", MINE)
def test_sigkilled_owner_leaves_no_orphan_after_the_next_start(target, request, sandbox_image):
    runtime, cli = runtime_of(target), _cli(target, request)
    socket_path = _socket_for(target, request)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(repo=REPO, runtime=runtime, socket=socket_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        container = holder.stdout.readline().strip()
        assert container and _exists(cli, container)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert _exists(cli, container)  # SIGKILL gave it no chance to clean up
    manager = manager_for(runtime, socket_path)
    try:
        manager.runtime  # start-up: select the runtime and reap orphans
        assert not _exists(cli, container)
    finally:
        manager.close()


def test_nerdctl_runs_argv_lists_without_a_shell_and_code_stays_literal(
    engine_managers, monkeypatch, tmp_path
):
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


@pytest.mark.parametrize(
    "module", ["assay.sandbox_runtimes.docker", "assay.sandbox_runtimes.nerdctl"]
)
def test_importing_the_runtime_plugin_does_not_import_the_engine_sdk(module):
    code = f"import sys, {module}; print(sorted(m for m in ('docker', 'podman', 'requests') if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
