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

from tests.sandbox_engines.engines import CONTAINER_RUNTIMES, TEST_IMAGE, host_pids_running

API_RUNTIMES = ("podman", "docker")  # the two reached through the private API socket
MiB = 1024**2


@pytest.fixture
def fresh_session(engine_managers):
    opened = []

    def open_(runtime: str, **overrides):
        session = engine_managers(runtime, **overrides).open_session()
        opened.append(session)
        return session

    yield open_
    for session in opened:
        session.close()


def _container_exists(cid: str) -> bool:
    done = subprocess.run(["podman", "container", "exists", cid], capture_output=True, timeout=60)
    return done.returncode == 0


def _sandbox_env(runtime: str, socket_path: str) -> dict[str, str]:
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
    runtime, sandbox_image, podman_api_socket
):
    proc = subprocess.Popen([sys.executable, "-c", _WORKER_FIRST], env=_sandbox_env(runtime, podman_api_socket),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cid = ""
    try:
        cid = proc.stdout.readline().strip()
        assert cid, proc.stderr.read() if proc.poll() is not None else "no container id"
        assert _container_exists(cid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        assert proc.returncode == -signal.SIGTERM, (proc.returncode, proc.stderr.read()[-2000:])
        assert not _container_exists(cid), "the container outlived its owner's SIGTERM"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if cid and _container_exists(cid):
            subprocess.run(["podman", "rm", "-f", cid], capture_output=True, timeout=60)


def test_exit_signal_handler_waits_for_the_main_thread():
    """Unit level: from a worker thread nothing is marked installed; the next main-thread call installs."""
    code = textwrap.dedent("""
        import signal, threading
        from assay.kernel import exit_signals
        from assay.kernel.sandbox import manager
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
        f"import os\nm = ({marker[:10]!r} + {marker[10:]!r}).encode()\n"
        "print(sum(1 for p in os.listdir('/proc') if p.isdigit() and m in open('/proc/%s/cmdline' % p, 'rb').read()))",
        timeout_s=20)
    assert later.stdout.strip() == "0", later


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
    done = subprocess.run([sys.executable, "-c", _CALLER], env=env, capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    facts, doctor = report["facts"], report["doctor"]
    if facts["parent"] is True or facts["any"] is True:  # readable: doctor and the result must say so plainly
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
