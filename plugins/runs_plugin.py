"""The ``runs`` plugin: the runs store as the kernel's ``runs`` subsystem, and ``assay runs``.

``kernel.runs`` (every agent run's record and transcript, :mod:`assay.plugins.runs`)
is made on first use from the kernel's settings and closed with the kernel;
this module only names it, so start-up imports none of the store.
"""

from __future__ import annotations

from assay import hookimpl
from assay.kernel.subsystems import Subsystem


@hookimpl
def register_subsystems(register):
    register(Subsystem("runs", "assay.plugins.runs:store_for_kernel"))


@hookimpl
def register_commands(cli):
    from assay.plugins.runs.cli import runs_group

    cli.add_command(runs_group)
