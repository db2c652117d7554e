"""The relay and the client in front of the notebook holder tell a holder that died with the request in
hand ("lost") from one that did not answer in time ("unresponsive", reported as PYTHON_TIMEOUT): a
holder stopped just before a call must not make the call look like a timed-out cell.

Both are assay's own programs (builtin modules only); they run here against a holder socket of the test's.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from assay.plugins.code_interpreter.session import HOLDER_SOCKET, RELAY_PROGRAM, _client_program

MARK = "\x1eASSAY-HOLDER test"


def _holder(path: Path, behaviour: str) -> None:
    """A holder socket that takes one request and then dies with it unread ("dies") or does not answer
    for 1 s ("silent": past the 0.3 s the caller waits; it then closes, which also lets go of the caller's
    stdout, passed to it as a descriptor)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        conn.recv(1, socket.MSG_PEEK)  # the request is there
        if behaviour == "dies":
            conn.close()  # unread data: the peer's next read fails with ECONNRESET
        else:
            time.sleep(1.0)
            conn.close()
        server.close()

    threading.Thread(target=serve, daemon=True).start()


def _reply(out: bytes) -> dict:
    mark = MARK.encode()
    return json.loads(out.split(b"\n" + mark + b"\n", 1)[1].splitlines()[0])


def _via_relay(path: Path, wait_s: float) -> dict:
    body, mark = b'{"code": "x = 1"}', MARK.encode()
    frame = struct.pack("!QQd", len(mark), len(body), wait_s) + mark + body
    out = subprocess.run(
        [sys.executable, "-I", "-c", RELAY_PROGRAM, str(path)],
        input=frame,
        capture_output=True,
        timeout=30,
    )
    return _reply(out.stdout)


def _via_client(workdir: Path, wait_s: float) -> dict:
    program = _client_program({"code": "x = 1"}, wait_s, str(workdir), MARK)
    out = subprocess.run([sys.executable, "-I", "-c", program], capture_output=True, timeout=30)
    return _reply(out.stdout)


@pytest.mark.parametrize("via", ["relay", "client"])
def test_a_holder_that_dies_with_the_request_is_lost_not_a_timeout(tmp_path, via):
    sock = tmp_path / HOLDER_SOCKET
    _holder(sock, "dies")
    reply = _via_relay(sock, 5.0) if via == "relay" else _via_client(tmp_path, 5.0)
    assert reply == {"outcome": "lost"}


@pytest.mark.parametrize("via", ["relay", "client"])
def test_a_holder_that_does_not_answer_in_time_is_unresponsive(tmp_path, via):
    sock = tmp_path / HOLDER_SOCKET
    _holder(sock, "silent")
    reply = _via_relay(sock, 0.3) if via == "relay" else _via_client(tmp_path, 0.3)
    assert reply == {"outcome": "unresponsive"}


@pytest.mark.parametrize("via", ["relay", "client"])
def test_no_holder_listening_is_no_holder(tmp_path, via):
    reply = (
        _via_relay(tmp_path / HOLDER_SOCKET, 1.0) if via == "relay" else _via_client(tmp_path, 1.0)
    )
    assert reply == {"outcome": "no_holder"}
