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
