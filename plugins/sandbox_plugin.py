"""The ``sandbox`` plugin: the sandbox manager as the kernel's ``sandbox`` subsystem.

``kernel.sandbox`` (:class:`assay.plugins.sandbox.SandboxManager`: sessions,
locks, TTLs, the reaper, clean-up) is made on first use on the kernel's
registered runtimes, closed by ``kernel.close()`` and made again on the next
use. The runtimes' contract and the fail-closed selection stay in the kernel
(:mod:`assay.kernel.sandbox.selection`); this module only names the manager, so
start-up imports none of it.
"""

from __future__ import annotations

from assay import hookimpl
from assay.kernel.subsystems import Subsystem


@hookimpl
def register_subsystems(register):
    register(Subsystem("sandbox", "assay.plugins.sandbox.manager:SandboxManager.for_kernel"))
