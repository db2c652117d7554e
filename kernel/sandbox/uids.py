"""Each sandbox session runs as uids of its own.

Under runc the kernel keeps several quotas per uid, host-wide: descriptors
in flight over unix sockets (``SCM_RIGHTS``, capped at the sender's
``RLIMIT_NOFILE``), POSIX message-queue bytes (``RLIMIT_MSGQUEUE``), the
process count (``RLIMIT_NPROC``), inotify instances. With one fixed uid for
every session's code, one session could use them all up and make every
other session fail (and signal through the quota: a covert channel).

So every session gets a *uid block* of :data:`BLOCK` consecutive uids from
``SANDBOX_UID_RANGE``: its keeper, its code and its resident process run as
the block's first three uids (gid = uid). A block is picked at random and
recorded as a container label (:data:`assay.plugins.sandbox.labels.UID_BLOCK`).
Whether it is free is asked of the engine itself, after the container exists
(:meth:`SandboxRuntime.uid_block_holders`): a container that finds another
holder of its block is removed and the next pick tried. Two creators of one
block cannot both keep it: the one that lists second sees the other.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

BLOCK = 4  # uids per session: keeper, code, resident, one spare
# Above systemd-nspawn's container range (524288-1879048191) and below 2^31: no host
# user, subordinate-uid range or container uid mapping is expected there.
DEFAULT_RANGE = "1879048192-1880048191"
ATTEMPTS = 8
_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
UID_MAX = 2**32 - 2


def parse_range(text: str) -> tuple[int, int]:
    """``"first-last"`` (inclusive) -> (first, last); raises ValueError when it is not a usable range."""
    match = _RANGE.match(str(text))
    if not match:
        raise ValueError(f"not a uid range: {text!r} (use first-last, e.g. {DEFAULT_RANGE})")
    first, last = int(match.group(1)), int(match.group(2))
    if first < 1 or last > UID_MAX:
        raise ValueError(f"uid range {text!r} must lie within 1-{UID_MAX} (never root)")
    if last - first + 1 < BLOCK:
        raise ValueError(f"uid range {text!r} holds fewer than {BLOCK} uids (one session)")
    if first <= 65534 <= last or first <= 65533 <= last:
        raise ValueError(f"uid range {text!r} must not include nobody (65534) or 65533")
    return first, last


@dataclass(frozen=True)
class UidBlock:
    """One session's uids."""

    first: int

    def _user(self, offset: int) -> str:
        uid = self.first + offset
        return f"{uid}:{uid}"

    @property
    def keeper(self) -> str:
        return self._user(0)

    @property
    def code(self) -> str:
        return self._user(1)

    @property
    def resident(self) -> str:
        return self._user(2)

    @property
    def label(self) -> str:
        return str(self.first)


def pick(uid_range: str) -> UidBlock:
    """A block of the range, at random (whether it is free is the engine's to say)."""
    first, last = parse_range(uid_range)
    slots = (last - first + 1) // BLOCK
    return UidBlock(first + secrets.randbelow(slots) * BLOCK)


def same_container(a: str, b: str) -> bool:
    """Whether two ids name one container (engines give full or short ids)."""
    return bool(a) and bool(b) and (a.startswith(b) or b.startswith(a))
