"""The SQL engines, one module per dialect: ``sqlite``, ``postgres``, ``mysql``, ``duckdb``.

Each module holds its engine's read-only pool, per-statement setup, cancel,
streaming and type handling; :mod:`.base` holds what they share. Every
engine satisfies :class:`assay.kernel.database_engine.DatabaseEngine` and is
registered through ``register_database_engines`` (the plugin registers
``Lazy("assay.plugins.sql.engines.sqlite:SQLITE")`` and its siblings). The
drivers load only when a pool is made.
"""

from __future__ import annotations

from .base import Pool, SqlEngine
from .duckdb import DUCKDB
from .mysql import MYSQL
from .postgres import POSTGRESQL
from .sqlite import SQLITE

BUILTIN_ENGINES: tuple[SqlEngine, ...] = (SQLITE, POSTGRESQL, MYSQL, DUCKDB)

__all__ = ["BUILTIN_ENGINES", "Pool", "SqlEngine"]
