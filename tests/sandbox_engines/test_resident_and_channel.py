"""Resident processes and channels on the real engines (podman, docker on podman's API, nerdctl).

A resident runs under its own uid, outlives the per-call kill of the code's
uid, is out of the code's reach, and ends with ``stop_resident``. A channel
carries requests in and replies out without an exec per request; nerdctl has
none and says so.
"""

from __future__ import annotations

import pytest

from assay.plugins.sandbox import SandboxError

RESIDENT = r"""
import os, socket
ready = int(os.environ.pop("ASSAY_RESIDENT_READY_FD"))
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("/workspace/echo.sock"); os.chmod("/workspace/echo.sock", 0o666); srv.listen(4)
os.write(ready, ("ready %d %d\n" % (os.getpid(), os.getuid())).encode()); os.close(ready)
while True:
    conn, _ = srv.accept()
    conn.sendall(conn.recv(1024).upper()); conn.close()
"""

ASK = (
    "import socket\ns = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
    "s.connect('/workspace/echo.sock'); s.sendall(b'ping'); print(s.recv(64).decode())"
)

# Reads one line from stdin, answers it on stdout after a marker line.
ECHO_CHANNEL = r"""
import os, sys
while True:
    line = sys.stdin.buffer.readline()
    if not line:
        break
    os.write(1, b"\n\x1eMARK\n" + line.upper())
"""


@pytest.mark.parametrize("runtime", ["podman", "docker", "docker@podman"])
def test_resident_outlives_calls_runs_as_its_own_uid_and_stops(runtime, fresh_session):
    session = fresh_session(runtime)
    assert session.supports_resident
    ready, pid, uid = session.start_resident(RESIDENT).split()
    keeper, code = session.caller_uids
    assert (
        ready == "ready" and int(uid) == code + 1
    )  # the session's resident uid: not the code's, not the keeper's
    assert int(uid) not in (keeper, code)
    for _ in range(
        2
    ):  # each run_code ends with the launcher killing the code's uid: the resident stays
        assert session.run_code(ASK).stdout.strip() == "PING"
    killed = session.run_code(f"import os, signal\nos.kill({pid}, signal.SIGKILL)")
    assert "PermissionError" in killed.stderr  # the code cannot signal it
    assert session.stop_resident()
    assert "PING" not in session.run_code(ASK).stdout


@pytest.mark.parametrize("runtime", ["podman", "docker", "docker@podman"])
def test_channel_exchanges_without_an_exec_per_request(runtime, fresh_session):
    session = fresh_session(runtime)
    channel = session.open_channel(ECHO_CHANNEL)
    before = session.status().executions
    for word in (b"one", b"two"):
        out, err, truncated, complete = channel.exchange(word + b"\n", b"\x1eMARK\n", 30.0, 1024)
        assert complete and out.endswith(word.upper() + b"\n") and not truncated
    assert session.status().executions == before
    channel.close()


def test_nerdctl_has_no_channel_and_says_so(fresh_session):
    session = fresh_session("nerdctl")
    with pytest.raises(SandboxError) as caught:
        session.open_channel(ECHO_CHANNEL)
    assert caught.value.code == "SANDBOX_EXEC_FAILED"
