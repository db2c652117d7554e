"""The ``local_store`` plugin: registers the default artifact store, ``local``.

The store itself, :class:`assay.kernel.evidence.local_store.LocalContentStore`,
lives in the kernel (the kernel falls back to it by name, also without this
plugin); registering it here lists it in ``assay plugins`` beside the other
stores. It loads when evidence is first captured or read.
"""

from __future__ import annotations

from assay import Lazy, hookimpl


@hookimpl
def register_artifact_stores(register):
    register(Lazy("assay.kernel.evidence.local_store:LocalContentStore", name="local"))
