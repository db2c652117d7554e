"""The content store: where artifact bytes live, addressed by their SHA-256.

A store plugin subclasses :class:`ContentStore`. Captures stream into a
temporary file in :meth:`ContentStore.staging_dir` (always local, so hashing
and fsync are local), then :meth:`commit` publishes it under its hash. Until
``commit`` returns nothing refers to the bytes, so a process killed half-way
leaves at most a ``.partial`` file that ``gc`` removes.
"""

from __future__ import annotations

import os
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any, ClassVar, Protocol

from ..processes import pid_alive
from .records import URI_PREFIX


class ContentStream(Protocol):
    """What :meth:`ContentStore.open_content` returns: a binary stream, read and closed (an open file
    is one; a store may return less than a file, e.g. an object store's response body)."""

    def read(self, n: int = -1, /) -> bytes: ...

    def close(self) -> None: ...

    def __enter__(self) -> ContentStream: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> None: ...


class ContentStore(ABC):
    """Base class of artifact store plugins (``register_artifact_stores``)."""

    name: ClassVar[str] = ""

    def __init__(self, settings: Any) -> None:
        self.settings = settings  # the kernel's Settings

    # --- local working area (catalog and staging) ------------------------
    @property
    def root(self) -> Path:
        """A local directory for this store's catalog and staging files."""
        return Path(self.settings.home) / "artifacts"

    @property
    def catalog_path(self) -> Path:
        return self.root / "catalog.sqlite"

    @property
    def staging_dir(self) -> Path:
        return self.root / "tmp"

    def new_temp(self) -> tuple[Path, IO[bytes]]:
        """A fresh staging file, opened for writing."""
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        path = self.staging_dir / f"{os.getpid()}-{uuid.uuid4().hex}.partial"
        return path, open(path, "xb")

    def clean_staging(self, older_than_s: float = 3600.0) -> list[Path]:
        """Remove staging files of dead processes, or older than ``older_than_s``."""
        removed: list[Path] = []
        if not self.staging_dir.exists():
            return removed
        now = time.time()
        for path in self.staging_dir.glob("*.partial"):
            pid = path.name.split("-", 1)[0]
            try:
                stale = now - path.stat().st_mtime > older_than_s or not pid_alive(int(pid))
            except (ValueError, FileNotFoundError):
                continue
            if stale:
                path.unlink(missing_ok=True)
                removed.append(path)
        return removed

    def uri(self, sha256: str) -> str:
        return URI_PREFIX + sha256

    # --- content ----------------------------------------------------------
    @abstractmethod
    def commit(self, temp: Path, sha256: str, byte_size: int) -> None:
        """Publish the staged file ``temp`` as ``sha256`` (atomically) and remove ``temp``.

        Identical content is kept once: committing a hash that exists replaces
        it with the same bytes or keeps the existing copy.
        """

    @abstractmethod
    def open_content(self, sha256: str) -> ContentStream:
        """A binary stream of the content; ``FileNotFoundError`` when it is gone."""

    @abstractmethod
    def exists(self, sha256: str) -> bool: ...

    @abstractmethod
    def delete(self, sha256: str) -> None: ...

    @abstractmethod
    def iter_content(self) -> Iterator[str]:
        """Every content hash the store holds."""

    def modified_at(self, sha256: str) -> float | None:
        """When the content was last written (epoch seconds), for gc's grace period."""
        return None

    def local_path(self, sha256: str) -> Path | None:
        """A local file with the content, when the store has one (else ``None``)."""
        return None

    # --- shared records (optional) ---------------------------------------
    def put_record(self, artifact_id: str, data: bytes) -> None:
        """Keep a copy of a record where other workers can read it (shared stores)."""

    def delete_record(self, artifact_id: str, run_id: str) -> None:
        """Take back a record kept with :meth:`put_record` (a group that could not be kept whole)."""

    def get_record(self, artifact_id: str) -> bytes | None:
        """A record another worker kept with :meth:`put_record`, or ``None``."""
        return None

    def shared_record_ids(self, run_id: str | None = None) -> list[str]:
        """Ids of records kept with :meth:`put_record` (of one run, or all)."""
        return []

    def close(self) -> None:
        """Release clients and connections."""
