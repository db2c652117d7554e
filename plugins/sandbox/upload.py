"""Uploading into a sandbox through an exec, where the engine's archive copy cannot reach.

Engines copy an archive into a container by writing into its root
filesystem from the host. Two engines cannot do that for assay's sandboxes:

* the Docker Engine refuses any archive copy into a container whose root
  filesystem is read-only ("container rootfs is marked read-only"), even
  when the target is a tmpfs;
* under gVisor the sandbox's tmpfs (``/workspace``, ``/tmp``) lives inside
  gVisor's own kernel, where a host-side copy never arrives (podman's
  copier fails with "read-only file system").

So there the tar is sent over an attached exec's stdin to a small program of
assay's own (:data:`PUT_SOURCE`, run with ``python3 -I -S``), once per owner
in the tar, as that owner's uid: files keep their owners without any
capability (the sandbox has none). The program refuses members outside the
target directory and never follows a symlink; it writes each file to a
temporary name and renames it into place.
"""

from __future__ import annotations

import io
import tarfile
from typing import Any

from assay.kernel.sandbox.errors import SANDBOX_EXEC_FAILED, SandboxError

PUT_DEADLINE_S = 30.0
_DONE = b"ASSAY-PUT-"

PUT_SOURCE = r"""
import os, sys, tarfile, io
root = os.path.realpath(sys.argv[1])
inp = sys.stdin.buffer
size = int(inp.readline())
data = inp.read(size)
def fail(why):
    sys.stdout.write('ASSAY-PUT-ERR ' + why + '\n')
    sys.stdout.flush()
    sys.exit(1)
if len(data) != size:
    fail('short input')
try:
    tar = tarfile.open(fileobj=io.BytesIO(data))
    members = tar.getmembers()
except (tarfile.TarError, OSError) as exc:
    fail('bad archive: %s' % exc)
for m in members:
    name = os.path.normpath(m.name)
    if os.path.isabs(name) or name == '..' or name.startswith('../') or '\0' in name:
        fail('member outside the directory: %r' % m.name)
    target = os.path.join(root, name)
    parent = os.path.realpath(os.path.dirname(target))
    if parent != root and not parent.startswith(root + '/'):
        fail('member outside the directory: %r' % m.name)
    final = os.path.join(parent, os.path.basename(target))
    try:
        if m.isdir():
            try:
                os.mkdir(final, 0o700)
            except FileExistsError:
                pass
            if os.path.islink(final) or not os.path.isdir(final):
                fail('not a directory: %r' % m.name)
            if os.stat(final).st_uid == os.getuid():
                os.chmod(final, m.mode & 0o7777)
        elif m.isfile():
            tmp = os.path.join(parent, '.assay-put-%d' % os.getpid())
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, 'wb') as fh:
                fh.write(tar.extractfile(m).read())
            os.chmod(tmp, m.mode & 0o777)
            os.utime(tmp, (m.mtime, m.mtime))
            os.replace(tmp, final)
        else:
            fail('only files and directories: %r' % m.name)
    except OSError as exc:
        fail('%s: %s' % (m.name, exc))
sys.stdout.write('ASSAY-PUT-OK\n')
sys.stdout.flush()
"""


def by_owner(data: bytes) -> list[tuple[str, bytes]]:
    """Split a tar into ``(uid:gid, tar)`` parts, one per owner, in the order owners first appear."""
    parts: dict[str, list[tuple[tarfile.TarInfo, bytes | None]]] = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            body = tar.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            parts.setdefault(f"{member.uid}:{member.gid}", []).append((member, body))
    out = []
    for owner, members in parts.items():
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for member, body in members:
                tar.addfile(member, io.BytesIO(body) if body is not None else None)
        out.append((owner, buf.getvalue()))
    return out


def put_by_exec(session: Any, directory: str, data: bytes) -> None:
    """Unpack the tar ``data`` into ``directory`` of ``session`` (a ContainerSession) through execs."""
    from .channel import Channel, ChannelBroken
    from .launcher import PYTHON_ISOLATED, helper_env

    for owner, part in by_owner(data):
        try:
            sock, prefix = session._exec_attached(
                [*PYTHON_ISOLATED, "-c", PUT_SOURCE, directory],
                user=owner,
                workdir="/",
                env=helper_env(session.spec.environment),
            )
        except SandboxError:
            raise
        except Exception as exc:  # noqa: BLE001 - engine errors become one code
            raise SandboxError(
                SANDBOX_EXEC_FAILED, f"{session.runtime}: could not start the upload: {exc}"
            ) from None
        channel = Channel(sock, prefix)
        try:
            out, err, _, complete = channel.exchange(
                b"%d\n" % len(part) + part, _DONE, PUT_DEADLINE_S, 64 * 1024
            )
        except ChannelBroken as exc:
            raise SandboxError(
                SANDBOX_EXEC_FAILED,
                f"{session.runtime}: the upload into {directory} failed: {exc.message}",
            ) from None
        finally:
            channel.close()
        line = out[out.rfind(_DONE) :].decode("utf-8", "replace").strip()
        if not complete or line != "ASSAY-PUT-OK":
            why = line or err.decode("utf-8", "replace")[-300:] or "no answer in time"
            raise SandboxError(
                SANDBOX_EXEC_FAILED, f"{session.runtime}: could not copy into {directory}: {why}"
            )
