"""assay's own seccomp profile: the one every container sandbox runs under.

The profile (``seccomp.json`` next to this module, shipped as package data)
is an allow-list in the OCI/Docker JSON format: any system call it does not
name fails with ``EPERM``. It is written for what analysis code needs
(Python, numpy/OpenBLAS threads, pandas, matplotlib, subprocesses, loopback
sockets) and leaves out, among others:

* new namespaces: ``unshare``, ``setns``, ``clone`` with a ``CLONE_NEW*``
  flag (``clone3`` answers ``ENOSYS`` so libc falls back to ``clone``,
  whose flags the filter can see);
* the kernel keyring: ``add_key``, ``request_key``, ``keyctl`` (it is
  shared by every process of a uid, so by every sandbox);
* other processes' memory: ``ptrace``, ``process_vm_readv/writev``,
  ``pidfd_getfd``, ``kcmp``, ``process_madvise``;
* socket families other than ``AF_UNIX``, ``AF_INET``, ``AF_INET6``
  (``AF_VSOCK``, ``AF_NETLINK``, ``AF_PACKET``, ``AF_ALG``...);
* Linux AIO (``io_setup``, ``io_submit`` and the rest of the family): its
  contexts count against ``fs.aio-max-nr``, one quota for the whole host, and
  a call could hold a share of it after it returned;
* ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``, mounts
  and the new mount API, ``pivot_root``, ``chroot``, modules, ``kexec``,
  ``reboot``, clocks, swap, quotas, ``syslog``, ``personality`` changes;
* 32-bit system calls (only the 64-bit x86 and ARM ABIs are listed).

Engines take it as a file (podman, nerdctl, the docker CLI: ``--security-opt
seccomp=PATH``; podman's Docker-compatible API: the path) or as its text
(the Docker Engine API). :func:`applied` checks a created container's
inspect output for it.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

PROFILE_PATH = Path(__file__).resolve().with_name("seccomp.json")

# What the profile denies, by reason (for `assay sandbox doctor` and the docs).
DENIED: dict[str, tuple[str, ...]] = {
    "new namespaces": (
        "unshare",
        "setns",
        "clone with CLONE_NEW* flags",
        "clone3 (ENOSYS: libc falls back to clone)",
    ),
    "kernel keyring": ("add_key", "request_key", "keyctl"),
    "other processes": (
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "pidfd_getfd",
        "kcmp",
        "process_madvise",
    ),
    "socket families": (
        "all but AF_UNIX, AF_INET, AF_INET6 (AF_VSOCK, AF_NETLINK, AF_PACKET, AF_ALG, ...)",
    ),
    "kernel attack surface": (
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "io_uring_setup/enter/register",
    ),
    "host-wide quotas": (
        "io_setup/io_submit/io_getevents/io_pgetevents/io_cancel/io_destroy (fs.aio-max-nr)",
    ),
    "mounts and roots": (
        "mount",
        "umount2",
        "fsopen/fsmount/move_mount/open_tree",
        "pivot_root",
        "chroot",
    ),
    "host administration": (
        "init/finit/delete_module",
        "kexec_load",
        "reboot",
        "swapon/swapoff",
        "quotactl",
        "syslog",
        "acct",
        "settimeofday/clock_settime/adjtimex",
        "sethostname",
    ),
    "legacy ABIs": ("32-bit system calls", "personality changes", "modify_ldt"),
}


@lru_cache(maxsize=1)
def profile_text() -> str:
    return PROFILE_PATH.read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def profile() -> dict[str, Any]:
    return json.loads(profile_text())


def digest() -> str:
    """A short fingerprint of the profile (what doctor shows)."""
    return hashlib.sha256(json.dumps(profile(), sort_keys=True).encode()).hexdigest()[:16]


def security_opt(*, as_text: bool = False) -> str:
    """The ``--security-opt`` value: the file's path, or the profile itself (Docker Engine API)."""
    return "seccomp=" + (
        json.dumps(profile(), separators=(",", ":")) if as_text else str(PROFILE_PATH)
    )


def applied(security_opts: list[Any] | None) -> bool:
    """True when a container's inspected ``SecurityOpt`` carries this profile (by path or by content)."""
    found = [
        str(o)[len("seccomp=") :] for o in security_opts or [] if str(o).startswith("seccomp=")
    ]
    if len(found) != 1:
        return False
    value = found[0].strip()
    if value.startswith("{"):
        try:
            return json.loads(value) == profile()
        except ValueError:
            return False
    try:
        return (
            Path(value).resolve() == PROFILE_PATH
            and json.loads(Path(value).read_text()) == profile()
        )
    except (OSError, ValueError):
        return False


def summary() -> str:
    return f"assay profile {digest()} (allow-list; denies " + ", ".join(DENIED) + ")"


def _rules(rules: list[dict[str, Any]] | None) -> set[tuple[Any, ...]]:
    out = set()
    for rule in rules or []:
        args = tuple(
            sorted(
                (a.get("index"), a.get("value"), a.get("valueTwo", 0), a.get("op"))
                for a in rule.get("args") or []
            )
        )
        errno_ret = rule.get("errnoRet") if rule.get("action") == "SCMP_ACT_ERRNO" else None
        for name in rule.get("names") or []:
            out.add((name, rule.get("action"), args, errno_ret))
    return out


def oci_mismatch(linux_seccomp: dict[str, Any] | None) -> str | None:
    """Why an OCI runtime spec's ``linux.seccomp`` is not this profile (None when it is).

    This is what the OCI runtime will load, so it proves more than an
    inspect field: the engine may record an option it never applied.
    """
    if not linux_seccomp:
        return "the OCI spec has no seccomp filter"
    mine = profile()
    if linux_seccomp.get("defaultAction") != mine["defaultAction"]:
        return f"its default action is {linux_seccomp.get('defaultAction')!r}"
    if linux_seccomp.get("defaultErrnoRet", 1) != mine["defaultErrnoRet"]:
        return "its default errno differs"
    theirs, ours = _rules(linux_seccomp.get("syscalls")), _rules(mine["syscalls"])
    if theirs != ours:
        extra = sorted({r[0] for r in theirs - ours})[:10]
        missing = sorted({r[0] for r in ours - theirs})[:10]
        return f"its rules differ (extra: {extra}, missing: {missing})"
    return None


def oci_config_problem(path: str | None) -> str | None:
    """Read an engine's OCI runtime spec (``config.json``) and check its filter (None when it is this profile)."""
    if not path:
        return "the engine did not name the container's OCI spec"
    try:
        with open(path, encoding="utf-8") as fh:
            linux = json.load(fh).get("linux") or {}
    except (OSError, ValueError) as exc:
        return f"the OCI spec {path} could not be read ({exc}); run assay as the engine's user"
    return oci_mismatch(linux.get("seccomp"))
