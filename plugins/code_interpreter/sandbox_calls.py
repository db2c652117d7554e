"""A call to the notebook holder: executed INSIDE the sandbox (uploaded as ``assay_ci_calls``).

The holder listens on a unix socket in the working directory, which every
process of the sandbox can reach. A call is served only with a valid **token**:

* the host makes a hash chain per holder (``session.CallTokens``: a random
  seed hashed N times with SHA-256) and starts the holder with its last link,
  the *anchor*; each call carries the link before the last one used. A token
  is valid when hashing it (at most :data:`WINDOW` times, so that a token the
  host gave out and the holder never saw costs nothing) gives the anchor,
  which it then replaces;
* so the holder - and every cell, which runs in a fork of it and sees all it
  knows, including the token of its own call - only ever holds links already
  used: the next one is a preimage of SHA-256. A cell cannot queue a call of
  its own, and neither can raw code of the session (which runs as the
  client's uid) or anything either of them planted;
* this does not depend on who the kernel says the peer is: under gVisor
  (runsc) ``SO_PEERCRED`` names the listening process as the peer of every
  connection. Where the kernel does tell, a peer of any uid but the host's
  callers' (``SandboxSession.caller_uids``) and the holder's own is refused
  before its request is read.
"""

import hashlib
import json
import os
import socket
import struct
import sys

HEADER = struct.Struct("!Q")
MAX_REQUEST = 16 * 1024 * 1024
WINDOW = 16  # tokens the host may have given out without the holder seeing them


class Anchor:
    """The last link of the host's token chain this holder has seen used."""

    def __init__(self, top: str) -> None:
        self.top = bytes.fromhex(top)

    def admit(self, token) -> bool:
        """Whether ``token`` is a link below the anchor (then it becomes the anchor)."""
        try:
            link = bytes.fromhex(token)
        except (TypeError, ValueError):
            return False
        if len(link) != len(self.top):
            return False
        digest = link
        for _ in range(WINDOW):
            digest = hashlib.sha256(digest).digest()
            if digest == self.top:
                self.top = link
                return True
        return False


def receive(conn: socket.socket, nfds: int = 2) -> tuple[dict, list]:
    """A request and the ``nfds`` descriptors passed with it (``SCM_RIGHTS``); ValueError if malformed.

    A call: the caller's stdout/stderr. A spare's word to the holder that it took a call: the call's
    connection.
    """
    fds: list = []
    data, ancillary, _flags, _addr = conn.recvmsg(HEADER.size, socket.CMSG_SPACE(nfds * 4))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(
                int.from_bytes(payload[i : i + 4], sys.byteorder)
                for i in range(0, len(payload) - 3, 4)
            )
    if len(data) != HEADER.size or len(fds) != nfds:
        for fd in fds:
            os.close(fd)
        raise ValueError("malformed request")
    (size,) = HEADER.unpack(data)
    if size > MAX_REQUEST:
        raise ValueError("request too large")
    body = bytearray()
    while len(body) < size:
        chunk = conn.recv(min(1 << 20, size - len(body)))
        if not chunk:
            raise ValueError("request cut short")
        body += chunk
    try:
        req = json.loads(body)
    except RecursionError:
        raise ValueError("request nested too deeply") from None
    if not isinstance(req, dict):
        raise ValueError("a request is a JSON object")
    return req, fds


def report(conn: socket.socket, **fields) -> None:
    try:
        conn.sendall((json.dumps(fields) + "\n").encode("ascii"))
    except OSError:
        pass
    conn.close()


def accept_call(listener: socket.socket, clients: frozenset, anchor: Anchor):
    """Accept one call: (conn, request, its stdout/stderr), or None when it was refused (answered).

    Only the host's calls are served: a valid token (see the module docstring), and, where the
    kernel names the peer, the uid of one of the host's callers (``clients``) or this one's
    (all that gVisor ever names). Anything else - a cell, raw code, what either left running -
    is refused, since a call it queued would change the notebook with no execution recorded.
    """
    try:
        conn, _ = listener.accept()
    except (BlockingIOError, InterruptedError):
        return None
    uid = peer_uid(conn)
    if uid is not None and uid not in clients and uid != os.getuid():
        report(conn, outcome="refused", error="not a caller of this notebook")
        return None
    fds: list = []
    try:
        req, fds = receive(conn)
        if not anchor.admit(req.get("token")):
            raise ValueError("not a caller of this notebook (no valid token)")
        req["timeout_s"] = float(req["timeout_s"])
        if not req["timeout_s"] > 0:
            raise ValueError("timeout_s must be positive")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        for fd in fds:
            os.close(fd)
        report(conn, outcome="refused", error=str(exc))
        return None
    return conn, req, fds


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of ``conn`` (as it connected), None if unknown."""
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    return struct.unpack("3i", creds)[1]
