"""Channels: one exec that stays open, its stdin written and its output read by the host.

An execution through the launcher costs one engine ``exec`` (tens to
hundreds of milliseconds). A tool that talks to a resident process many times
(the code interpreter's notebook holder) can instead open a channel once: a
small program of assay's own, started with its stdin attached, that reads
requests from stdin and answers on stdout. It runs as the keeper's uid, which
the per-call kill spares and which code (the code's uid, the resident's uid)
cannot signal; it is never handed the user's code, only bytes to forward.

The engine gives a raw socket carrying stdin one way and the multiplexed
stdout/stderr frames (8-byte headers: stream, 0, 0, 0, big-endian size) the
other. :meth:`Channel.exchange` writes one request and reads until a marker
line (with a deadline), keeping at most ``limit`` bytes of each stream.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

from assay.kernel.sandbox.errors import SANDBOX_EXEC_FAILED, SandboxError
from assay.kernel.sandbox.results import OutputCapture


class ChannelBroken(SandboxError):
    """The channel is closed or its stream failed; ``delivered`` says whether the request went out."""

    def __init__(self, message: str, delivered: bool = True) -> None:
        super().__init__(SANDBOX_EXEC_FAILED, message, "Open the channel again.")
        self.delivered = delivered


class Channel:
    """The host's end of an attached exec (see the module docstring). One exchange at a time."""

    def __init__(
        self, sock: socket.socket, prefix: bytes = b"", on_use: Callable[[], None] | None = None
    ) -> None:
        self._sock = sock
        self._buf = bytearray(prefix)
        self._on_use = on_use
        self._lock = threading.Lock()
        self.closed = False

    def exchange(
        self, request: bytes, marker: bytes, deadline_s: float, limit: int
    ) -> tuple[bytes, bytes, bool, bool]:
        """Send ``request``; read until a whole line after ``marker`` on stdout.

        Returns (stdout, stderr, stdout_truncated, complete). ``complete`` is False
        when the deadline passed first; a closed stream raises :class:`ChannelBroken`.
        The marker line and everything before it stay in ``stdout``.
        """
        with self._lock:
            if self.closed:
                raise ChannelBroken("the channel is closed", delivered=False)
            if self._on_use is not None:
                self._on_use()
            if self._ended():
                self.close()
                raise ChannelBroken("the channel's program ended", delivered=False)
            try:
                self._sock.sendall(request)
            except OSError as exc:
                self.close()
                raise ChannelBroken(
                    f"the channel's stdin is closed ({exc})", delivered=False
                ) from None
            out, err = OutputCapture(limit, tail=len(marker) + 4096), OutputCapture(limit)
            window = bytearray()  # the end of stdout, where the marker shows up
            end = time.monotonic() + deadline_s
            while True:
                frame = self._frame(end)
                if frame is None:
                    return out.getvalue(), err.getvalue(), out.truncated, False
                fd, data = frame
                if fd != 1:
                    err.write(data)
                    continue
                out.write(data)
                window += data
                at = window.rfind(marker)
                if at >= 0 and window.find(b"\n", at + len(marker) + 1) >= 0:
                    line_end = window.find(b"\n", at + len(marker) + 1)
                    if out.truncated:  # the kept head lacks the marker: append its line
                        kept = out.getvalue() + b"\n" + bytes(window[at : line_end + 1])
                    else:
                        kept = out.getvalue()
                    return kept, err.getvalue(), out.truncated, True
                if len(window) > 2 * (len(marker) + 65536):
                    del window[: len(window) - (len(marker) + 65536)]

    def _ended(self) -> bool:
        """Whether the stream already ended while idle (the program or the container is gone)."""
        import select

        try:
            if not select.select([self._sock], [], [], 0)[0]:
                return False
            return self._sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _frame(self, end: float) -> tuple[int, bytes] | None:
        header = self._read(8, end)
        if header is None:
            return None
        size = int.from_bytes(header[4:8], "big")
        data = self._read(size, end) if size else b""
        if data is None:
            return None
        return (2 if header[0] == 2 else 1), bytes(data)

    def _read(self, n: int, end: float) -> bytes | None:
        while len(self._buf) < n:
            left = end - time.monotonic()
            if left <= 0:
                return None
            self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(max(65536, n - len(self._buf)))
            except TimeoutError:
                return None
            except OSError as exc:
                self.close()
                raise ChannelBroken(f"the channel's stream failed ({exc})") from None
            if not chunk:
                self.close()
                raise ChannelBroken("the channel's program ended")
            self._buf += chunk
        data = bytes(self._buf[:n])
        del self._buf[:n]
        return data

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self._sock.close()
        except OSError:
            pass


def hijack(socket_path: str, path: str, body: dict) -> tuple[socket.socket, bytes]:
    """POST ``body`` to ``path`` on an engine's unix socket and take over the connection.

    For engines whose client library cannot write to an exec's stdin (podman's
    REST client): the response headers are read here; the socket then carries
    stdin one way and the multiplexed output the other. Returns the socket and
    the bytes already read past the headers.
    """
    import json

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    try:
        sock.connect(socket_path)
        payload = json.dumps(body).encode()
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("the engine closed the connection")
            head += chunk
            if len(head) > 65536:
                raise OSError("no end of the response headers")
    except OSError as exc:
        sock.close()
        raise SandboxError(SANDBOX_EXEC_FAILED, f"could not attach to the exec: {exc}") from None
    status_line, _, rest = head.partition(b"\r\n\r\n")
    status = status_line.split(b" ", 2)
    if len(status) < 2 or status[1] not in (b"101", b"200"):
        sock.close()
        raise SandboxError(
            SANDBOX_EXEC_FAILED,
            "could not attach to the exec: " + status_line.decode("latin-1")[:300],
        )
    sock.settimeout(None)
    return sock, rest
