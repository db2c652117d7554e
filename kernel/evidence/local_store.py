"""The default artifact store: content files under ``$ASSAY_HOME/artifacts/content``.

Files live at ``content/sha256/<2 hex>/<64 hex>``, read-only. A staged file
is published with ``os.replace`` (atomic on one filesystem) and the
directory is fsynced, so after a crash a content file is either whole or
absent.

The kernel names this store directly (it is the default, also for a kernel
started without entry points); the ``local_store`` plugin registers it so
``assay plugins`` lists it beside the others.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .content_store import ContentStore


class LocalContentStore(ContentStore):
    """Content-addressed files on the local filesystem."""

    name = "local"

    @property
    def content_dir(self) -> Path:
        return self.root / "content" / "sha256"

    def _path(self, sha256: str) -> Path:
        if len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256):
            raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
        return self.content_dir / sha256[:2] / sha256

    def commit(self, temp: Path, sha256: str, byte_size: int) -> None:
        target = self._path(sha256)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(temp, 0o444)
        # Replacing an existing copy with the same freshly hashed bytes keeps
        # one file per content and repairs a copy that was damaged on disk.
        os.replace(temp, target)
        _fsync_dir(target.parent)

    def open_content(self, sha256: str) -> IO[bytes]:
        return open(self._path(sha256), "rb")

    def exists(self, sha256: str) -> bool:
        return self._path(sha256).is_file()

    def delete(self, sha256: str) -> None:
        self._path(sha256).unlink(missing_ok=True)

    def iter_content(self) -> Iterator[str]:
        if not self.content_dir.exists():
            return
        for sub in sorted(self.content_dir.iterdir()):
            if sub.is_dir():
                for f in sorted(sub.iterdir()):
                    if len(f.name) == 64:
                        yield f.name

    def modified_at(self, sha256: str) -> float | None:
        try:
            return self._path(sha256).stat().st_mtime
        except FileNotFoundError:
            return None

    def local_path(self, sha256: str) -> Path | None:
        return self._path(sha256)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
