"""The notebook's working set: executed INSIDE the sandbox (uploaded as ``assay_ci_pages``).

A cell runs in a fork of the notebook holder, so its first write to each page
it shares with the holder is a copy-on-write fault: several microseconds each
in a virtual machine, and a pandas cell writes thousands of such pages
(reference counts of the objects it touches, heap chunks it reuses). A
persistent process pays none of them. The pages one cell wrote are a good
guess of the pages the next one writes, so:

* at the end of a cell, while the old holder still shares its pages, the
  cell's process lists the pages it maps exclusively (``/proc/self/pagemap``:
  present and not shared - the ones it wrote or allocated), merged into
  ranges and bounded;
* once it is the holder, it forks the next cell's process ahead of time (the
  spare), and the spare copies those pages at once with
  ``madvise(MADV_POPULATE_WRITE)`` while the notebook is idle.

Nothing here changes a byte of memory: the call only breaks sharing early.
Where the kernel or the runtime lacks it (``pagemap`` flags, Linux < 5.14,
gVisor), both steps quietly do nothing and cells pay their faults as before.
"""

import ctypes
import os
import re

TYPE_CHECKING = False  # true to mypy; inside the sandbox nothing more is imported
if TYPE_CHECKING:
    from typing import Literal

PAGE = os.sysconf("SC_PAGE_SIZE")
MADV_POPULATE_WRITE = 23
# The top byte of a pagemap entry: bit 63 (0x80) page present, bit 56 (0x01) exclusively mapped.
_EXCLUSIVE = bytes(1 if (i & 0x81) == 0x81 else 0 for i in range(256))
_RUNS = re.compile(b"\x01+")
_SPECIAL = ("[vvar]", "[vdso]", "[vsyscall]", "[vvar_vclock]")
_madvise: "ctypes._NamedFuncPointer | Literal[False] | None" = None  # False: not available


def written_ranges(max_bytes: int) -> list:
    """Ranges ``(address, length)`` of the pages this process maps exclusively, at most ``max_bytes``.

    A single run longer than the budget (a large array the cell made) is left
    out: the next cell rarely rewrites it, and copying it would double it.
    """
    ranges: list[tuple[int, int]] = []
    total = 0
    try:
        with (
            open("/proc/self/maps") as maps,
            open("/proc/self/pagemap", "rb", buffering=0) as pagemap,
        ):
            for line in maps:
                fields = line.split(None, 5)
                perms = fields[1]
                if (
                    perms[1] != "w"
                    or perms[3] != "p"
                    or (len(fields) > 5 and fields[5].strip() in _SPECIAL)
                ):
                    continue
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                pagemap.seek(lo // PAGE * 8)
                marks = pagemap.read((hi - lo) // PAGE * 8)[7::8].translate(_EXCLUSIVE)
                for run in _RUNS.finditer(marks):
                    length = (run.end() - run.start()) * PAGE
                    if length > max_bytes:
                        continue
                    if total + length > max_bytes:
                        return ranges
                    ranges.append((lo + run.start() * PAGE, length))
                    total += length
    except (OSError, ValueError):
        return []
    return ranges


def populate(ranges: list, stop=None) -> int:
    """Copy those pages now (break their sharing); the bytes populated (0 where unsupported).

    ``stop`` is asked every few ranges; when it says a cell is waiting, the rest is left to the
    cell's own faults (copying ahead only pays while the notebook is idle).
    """
    global _madvise
    if not ranges:
        return 0
    if _madvise is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _madvise = libc.madvise
            _madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            _madvise.restype = ctypes.c_int
        except (OSError, AttributeError):
            _madvise = False
    if not _madvise:
        return 0
    done = 0
    for i, (address, length) in enumerate(ranges):
        if stop is not None and i % 16 == 0 and stop():
            return done
        if _madvise(address, length, MADV_POPULATE_WRITE) != 0:
            if ctypes.get_errno() == 22:  # EINVAL: the kernel has no MADV_POPULATE_WRITE
                _madvise = False
                return done
            continue  # the range changed since it was listed (unmapped, protected): skip it
        done += length
    return done


def budget(fraction: float = 0.125, ceiling: int = 16 * 1024 * 1024) -> int:
    """Bytes the spare may copy ahead: a share of the memory left under the sandbox's limit."""
    for usage_path, limit_path in (
        ("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.max"),
        (
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
        ),
    ):
        try:
            with open(usage_path) as fh:
                usage = int(fh.read())
            with open(limit_path) as fh:
                text = fh.read().strip()
        except (OSError, ValueError):
            continue
        limit = int(text) if text.isdigit() else 1 << 62
        return max(0, min(ceiling, int((limit - usage) * fraction)))
    return ceiling
