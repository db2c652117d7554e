"""Every sandbox session runs as uids of its own (issue 31 item 6), on each engine.

Per-uid kernel quotas (descriptors in flight, POSIX message-queue bytes,
RLIMIT_NPROC) are host-wide under runc: with one uid for every session's
code, one session could use them up for all the others, and signal through
them. The code interpreter's case (descriptors in flight) is in
tests/code_interpreter/test_session_isolation.py.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from assay.kernel.sandbox import uids
from assay.plugins.sandbox.labels import UID_BLOCK

ENGINES = ["podman", "docker@podman", "nerdctl"]

# Fills the uid's RLIMIT_MSGQUEUE with queues of the largest size an unprivileged uid may
# make (they outlive the process, in the sandbox's IPC namespace), then says how many it made.
FILL_MQUEUE = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
libc.mq_open.restype = ctypes.c_int
made, err = 0, None
for i in range(64):
    attr = Attr(0, 10, 8192, 0)
    fd = libc.mq_open(("/q%d" % i).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr))
    if fd < 0:
        err = errno.errorcode.get(ctypes.get_errno())
        break
    made += 1
print(made, err)
"""


@pytest.mark.parametrize("runtime", ENGINES)
def test_message_queue_bytes_held_by_one_session_leave_another_sessions_quota_alone(
    runtime, fresh_session
):
    filler, other = fresh_session(runtime), fresh_session(runtime)
    made, err = filler.run_code(FILL_MQUEUE).stdout.split()
    assert int(made) >= 1 and err == "EMFILE"  # its own uid's quota is used up, and the queues stay
    assert (
        other.run_code(FILL_MQUEUE).stdout.split()[0] == made
    )  # the other session has all of its own


@pytest.mark.parametrize("runtime", ENGINES)
def test_sessions_have_disjoint_uids_from_the_range(runtime, fresh_session, engine_managers):
    manager = engine_managers(runtime)
    sessions = [fresh_session(runtime) for _ in range(3)]
    low, high = uids.parse_range(manager.config.uid_range)
    seen: set[int] = set()
    for session in sessions:
        users = manager.session_users(session.id)
        ids = {int(u.split(":")[0]) for u in users} | {int(u.split(":")[1]) for u in users}
        assert len({int(u.split(":")[0]) for u in users}) == 3 and all(
            low <= i <= high for i in ids
        )
        assert not ids & seen
        seen |= ids
        assert (
            session.run_code("import os; print(os.getuid())").stdout.strip()
            == users[1].split(":")[0]
        )


def _unheld_blocks(manager, count: int) -> list[uids.UidBlock]:
    blocks: list[uids.UidBlock] = []
    while len(blocks) < count:
        block = uids.pick(manager.config.uid_range)
        if block.first not in {b.first for b in blocks} and not manager.runtime.uid_block_holders(
            block.label
        ):
            blocks.append(block)
    return blocks


@pytest.mark.parametrize("runtime", ENGINES)
def test_a_block_another_container_holds_is_not_taken(
    runtime, engine_managers, engine_cli, monkeypatch
):
    """A container of the engine labelled with a block (another process's session, an orphan) keeps it:
    the new session finds it through the engine and takes the next pick."""
    manager = engine_managers(runtime)
    # Two blocks no container holds now (a fixed pair could be held by a container of an earlier
    # test whose removal is still under way on a loaded engine).
    taken, free = _unheld_blocks(manager, 2)
    cli = engine_cli(runtime)
    holder = subprocess.run(
        [
            *cli,
            "create",
            "--label",
            f"{UID_BLOCK}={taken.label}",
            "--label",
            "assay.test=1",
            manager.config.image_python,
            "true",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert holder.returncode == 0, holder.stderr
    picks = iter([taken, free])
    monkeypatch.setattr(uids, "pick", lambda _range: next(picks))
    session = None
    try:
        session = manager.open_session()
        assert manager.session_users(session.id)[0] == free.keeper
        labels = json.loads(
            subprocess.run(
                [*cli, "container", "inspect", holder.stdout.strip()],
                capture_output=True,
                text=True,
            ).stdout
        )[0]["Config"]["Labels"]
        assert labels[UID_BLOCK] == taken.label  # the holder is still there, untouched
    finally:
        if session is not None:
            session.close()
        subprocess.run([*cli, "rm", "-f", holder.stdout.strip()], capture_output=True, timeout=120)
