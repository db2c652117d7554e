"""Files in and out of a container session: the tar archives they go in as, the file helper's answers.

Files go in as tar archives the engine unpacks in the working directory,
owned and moded as the session says; they come out through the checked file
helper (:data:`.launcher.FILES_SOURCE`), whose exit codes :func:`file_result`
turns into the sandbox's error codes.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import time

from assay.kernel.sandbox.errors import (
    SANDBOX_EXEC_FAILED,
    SANDBOX_FILE_NOT_FOUND,
    SANDBOX_FILE_TOO_LARGE,
    SANDBOX_PATH_INVALID,
    SandboxError,
)


def file_archive(
    workdir: str, path: str, data: bytes, owner: str, dir_owner: str, read_only: bool
) -> bytes:
    """A tar of ``path`` (under ``workdir``) holding ``data``, owned by ``owner`` (uid:gid), mode 0444
    when ``read_only`` else 0666, with any directories on the way sticky and world-writable (owned by
    ``dir_owner``): the code may add files there but cannot remove or replace the read-only ones."""
    directory, name = posixpath.split(path)
    rel_dir = posixpath.relpath(directory, workdir)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        if rel_dir != ".":
            parts = rel_dir.split("/")
            for i in range(1, len(parts) + 1):
                info = tarfile.TarInfo("/".join(parts[:i]))
                info.type = tarfile.DIRTYPE
                info.mode = 0o1777
                info.mtime = int(time.time())
                _own(info, dir_owner)
                tar.addfile(info)
        member = "/".join([*([] if rel_dir == "." else [rel_dir]), name])
        info = tarfile.TarInfo(member)
        info.size = len(data)
        info.mode = 0o444 if read_only else 0o666
        info.mtime = int(time.time())
        _own(info, owner)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _own(info: tarfile.TarInfo, uid_gid: str) -> None:
    uid, _, gid = uid_gid.partition(":")
    info.uid, info.gid = int(uid), int(gid)
    info.uname = info.gname = ""


def tar_one(name: str, data: bytes, owner: str, mode: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = mode
        _own(info, owner)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def file_result(
    path: str, code: int | None, out: bytes, err: bytes, truncated: bool, max_bytes: int
) -> bytes:
    if code == 0 and not truncated:
        return out
    if code == 2:
        raise SandboxError(SANDBOX_FILE_NOT_FOUND, f"no file {path!r} in the sandbox")
    if code == 3 or truncated:
        raise SandboxError(
            SANDBOX_FILE_TOO_LARGE,
            f"{path!r} is larger than {max_bytes} bytes",
            "Write a smaller file (or a summary of it) and download that.",
        )
    if code == 4:
        raise SandboxError(
            SANDBOX_PATH_INVALID, f"{path!r} is a symlink or resolves outside the working directory"
        )
    if code == 5:
        raise SandboxError(SANDBOX_PATH_INVALID, f"{path!r} is not a regular file")
    raise SandboxError(
        SANDBOX_EXEC_FAILED,
        f"file helper failed for {path!r} (exit {code}): {err.decode(errors='replace')[:500]}",
    )
