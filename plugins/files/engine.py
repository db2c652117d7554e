"""The engine of file datasources: DuckDB's, on the datasource's own file, reading only its registered files.

URL ``assayfiles:///ASSAY_HOME/files/<key>/data.duckdb``. The database is opened read-only like any
DuckDB datasource; external access is off and the configuration locked, with ``allowed_paths`` set first
to exactly the files the views read (``manifest.json``): even a ``read_csv`` the guard missed could not
reach another file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.plugins.sql.engines.base import EngineLimits, Pool, queue_pool
from assay.plugins.sql.engines.duckdb import BOUNDS, DuckdbEngine

from .catalog import Manifest

SCHEME = "assayfiles"


class FilesEngine(DuckdbEngine):
    name = "files"
    schemes: tuple[str, ...] = (SCHEME,)
    dialect = "duckdb"

    def parse_url(self, url: str) -> Any:
        from sqlalchemy.engine import make_url

        return make_url(url)

    def make_pool(
        self, url: Any, *, pool_size: int, pool_timeout_s: float, limits: EngineLimits | None = None
    ) -> Pool:
        import duckdb

        limits = limits or EngineLimits()
        path = Path(url.database)
        manifest = Manifest.from_json((path.parent / "manifest.json").read_text())
        config: dict[str, Any] = {
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
        database = duckdb.connect(str(path), read_only=True, config=config)
        row = database.execute("SELECT current_setting('lock_configuration')").fetchone()
        assert row is not None  # a setting's SELECT has one row
        locked = row[0]
        if (
            not locked
        ):  # the first connection to this file in the process; later ones share its instance
            database.execute("SET allowed_paths = ?", [manifest.allowed_paths])
            if limits.duckdb_memory_limit_mb:
                database.execute(f"SET memory_limit = '{int(limits.duckdb_memory_limit_mb)}MB'")
            if limits.duckdb_threads:
                database.execute(f"SET threads = {int(limits.duckdb_threads)}")
            database.execute("SET enable_external_access = false")
            database.execute("SET lock_configuration = true")

        def cursor() -> Any:
            raw = database.cursor()
            BOUNDS[raw] = limits
            return raw

        return Pool(
            queue_pool(cursor, pool_size, pool_timeout_s, reset=None),
            closers=[database.close],
            limits=limits,
        )


FILES = FilesEngine()
