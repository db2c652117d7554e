"""The SQL engines, one module per dialect: ``sqlite``, ``postgres``, ``mysql``, ``duckdb``.

Each module holds its engine's read-only pool, per-statement setup, cancel,
streaming and type handling; :mod:`.base` holds what they share. Every
engine satisfies :class:`assay.kernel.database_engine.DatabaseEngine` and is
registered through ``register_database_engines`` (the plugin registers
``Lazy("assay.plugins.sql.engines.sqlite:SQLITE")`` and its siblings), so an
engine's module is imported when a datasource first needs it, never all of
them here; the drivers load only when a pool is made.
"""

from __future__ import annotations

from .base import Pool, SqlEngine

__all__ = ["Pool", "SqlEngine"]
