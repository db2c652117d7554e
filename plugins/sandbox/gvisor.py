"""gVisor (``runsc``): what changes in the spec under it, and the probe that proves it runs.

Under gVisor the container's processes live inside gVisor's own kernel (the
Sentry), a user-space process on the host. Two limits therefore move:

* the engine's pids limit is the host cgroup of the whole sandbox - the
  Sentry's and the gofer's threads included, which it needs dozens of before
  any code runs (at 32 it could not start here, at 64 it could), and more for
  every task the code runs (a fork bomb held at 10 processes inside used 289
  host tasks; with a limit of 138 it took the whole sandbox down) - so under
  gVisor it is the configured limit plus :data:`SENTRY_PIDS`, a backstop for
  the sandbox as a whole;
* the per-process limit the code meets is ``RLIMIT_NPROC``, which gVisor
  enforces per uid inside its own kernel (a host kernel counts it host-wide,
  which is why it is only a backstop under runc): under gVisor it is set to
  the configured ``max_processes``.

:func:`kernel_probe` is what ``assay sandbox doctor`` calls "enforced": a
real gVisor sandbox started through the runtime, whose kernel release is
not the host's.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

#: OCI runtime names that are gVisor.
GVISOR_RUNTIMES = frozenset({"runsc"})
#: Host pids the sandbox's own gVisor processes may use beyond the configured limit.
SENTRY_PIDS = 512

_RELEASE = "import os; print(os.uname().release)"

#: What doctor says of assay's seccomp profile when gVisor is requested (measured with runsc 20221219).
SECCOMP_UNDER_GVISOR = (
    "the container's own process only: runsc does not apply it to exec'd processes "
    "(the code), whose system calls gVisor's kernel serves instead"
)


def seccomp_status(oci_runtime: str | None, applied: bool) -> bool | str:
    """Doctor's seccomp line: under gVisor say what the profile does and does not filter."""
    return SECCOMP_UNDER_GVISOR if applied and is_gvisor(oci_runtime) else applied


def is_gvisor(oci_runtime: str | None) -> bool:
    return bool(oci_runtime) and oci_runtime in GVISOR_RUNTIMES


def host_pids_limit(oci_runtime: str | None, max_processes: int) -> int:
    """The engine's pids limit for a sandbox of ``max_processes`` (plus the resident's spare)."""
    from .resident import SPARE_PIDS

    limit = max_processes + SPARE_PIDS
    return limit + SENTRY_PIDS if is_gvisor(oci_runtime) else limit


def kernel_probe(runtime: Any, oci_runtime: str = "runsc") -> tuple[bool, str]:
    """Start one sandbox under ``oci_runtime`` through ``runtime`` and read its kernel release.

    ``(True, why)`` only when the sandbox ran and reported a kernel other than
    the host's; ``(False, why)`` otherwise (never raises).
    """
    from assay.kernel.sandbox.runtime import ExecRequest

    from .labels import owner_labels
    from .spec import build_spec

    config = runtime.config.model_copy(update={"oci_runtime": oci_runtime, "timeout": 30})
    session = None
    try:
        spec = build_spec(
            config,
            language="python",
            name=f"assay-gvisor-probe-{uuid.uuid4().hex[:8]}",
            labels=owner_labels(f"gvisor_probe_{uuid.uuid4().hex[:8]}", runtime.name, 120),
        )
        session = runtime.create_session(spec)
        result = session.execute(ExecRequest(code=_RELEASE, timeout_s=30))
    except Exception as exc:  # noqa: BLE001 - the doctor reports, never crashes
        return False, f"a {oci_runtime} sandbox did not start: {' '.join(str(exc).split())[:300]}"
    finally:
        if session is not None:
            session.destroy()
    inside = (result.stdout or "").strip()
    host = os.uname().release
    if result.exit_code != 0 or not inside:
        return False, f"the {oci_runtime} probe did not run (exit {result.exit_code})"
    if inside == host:
        return False, f"the sandbox reports the host's kernel {host}: not gVisor"
    return True, f"probe: the sandbox's kernel is {inside}, the host's {host}"


def doctor_status(runtime: Any, unavailable: str | None, oci_runtime: str = "runsc") -> str:
    """What doctor says about gVisor on ``runtime``: "enforced" only when requested and a probe proved it.

    ``unavailable`` is the engine's own reason gVisor cannot be used (None when
    it might be); then no probe runs.
    """
    requested = runtime.config.oci_runtime == oci_runtime
    why = unavailable
    if why is None:
        ok, detail = kernel_probe(runtime, oci_runtime)
        if ok:
            if requested:
                return f"enforced ({detail})"
            return f"available, not requested (opt-in: SANDBOX_OCI_RUNTIME={oci_runtime}; {detail})"
        why = detail
    return ("requested, not available: " if requested else "not available: ") + why
