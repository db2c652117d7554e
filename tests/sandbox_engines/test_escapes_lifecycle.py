"""The escape suite, part two: what outlives a call or its owner, and what the sandbox reports.

Issue 13, items 5-12: clean-up on SIGTERM after first use from a worker
thread, daemons that outlive their call, the result channel of the code
interpreter, ``/dev/shm``, doctor's wording, the restart after a hard reset,
the caller's environment on the local runtime and the engine's helper
processes. Each test asserts from outside (the host's /proc, the engine's
own listing), as test_escapes.py does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from tests.sandbox_engines.engines import (
    CONTAINER_RUNTIMES,
    TEST_IMAGE,
    host_pids_running,
    runtime_of,
)

API_RUNTIMES = (
    "podman",
    "docker",
    "docker@podman",
)  # the targets reached through a private API socket
PODMAN_API = ("podman", "docker@podman")  # the targets whose executions podman's conmon watches
MiB = 1024**2


def _container_exists(cli: list[str], cid: str) -> bool:
    done = subprocess.run([*cli, "container", "inspect", cid], capture_output=True, timeout=60)
    return done.returncode == 0


def _sandbox_env(target: str, socket_path: str) -> dict[str, str]:
    runtime = runtime_of(target)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SANDBOX_")}
    env.update(SANDBOX_RUNTIME=runtime, SANDBOX_IMAGE_PYTHON=TEST_IMAGE, ASSAY_LOG_LEVEL="WARNING")
    if runtime == "docker":
        env["SANDBOX_DOCKER_HOST"] = f"unix://{socket_path}"
    else:
        env["SANDBOX_PODMAN_SOCKET"] = socket_path
    return env


# --- item 6: SIGTERM after the sandbox was first used from a worker thread ------------------------

_WORKER_FIRST = textwrap.dedent("""
    import sys, threading, time
    from assay import Kernel

    kernel = Kernel()  # made on the main thread, as `assay tool call` does
    box = {}

    def work():  # acall_tool runs the tool in a worker thread
        session = kernel.sandbox.open_session()
        assert session.run_code("print('hi')").stdout == "hi\\n"
        box["container"] = kernel.sandbox.status(session.id).container

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    print(box["container"], flush=True)
    time.sleep(300)
""")


@pytest.mark.parametrize("runtime", API_RUNTIMES)
def test_sigterm_removes_the_container_when_the_sandbox_was_first_used_from_a_worker_thread(
    runtime, sandbox_image, endpoint_socket, engine_cli
):
    cli = engine_cli(runtime)
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORKER_FIRST],
        env=_sandbox_env(runtime, endpoint_socket(runtime)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cid = ""
    try:
        cid = proc.stdout.readline().strip()
        assert cid, proc.stderr.read() if proc.poll() is not None else "no container id"
        assert _container_exists(cli, cid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        assert proc.returncode == -signal.SIGTERM, (proc.returncode, proc.stderr.read()[-2000:])
        assert not _container_exists(cli, cid), "the container outlived its owner's SIGTERM"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if cid and _container_exists(cli, cid):
            subprocess.run([*cli, "rm", "-f", cid], capture_output=True, timeout=60)


def test_exit_signal_handler_waits_for_the_main_thread():
    """Unit level: from a worker thread nothing is marked installed; the next main-thread call installs."""
    code = textwrap.dedent("""
        import signal, threading
        from assay.kernel import exit_signals
        from assay.plugins.sandbox import manager
        t = threading.Thread(target=manager._install_exit_handlers); t.start(); t.join()
        before = signal.getsignal(signal.SIGTERM) is signal.SIG_DFL and not exit_signals.installed()
        manager._install_exit_handlers()
        after = callable(signal.getsignal(signal.SIGTERM)) and exit_signals.installed()
        print(before, after)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["True", "True"], done.stderr[-2000:]


# --- item 8: a setsid daemon started by a call that ends normally ----------------------------------

_DAEMON = """
import subprocess, sys
subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(0.2)  # {marker}'],
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL, close_fds=True)
print('started')
"""


@pytest.mark.parametrize("runtime", [*CONTAINER_RUNTIMES, "local"])
def test_a_setsid_daemon_ends_with_the_call_that_started_it(runtime, fresh_session):
    session = fresh_session(runtime)
    marker = f"daemon-{uuid.uuid4().hex}"
    result = session.run_code(_DAEMON.format(marker=marker), timeout_s=20)
    assert result.exit_code == 0 and result.stdout == "started\n", result
    assert not result.timed_out
    deadline = time.monotonic() + 3
    left = host_pids_running(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = host_pids_running(marker)
    assert left == [], f"the daemon outlived its call: {left}"
    # The next call sees none either (the marker is split so that its own argv does not carry it).
    later = session.run_code(
        f"import os\nm = ({marker[:10]!r} + {marker[10:]!r}).encode()\nn = 0\n"
        "for p in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n"
        "        n += m in open('/proc/%s/cmdline' % p, 'rb').read()\n"
        "    except OSError:\n"
        "        pass  # ended meanwhile\n"
        "print(n)\n",
        timeout_s=20,
    )
    assert later.stdout.strip() == "0", later


@pytest.mark.parametrize("runtime", CONTAINER_RUNTIMES)  # runc: the container's clock is the host's
def test_a_call_returns_promptly_once_its_code_ended_and_left_nothing(runtime, fresh_session):
    # The launcher's kill of the code's uid waits out spaced rounds (0.4 s) for forks in flight only
    # when something of the code's was still running; kill(-1) itself cannot say so, as it succeeds
    # whenever the keeper's process is there.
    session = fresh_session(runtime)
    session.run_code("print(1)", timeout_s=20)
    after_code = []
    for _ in range(3):
        result = session.run_code("import time\nprint(time.monotonic())", timeout_s=20)
        after_code.append(time.monotonic() - float(result.stdout))
    assert min(after_code) < 0.3, after_code


# --- item 5: the local runtime and the caller's environment ----------------------------------------

_CALLER = textwrap.dedent("""
    import json, os
    from tests.sandbox_engines.engines import manager_for
    secret = os.environ["ASSAY_ESCAPE_CALLER_SECRET"]
    manager = manager_for("local", None)
    session = manager.open_session()
    code = (
        "import json, os\\n"
        "secret = %r.encode()\\n"
        "out = {'parent': None, 'any': False}\\n"
        "try:\\n"
        "    out['parent'] = secret in open('/proc/%%d/environ' %% os.getppid(), 'rb').read()\\n"
        "except OSError as e:\\n"
        "    out['parent'] = type(e).__name__\\n"
        "for pid in os.listdir('/proc'):\\n"
        "    if pid.isdigit():\\n"
        "        try:\\n"
        "            out['any'] = out['any'] or secret in open('/proc/%%s/environ' %% pid, 'rb').read()\\n"
        "        except OSError:\\n"
        "            pass\\n"
        "print(json.dumps(out))\\n"
    ) % secret
    result = session.run_code(code, timeout_s=20)
    print(json.dumps({"facts": json.loads(result.stdout), "warnings": result.warnings,
                      "doctor": manager.runtime.enforced_limits()["environment allow-list"]}))
    manager.close()
""")


def test_local_code_cannot_read_the_callers_environment_or_every_result_says_it_can():
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    env = {**os.environ, "ASSAY_ESCAPE_CALLER_SECRET": secret, "ASSAY_LOG_LEVEL": "ERROR"}
    done = subprocess.run(
        [sys.executable, "-c", _CALLER],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    facts, doctor = report["facts"], report["doctor"]
    if (
        facts["parent"] is True or facts["any"] is True
    ):  # readable: doctor and the result must say so plainly
        assert "NOT the caller's" in doctor, doctor
        assert any("caller's environment" in w for w in report["warnings"]), report["warnings"]
    else:  # stopped (root, a session uid): out of reach everywhere, and doctor says enforced
        assert facts["parent"] == "PermissionError", facts
        assert doctor.startswith("enforced"), doctor


def test_local_runtime_as_another_user_says_the_callers_environment_is_readable(monkeypatch):
    from assay.sandbox_runtimes import local

    monkeypatch.setattr(local.os, "getuid", lambda: 1000)
    limits = local.LocalRuntime(None).enforced_limits()  # type: ignore[arg-type]
    assert "caller's environment" in limits["environment allow-list"]
    assert limits["environment allow-list"].startswith("the code's own only; NOT the caller's")


# --- item 11: doctor calls gVisor enforced only when a probe proves it -----------------------------


@pytest.mark.parametrize("requested", [True, False])
def test_docker_doctor_says_gvisor_is_not_available_where_the_engine_cannot_run_it(
    requested, sandbox_image, podman_api_socket
):
    # podman's Docker-compatible API lists runsc (podman's configuration names it) but ignores it.
    from tests.sandbox_engines.engines import config_for, runtime_class

    config = config_for(
        "docker", podman_api_socket, **({"oci_runtime": "runsc"} if requested else {})
    )
    runtime = runtime_class("docker")(config)
    try:
        status = runtime.enforced_limits()["gVisor (runsc)"]
    finally:
        runtime.close()
    assert not str(status).startswith(("enforced", "available")), status
    assert status.startswith("requested, not available" if requested else "not available"), status


@pytest.mark.parametrize("target", ["podman", "docker"])
@pytest.mark.parametrize("requested", [True, False])
def test_doctor_says_gvisor_is_enforced_only_when_requested_and_a_probe_ran_under_it(
    target, requested, endpoint_socket, sandbox_image
):
    from tests.conftest import require
    from tests.sandbox_engines.docker_daemon import runsc_binary
    from tests.sandbox_engines.engines import config_for, runtime_class

    require(runsc_binary() is not None, "gVisor's runsc (apt-get install runsc)")
    config = config_for(
        target, endpoint_socket(target), **({"oci_runtime": "runsc"} if requested else {})
    )
    runtime = runtime_class(target)(config)
    try:
        runtime.doctor()  # as `assay sandbox doctor` does: the engine's info first
        limits = runtime.enforced_limits()
    finally:
        runtime.close()
    status = limits["gVisor (runsc)"]
    assert status.startswith("enforced" if requested else "available, not requested"), status
    # ... and the seccomp line says what the profile does not filter under gVisor.
    assert (limits["seccomp (assay profile)"] is True) is not requested, limits[
        "seccomp (assay profile)"
    ]
    assert f"the host's {os.uname().release}" in status and "kernel is 4.4.0" in status, status


# --- item 10: /dev/shm and POSIX message queues are sized, bounded and accounted for ---------------

_SHM_PROBE = r"""
import ctypes, errno, json, os, resource
st = os.statvfs('/dev/shm')
out = {'shm_bytes': st.f_blocks * st.f_frsize, 'left': sorted(os.listdir('/dev/shm')),
       'msgqueue': list(resource.getrlimit(resource.RLIMIT_MSGQUEUE))}
opts = [l.split()[3] for l in open('/proc/mounts') if l.split()[1] == '/dev/shm']
out['options'] = opts[0].split(',') if opts else []
with open('/dev/shm/left-by-call', 'w') as fh:
    fh.write('x')
# A queue bigger than RLIMIT_MSGQUEUE allows is refused.
rt = ctypes.CDLL('librt.so.1', use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [('flags', ctypes.c_long), ('maxmsg', ctypes.c_long), ('msgsize', ctypes.c_long), ('cur', ctypes.c_long), ('pad', ctypes.c_long * 4)]
attr = Attr(0, 10, 8192 * 16, 0)
fd = rt.mq_open(b'/assay-big', os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr))
out['big_queue'] = 'OPENED' if fd >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
if fd >= 0:
    rt.mq_unlink(b'/assay-big')
print(json.dumps(out))
"""


@pytest.mark.parametrize("runtime", CONTAINER_RUNTIMES)
def test_dev_shm_is_sized_explicitly_and_message_queues_are_bounded(
    runtime, fresh_session, engine_managers
):
    from assay.plugins.sandbox.spec import MSGQUEUE_BYTES

    config = engine_managers(runtime).config
    session = fresh_session(runtime)
    first = session.run_code(_SHM_PROBE, timeout_s=20)
    assert first.exit_code == 0, first.stderr[-2000:]
    facts = json.loads(first.stdout.strip().splitlines()[-1])
    assert facts["shm_bytes"] == config.shm_size, facts
    assert {"nosuid", "nodev", "noexec"} <= set(facts["options"]), facts
    assert facts["msgqueue"] == [MSGQUEUE_BYTES, MSGQUEUE_BYTES], facts
    assert facts["big_queue"] in ("EMFILE", "ENOMEM", "EINVAL", "EACCES"), facts
    # What is left in /dev/shm stays for the session's later calls (documented), never for another session.
    again = json.loads(session.run_code(_SHM_PROBE, timeout_s=20).stdout.strip().splitlines()[-1])
    assert again["left"] == ["left-by-call"], again
    other = json.loads(
        fresh_session(runtime).run_code(_SHM_PROBE, timeout_s=20).stdout.strip().splitlines()[-1]
    )
    assert other["left"] == [], other


# --- item 7: after a host-side hard reset the call returns only once the container runs again -------


@pytest.mark.parametrize("runtime", CONTAINER_RUNTIMES)
def test_after_a_hard_reset_the_container_runs_again_before_the_call_returns(
    runtime, fresh_session, engine_managers
):
    manager = engine_managers(runtime, host_grace=1.0)
    session = fresh_session(runtime, host_grace=1.0)
    rs = manager._sessions[session.id].runtime
    rs._kill_code_processes = lambda: (
        False
    )  # a wedged kill helper: the host must reset the container
    marker = f"reset-{uuid.uuid4().hex}"
    code = f"# {marker}\nimport os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\nwhile True:\n    pass\n"
    result = session.run_code(code, timeout_s=1)
    assert result.timed_out
    assert any("restarted" in w for w in result.warnings), result.warnings
    assert rs.alive(), "the call returned before the container was running again"
    after = session.run_code("print('back')", timeout_s=10)
    assert after.stdout == "back\n", after
    assert host_pids_running(marker) == []


# --- item 12: each execution's conmon processes on the host are bounded in time --------------------


def _exec_conmons(container_id: str) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if (
            argv
            and argv[0].endswith(b"conmon")
            and b"--exec-attach" in argv
            and container_id.encode() in argv
        ):
            count += 1
    return count


@pytest.mark.parametrize("runtime", PODMAN_API)
def test_conmon_processes_of_finished_executions_leave_the_host_within_seconds(
    runtime, fresh_session, engine_managers, capsys
):
    from assay.sandbox_runtimes.podman_conf import EXEC_EXIT_DELAY_S

    session = fresh_session(runtime)
    container = engine_managers(runtime).status(session.id).container
    executions = 10
    for _ in range(executions):
        assert session.run_code("print(1)", timeout_s=10).stdout == "1\n"
    peak = _exec_conmons(container)
    started = time.monotonic()
    bound = EXEC_EXIT_DELAY_S + 10  # podman's own default kept them 300 s
    left = peak
    while left and time.monotonic() - started < bound:
        time.sleep(0.25)
        left = _exec_conmons(container)
    took = time.monotonic() - started
    with capsys.disabled():
        print(
            f"\n[{runtime}] {executions} executions: {peak} exec conmon processes right after, "
            f"{left} after {took:.1f} s"
        )
    assert peak <= 2 * executions
    assert left == 0, (
        f"{left} exec conmon processes still on the host after {took:.1f} s (peak {peak})"
    )


def test_podman_service_conf_changes_only_the_exit_delay(tmp_path, monkeypatch):
    import tomllib

    from assay.sandbox_runtimes.podman_conf import EXEC_EXIT_DELAY_S, service_environment

    source = tmp_path / "system.conf"
    source.write_text(
        '[containers]\ndefault_ulimits = ["nofile=1024:1024"]\n[engine]\nruntime = "runc"\n'
        'exit_command_delay = 300\n[engine.runtimes]\nrunc = ["/usr/bin/runc"]\n'
    )
    monkeypatch.setenv("CONTAINERS_CONF", str(source))
    env = service_environment(tmp_path)
    written = tomllib.loads((tmp_path / "containers.conf").read_text())
    assert env == {"CONTAINERS_CONF": str(tmp_path / "containers.conf")}
    expected = tomllib.loads(source.read_text())
    expected["engine"]["exit_command_delay"] = EXEC_EXIT_DELAY_S
    assert written == expected
    source.write_text(
        "[engine\nbroken"
    )  # unreadable exactly: the service keeps podman's own setting
    assert service_environment(tmp_path) == {}


@pytest.mark.parametrize("runtime", CONTAINER_RUNTIMES)
def test_a_reset_whose_start_returns_early_is_waited_for(
    runtime, fresh_session, engine_managers, engine_cli
):
    """The engines' start returned before the container ran (docker 4 of 4, podman 1 of 6): modelled here
    by a reset that kills at once and starts the container 1.5 s later, in the background."""
    import threading

    manager = engine_managers(runtime, host_grace=1.0)
    session = fresh_session(runtime, host_grace=1.0)
    rs = manager._sessions[session.id].runtime
    rs._kill_code_processes = lambda: False
    started = []

    cli = engine_cli(runtime)

    def early_returning_reset():
        subprocess.run([*cli, "kill", "--signal", "KILL", rs.id], capture_output=True, timeout=60)
        subprocess.run([*cli, "wait", rs.id], capture_output=True, timeout=60)
        timer = threading.Timer(
            1.5, lambda: subprocess.run([*cli, "start", rs.id], capture_output=True)
        )
        timer.start()
        started.append(timer)

    rs._hard_reset = early_returning_reset
    code = "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\nwhile True:\n    pass\n"
    result = session.run_code(code, timeout_s=1)
    assert result.timed_out and any("restarted" in w for w in result.warnings), result.warnings
    assert rs.alive(), "the call returned before the container was running again"
    assert session.run_code("print('back')", timeout_s=10).stdout == "back\n"
    for timer in started:
        timer.join()
