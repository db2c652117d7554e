"""Bounded output capture: executed INSIDE the sandbox (uploaded as ``assay_ci_capture``).

A cell's ``sys.stdout``/``sys.stderr`` go to :class:`Capture` (head and tail
kept, the middle counted); :class:`FdCapture` points file descriptor 1 at a
pipe drained into the same capture, so what subprocesses or C code write
there is captured (and bounded) too.
"""

import io
import os
import sys

TYPE_CHECKING = False  # true to mypy; inside the sandbox nothing more is imported
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable


class Capture(io.TextIOBase):
    """A text stream keeping the first ``limit`` and the last ``tail`` characters.

    The first ``tee`` characters are also written through to ``fd`` so that a
    killed process still leaves its early output in the sandbox's stdout.
    """

    def __init__(
        self, limit: int, tail: int, tee: int = 0, fd: int | None = None, name: str = "<stdout>"
    ):
        self.limit, self.tail_limit, self.tee_left, self.fd, self.name = limit, tail, tee, fd, name
        self.lock: threading.Lock | None = (
            None  # set when a second thread (the fd 1 pump) writes too
        )
        self.before_write: Callable[[], None] | None = (
            None  # FdCapture.drain: what reached fd 1 first comes first
        )
        self.head: list[str] = []
        self.head_len = 0
        self.tail: list[str] = []
        self.tail_len = 0
        self.total = 0

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        if self.lock is not None:
            with self.lock:
                if self.before_write is not None:
                    self.before_write()
                return self._write(s)
        return self._write(s)

    def _write(self, s: str) -> int:
        n = len(s)
        self.total += n
        if self.tee_left > 0 and self.fd is not None:
            piece = s[: self.tee_left]
            self.tee_left -= len(piece)
            try:
                os.write(self.fd, piece.encode("utf-8", "backslashreplace"))
            except OSError:
                self.tee_left = 0
        room = self.limit - self.head_len
        if room > 0:
            self.head.append(s[:room])
            self.head_len += min(room, n)
            s = s[room:]
        if s and self.tail_limit > 0:
            self.tail.append(s)
            self.tail_len += len(s)
            if self.tail_len > 4 * self.tail_limit:
                joined = "".join(self.tail)[-self.tail_limit :]
                self.tail, self.tail_len = [joined], len(joined)
        return n

    def flush(self) -> None:
        pass

    def report(self) -> dict:
        head = "".join(self.head)
        tail = "".join(self.tail)[-self.tail_limit :] if self.tail_limit else ""
        omitted = self.total - len(head) - len(tail)
        return {
            "head": clean_text(head),
            "tail": clean_text(tail),
            "total_chars": self.total,
            "omitted_chars": omitted,
        }


class FdCapture:
    """Points file descriptor ``fd`` at a pipe whose contents go into ``capture`` (a thread drains it).

    Subprocesses and C code write to fd 1 directly; without this, 1 MiB of
    that filled the sandbox's stdout limit and the frame written after it
    was dropped. Before each ``print`` the capture first takes what is
    already in the pipe, so the two kinds of output stay in order.
    :meth:`stop` puts the original back and waits a moment for what is still
    in the pipe (a process that keeps it open is not waited for).
    """

    def __init__(self, fd: int, capture: Capture) -> None:
        import codecs
        import threading

        self.fd, self.capture = fd, capture
        self.saved = os.dup(fd)  # not inheritable: the cell's subprocesses never get it
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        os.dup2(write_end, fd)
        os.close(write_end)
        self.read_end = read_end
        self.eof = self.done = False
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        capture.lock = threading.Lock()
        capture.before_write = self.drain
        _ACTIVE[0] = self
        self.thread = threading.Thread(target=self._pump, name="assay-fd-capture", daemon=True)
        self.thread.start()

    def drain(self) -> None:
        """Move what the pipe holds now into the capture (the capture's lock is held)."""
        while not self.eof:
            try:
                data = os.read(self.read_end, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.eof = True
                text = self.decoder.decode(b"", final=True)
                if text:
                    self.capture._write(text)
                return
            self.capture._write(self.decoder.decode(data))

    def _forked(self) -> None:
        self.capture.lock = self.capture.before_write = None
        self.done = True

    def _pump(self) -> None:
        import select

        while not self.eof and not self.done:
            try:
                select.select([self.read_end], [], [], 0.1)
            except (OSError, ValueError):
                return
            lock = self.capture.lock
            assert lock is not None  # set in __init__; only a forked child's copy is cleared
            with lock:
                self.drain()

    def stop(self, wait_s: float = 0.25) -> None:
        try:
            sys.stdout.flush()
        except Exception:  # noqa: BLE001
            pass
        os.dup2(self.saved, self.fd)  # this process's last write end of the pipe is gone now
        os.close(self.saved)
        self.thread.join(wait_s)
        lock = self.capture.lock
        assert lock is not None  # set in __init__; only a forked child's copy is cleared
        with lock:
            self.drain()
            self.done = True
            self.capture.before_write = None
        _ACTIVE[0] = None


# A child forked by the cell (multiprocessing's fork) has no pump thread, and the lock may
# have been held by it at the fork: the child's copy goes back to plain writes. Registered
# once per process (a notebook holder forks for every cell; hooks cannot be removed): the
# notebook holder's fresh copy of this module for a cell (assay_ci_recorder) is given the
# slot of the first one, ``_ACTIVE``, and registers nothing.
if "_ACTIVE" not in globals():  # set beforehand in a recorder's fresh copy
    _ACTIVE: "list[FdCapture | None]" = [None]

    def _after_fork_in_child() -> None:
        if _ACTIVE[0] is not None:
            _ACTIVE[0]._forked()

    os.register_at_fork(after_in_child=_after_fork_in_child)


def clean_text(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
