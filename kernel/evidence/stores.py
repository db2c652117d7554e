"""Choosing the content store and opening a run's sink.

``ASSAY_ARTIFACT_STORE`` (default ``local``) names a store registered with
``register_artifact_stores``. Each kernel keeps one catalog per store; the
store itself is not touched until the first capture or read.
"""

from __future__ import annotations

import importlib
import threading
import weakref
from typing import Any

from .capture import ArtifactSink
from .catalog import ArtifactCatalog
from .errors import ARTIFACT_STORE_UNAVAILABLE, ARTIFACT_STORE_UNKNOWN, ArtifactError
from .settings import evidence_settings

_catalogs: weakref.WeakKeyDictionary[Any, ArtifactCatalog] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def store_class(kernel: Any, name: str):
    cls = kernel.registry("artifact_stores").get(name)
    if cls is None and name == "local":
        # a kernel started without entry points still gets the default store
        cls = importlib.import_module("assay.plugins.artifact_stores.local_store").LocalContentStore
    if cls is None:
        known = sorted(kernel.registry("artifact_stores")) or ["local"]
        raise ArtifactError(ARTIFACT_STORE_UNKNOWN, f"no artifact store {name!r}",
                            f"Set ASSAY_ARTIFACT_STORE to one of: {', '.join(known)}.")
    return cls


NO_STORE = "none"


def get_catalog(kernel: Any) -> ArtifactCatalog:
    """The kernel's catalog on the configured store (created once per kernel)."""
    if evidence_settings(kernel.settings).store == NO_STORE:
        raise ArtifactError(ARTIFACT_STORE_UNAVAILABLE, "evidence capture is switched off (ASSAY_ARTIFACT_STORE=none)",
                            "There is no evidence to read; set ASSAY_ARTIFACT_STORE=local to keep some.")
    with _lock:
        catalog = _catalogs.get(kernel)
        if catalog is None:
            name = evidence_settings(kernel.settings).store
            store = store_class(kernel, name)(kernel.settings)
            catalog = ArtifactCatalog(store)
            _catalogs[kernel] = catalog
        return catalog


def open_sink(kernel: Any, run_id: str) -> ArtifactSink | None:
    """The run's artifact sink on the configured store; ``None`` when the store is ``none``."""
    if evidence_settings(kernel.settings).store == NO_STORE:
        return None
    return ArtifactSink(get_catalog(kernel), run_id, evidence_settings(kernel.settings))
