"""Path checks for files going into and out of the sandbox."""

from __future__ import annotations

import posixpath

from assay.kernel.sandbox.errors import SANDBOX_PATH_INVALID, SandboxError


def sandbox_path(workdir: str, path: str, *, allow_root: bool = False) -> str:
    """``path`` (relative to ``workdir``, or absolute inside it) as a normalised absolute path.

    Refuses ``..`` components, NUL bytes, and anything outside ``workdir``.
    Symlinks are checked where the file is read, inside the sandbox.
    """
    if not isinstance(path, str) or not path or "\x00" in path:
        raise SandboxError(SANDBOX_PATH_INVALID, f"invalid sandbox path {path!r}")
    if ".." in path.replace("\\", "/").split("/"):
        raise SandboxError(
            SANDBOX_PATH_INVALID, f"{path!r} contains '..'", f"Use a path inside {workdir}."
        )
    full = posixpath.normpath(path if path.startswith("/") else posixpath.join(workdir, path))
    if full == workdir:
        if allow_root:
            return full
        raise SandboxError(
            SANDBOX_PATH_INVALID, f"{path!r} names the working directory, not a file"
        )
    if not full.startswith(workdir + "/"):
        raise SandboxError(
            SANDBOX_PATH_INVALID,
            f"{path!r} is outside the sandbox working directory {workdir}",
            f"Use a relative path or one under {workdir}.",
        )
    return full
