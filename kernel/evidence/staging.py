"""A capture's staging file: hashed and sized as it is written, fsynced, then published or discarded.

Nothing is visible to a reader until :meth:`StagedFile.publish` has fsynced
the bytes and the content store has committed them under their SHA-256;
:func:`stage` also charges them to the sink's quotas first.
"""

from __future__ import annotations

import hashlib
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .sink import ArtifactSink

BATCH_TARGET = 1 << 20  # bytes of canonical text per write


class StagedFile:
    """A staging file being written: hashed and sized as it grows.

    Small writes are gathered up to about 1 MiB. Large writes are hashed and
    written on a helper thread (both release the GIL) while the caller
    encodes the next batch; one write is in flight at a time, so the bytes
    go out in order. After each large write the kernel is
    asked to start writing the pages back (``sync_file_range``), so the final
    ``fsync`` has little left to wait for. The bytes and the hash are the same
    as a plain sequential write.
    """

    def __init__(self, sink: ArtifactSink) -> None:
        self.store = sink.store
        self.path, self.fh = self.store.new_temp()
        self.hash = hashlib.sha256()
        self.size = 0
        self._written = 0
        self._helper: Any = None
        self._pending: Any = None
        self._gathered: list[bytes] = []
        self._gathered_size = 0

    def write(self, data: bytes) -> None:
        self.size += len(data)
        self._gathered.append(data)
        self._gathered_size += len(data)
        if self._gathered_size >= BATCH_TARGET:
            self._flush()

    def _flush(self) -> None:
        """Hand the gathered bytes to the file (on the helper thread when they are large)."""
        if not self._gathered:
            return
        data = self._gathered[0] if len(self._gathered) == 1 else b"".join(self._gathered)
        self._gathered, self._gathered_size = [], 0
        if self._helper is None and len(data) < _ASYNC_WRITE_MIN:
            self._write_now(data)
            return
        self._wait()
        if self._helper is None:
            self._helper = ThreadPoolExecutor(1, thread_name_prefix="assay-capture-write")
        self._pending = self._helper.submit(self._write_now, data)

    def _write_now(self, data: bytes) -> None:
        self.hash.update(data)
        self.fh.write(data)
        if len(data) >= _ASYNC_WRITE_MIN:
            start = _writeback()
            if start is not None:
                self.fh.flush()
                start(self.fh.fileno(), self._written, len(data))
        self._written += len(data)

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def _stop_helper(self) -> None:
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.shutdown(wait=True)

    def publish(self) -> tuple[str, int]:
        try:
            self._flush()
            self._wait()
        finally:
            self._stop_helper()
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        sha = self.hash.hexdigest()
        self.store.commit(self.path, sha, self.size)
        return sha, self.size

    def discard(self) -> None:
        try:
            try:
                self._wait()
            except BaseException:  # noqa: BLE001 - the file is being thrown away
                pass
            self._gathered, self._gathered_size = [], 0
            self._stop_helper()
            self.fh.close()
        finally:
            Path(self.path).unlink(missing_ok=True)


_ASYNC_WRITE_MIN = 256 << 10  # smaller writes are done in place (no thread for small results)


def _writeback_starter() -> Any:
    """``sync_file_range(fd, offset, n, SYNC_FILE_RANGE_WRITE)`` (Linux): start writing pages back, do not wait."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.sync_file_range
        fn.argtypes = (ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint)
        fn.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None

    def start(fd: int, offset: int, length: int) -> None:
        fn(
            fd, offset, length, 2
        )  # a hint only: the fsync before publishing is what makes it durable

    return start


_WRITEBACK: list[Any] = []


def _writeback() -> Any:
    if not _WRITEBACK:  # looked up on the first large write, not at import (ctypes is not free)
        _WRITEBACK.append(_writeback_starter())
    return _WRITEBACK[0]


def stage(sink: ArtifactSink, fill, held: list[int]) -> tuple[str, int, Any]:
    """Write, charge to the sink's quotas (the bytes are appended to ``held``, for the caller to release
    once the records are written), publish."""
    staged = StagedFile(sink)
    try:
        out = fill(staged)
        sink.reserve(staged.size)
        held.append(staged.size)
        sha, size = staged.publish()
    except BaseException:
        staged.discard()
        raise
    return sha, size, out
