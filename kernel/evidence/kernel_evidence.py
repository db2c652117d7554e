"""A kernel's evidence: the configured store's catalog, and a sink per run.

``ASSAY_ARTIFACT_STORE`` (default ``local``) names a store registered with
``register_artifact_stores``; ``none`` switches capture off. Each kernel owns
one :class:`KernelEvidence` (``kernel.evidence``, made on first use, closed
by ``kernel.close()``) and through it one catalog; the store itself is not
touched until the first capture or read.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .catalog import ArtifactCatalog
from .content_store import ContentStore
from .errors import ARTIFACT_STORE_UNAVAILABLE, ARTIFACT_STORE_UNKNOWN, ArtifactError
from .local_store import LocalContentStore
from .settings import evidence_settings
from .sink import ArtifactSink

if TYPE_CHECKING:
    from assay.kernel.protocols import KernelAPI

NO_STORE = "none"  # ASSAY_ARTIFACT_STORE=none: nothing is captured
DEFAULT_STORE = "local"


class KernelEvidence:
    """One kernel's evidence store: its catalog and the sinks its runs capture into."""

    def __init__(self, kernel: KernelAPI) -> None:
        self._kernel = kernel
        self._catalog: ArtifactCatalog | None = None
        self._lock = threading.Lock()

    @property
    def store_name(self) -> str:
        """The configured store (``ASSAY_ARTIFACT_STORE``), read at each use."""
        return evidence_settings(self._kernel.settings).store

    @property
    def enabled(self) -> bool:
        """False when ``ASSAY_ARTIFACT_STORE=none``."""
        return self.store_name != NO_STORE

    @property
    def catalog(self) -> ArtifactCatalog:
        """The catalog on the configured store (created once per kernel)."""
        if not self.enabled:
            raise ArtifactError(
                ARTIFACT_STORE_UNAVAILABLE,
                "evidence capture is switched off (ASSAY_ARTIFACT_STORE=none)",
                "There is no evidence to read; set ASSAY_ARTIFACT_STORE=local to keep some.",
            )
        with self._lock:
            if self._catalog is None:
                store = self.store_class(self.store_name)(self._kernel.settings)
                self._catalog = ArtifactCatalog(store)
            return self._catalog

    def open_sink(self, run_id: str) -> ArtifactSink | None:
        """The run's artifact sink on the configured store; ``None`` when the store is ``none``."""
        if not self.enabled:
            return None
        return ArtifactSink(self.catalog, run_id, evidence_settings(self._kernel.settings))

    def store_class(self, name: str) -> type[ContentStore]:
        """The store class registered as ``name``; ``local`` is always there."""
        registry = self._kernel.registry("artifact_stores")
        cls = registry.get(name)
        if cls is None and name == DEFAULT_STORE:
            # a kernel started without entry points (or without the local_store plugin) keeps the default

            cls = LocalContentStore
        if cls is None:
            known = sorted(registry) or [DEFAULT_STORE]
            raise ArtifactError(
                ARTIFACT_STORE_UNKNOWN,
                f"no artifact store {name!r}",
                f"Set ASSAY_ARTIFACT_STORE to one of: {', '.join(known)}.",
            )
        return cls

    def close(self) -> None:
        """Close the catalog's connection (this thread's) and the store's clients; both reopen on use."""
        with self._lock:
            catalog = self._catalog
        if catalog is not None:
            catalog.close()
            catalog.store.close()
