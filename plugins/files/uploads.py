"""Files uploaded to the service, per owner: ``ASSAY_HOME/uploads/<owner key>/<file id>/<name>``.

An upload is streamed to disk in chunks (never held whole in memory), counted against
``max_upload_bytes`` as it arrives, hashed on the way, then registered exactly as a local file is (the
same checks and codes). A file that fails any check is deleted: nothing half-registered. An owner sees
only their own files; another owner's id is answered like an unknown one.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import FILE_NAME_INVALID, FILE_NOT_FOUND, FILE_TOO_LARGE, FileError
from .formats import format_of
from .sources import table_name_for

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._()+-]{0,200}$")


@dataclass
class Upload:
    file_id: str
    name: str
    table: str
    size: int
    sha256: str
    format: str
    created_at: float
    tables: list[str] = field(default_factory=list)

    def public(self) -> dict[str, Any]:
        return asdict(self)


def check_upload_name(name: str) -> str:
    """The client's file name, refused when it could name a path (``../``, a slash, a hidden file)."""
    if not name or "/" in name or "\\" in name or ".." in name or not _SAFE.match(name):
        raise FileError(
            FILE_NAME_INVALID,
            f"upload name {name[:100]!r} is not a plain file name",
            "Send a file name without directories, e.g. sales.csv.",
        )
    format_of(Path(name))  # FILE_FORMAT_UNKNOWN before a byte is stored
    return name


class UploadStore:
    def __init__(self, home: Path, *, max_bytes: int) -> None:
        self.root = Path(home) / "uploads"
        self.max_bytes = max_bytes

    def _owner_dir(self, owner: str) -> Path:
        return self.root / hashlib.sha256(owner.encode()).hexdigest()[:24]

    async def save(
        self, owner: str, name: str, chunks: AsyncIterator[bytes], register: Any
    ) -> Upload:
        """Store the upload and ``register(path, table)`` it (which raises FileError for a bad file)."""
        check_upload_name(name)
        file_id = "file_" + uuid.uuid4().hex[:20]
        folder = self._owner_dir(owner) / file_id
        folder.mkdir(parents=True)
        path = folder / name
        digest, size = hashlib.sha256(), 0
        try:
            with open(path, "wb") as out:
                async for chunk in chunks:
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise FileError(
                            FILE_TOO_LARGE,
                            f"{name}: larger than the upload limit of {self.max_bytes:,} bytes",
                            "Ask the operator to raise "
                            "ASSAY_FILES_MAX_UPLOAD_BYTES, or upload a smaller file.",
                        )
                    digest.update(chunk)
                    out.write(chunk)
            table = table_name_for(path)
            fmt = format_of(path)[0]
            tables = register(path, table)
            upload = Upload(
                file_id, name, table, size, digest.hexdigest(), fmt, time.time(), tables
            )
            (folder / "upload.json").write_text(json.dumps(upload.public()))
            return upload
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def list(self, owner: str) -> list[Upload]:
        folder = self._owner_dir(owner)
        out = []
        for meta in sorted(folder.glob("file_*/upload.json")) if folder.exists() else []:
            out.append(Upload(**json.loads(meta.read_text())))
        return sorted(out, key=lambda u: u.created_at)

    def get(self, owner: str, file_id: str) -> tuple[Upload, Path]:
        if not re.fullmatch(r"file_[0-9a-f]{20}", file_id or ""):
            raise self._missing(file_id)
        meta = self._owner_dir(owner) / file_id / "upload.json"
        if not meta.exists():
            raise self._missing(file_id)
        upload = Upload(**json.loads(meta.read_text()))
        return upload, meta.parent / upload.name

    def delete(self, owner: str, file_id: str) -> Upload:
        upload, path = self.get(owner, file_id)
        shutil.rmtree(path.parent, ignore_errors=True)
        return upload

    @staticmethod
    def _missing(file_id: str) -> FileError:
        return FileError(FILE_NOT_FOUND, f"no file {file_id!r}", "List your files with GET /files.")
