"""Runs: every agent run's record and transcript, kept as it goes, read back by ``assay runs``.

:mod:`.store` (the interface and its SQL backend: SQLite or PostgreSQL), :mod:`.records` (what
is kept), :mod:`.recorder` (the agent observer that writes a run),
:mod:`.export` (a verifiable zip of one run).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .recorder import RunRecorder
from .records import RunEvent, RunRecord
from .store import RunStore, SQLiteRunStore, SQLRunStore

if TYPE_CHECKING:
    from assay.kernel.settings import Settings

__all__ = [
    "RunEvent",
    "RunRecord",
    "RunRecorder",
    "RunStore",
    "SQLRunStore",
    "SQLiteRunStore",
    "open_store",
    "store_for_kernel",
    "store_path",
]


def store_path(settings: Settings) -> Path:
    return Path(settings.home) / "runs" / "runs.sqlite3"


def open_store(settings: Settings) -> RunStore:
    """The runs store of these settings: a SQLite file under ASSAY_HOME, or ``ASSAY_CATALOG_URL``'s database."""
    from assay.kernel.database import catalog_url, open_database

    if not catalog_url(settings):
        return SQLiteRunStore(store_path(settings))
    return SQLRunStore(open_database(settings, store_path(settings), owner="runs"))


def store_for_kernel(kernel: Any) -> RunStore:
    """``kernel.runs``: the runs store of the kernel's settings (the ``runs`` plugin's subsystem)."""
    return open_store(kernel.settings)
