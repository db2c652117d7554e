"""The ``local_store`` plugin: registers the default artifact store, ``local``.

Thin on purpose (kernel start-up imports it): the store itself,
:class:`assay.plugins.artifact_stores.local_store.LocalContentStore`, loads when
evidence is first captured or read.
"""

from __future__ import annotations

from typing import Any

from assay import Lazy, hookimpl


def __getattr__(name: str) -> Any:  # the class, for code that imports it from here
    if name == "LocalContentStore":
        from .local_store import LocalContentStore

        return LocalContentStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def register_artifact_stores(register):
    register(Lazy("assay.plugins.artifact_stores.local_store:LocalContentStore", name="local"))
