"""The SQL plugin: databases as resources, and the read-only ``sql_query`` tool.

Engines: SQLite, DuckDB, PostgreSQL (psycopg 3) and MySQL/MariaDB (pymysql),
through SQLAlchemy 2 pools. This module stays light: SQLAlchemy, sqlglot and
the drivers load only when a datasource is first used.
"""

from __future__ import annotations

from typing import Any

from assay import Lazy, hookimpl
from assay.kernel.log import get_logger
from assay.kernel.settings import mask_url

log = get_logger("assay.sql")

__all__ = ["DatabaseResource", "SqlSettings", "open_datasource"]


def __getattr__(name: str) -> Any:  # lazy public names
    if name == "DatabaseResource":
        from .resource import DatabaseResource

        return DatabaseResource
    if name == "SqlSettings":
        from .settings import SqlSettings

        return SqlSettings
    raise AttributeError(name)


def sql_settings(settings: Any) -> Any:
    from .settings import SqlSettings

    return settings.section("sql", SqlSettings)


def kernel_engines(kernel: Any) -> list[Any]:
    """Engines registered through ``register_database_engines`` (built-ins first)."""
    from .engines import BUILTIN_ENGINES

    registries = getattr(kernel, "_registries", None) or {}
    registry = registries.get("database_engines")
    extra = [e for _, e in registry.items()] if registry is not None else []
    return list(BUILTIN_ENGINES) + [e for e in extra if e not in BUILTIN_ENGINES]


def open_datasource(name: str, url: str, *, kernel: Any = None, settings: Any = None, config: Any = None) -> Any:
    """A :class:`DatabaseResource` for ``url`` with the kernel's SQL settings and engines."""
    from .resource import DatabaseResource

    sql = sql_settings(settings or kernel.settings) if (settings or kernel) else None
    engines = kernel_engines(kernel) if kernel is not None else None
    return DatabaseResource(name, url, settings=sql, config=config, engines=engines)


# Registered lazily: SQLAlchemy, sqlglot and the engine and tool modules load on first use.
ENGINES = {"sqlite": "SQLITE", "postgresql": "POSTGRESQL", "mysql": "MYSQL", "duckdb": "DUCKDB"}
TOOLS = {"sql_query": "sql_query_tool", "list_tables": "list_tables_tool", "describe_table": "describe_table_tool"}
SETTINGS_ENV_PREFIX = "ASSAY_SQL_"


@hookimpl
def register_database_engines(register):
    for name, attr in ENGINES.items():
        register(Lazy(f"assay.plugins.sql.engines:{attr}", name=name))


@hookimpl
def register_tools(register):
    for name, factory in TOOLS.items():
        register(Lazy(f"assay.plugins.sql.tools:{factory}", name=name, factory=True))  # called with the kernel


@hookimpl
def register_resources(register, settings, kernel):
    settings.declare_section("sql", "assay.plugins.sql.settings:SqlSettings")  # for `assay config`
    if not settings.provided("sql", SETTINGS_ENV_PREFIX):
        return  # no ASSAY_SQL_* variable and no [sql] table: no datasources, nothing to check yet
    from .errors import SqlError

    sql = sql_settings(settings)
    for name, config in sql.databases.items():
        try:
            resource = open_datasource(name, config.url, kernel=kernel, settings=settings, config=config)
        except SqlError as exc:
            # One bad datasource must not take the tools (or the other datasources) down.
            log.error("sql_datasource_invalid", datasource=name, code=exc.code, message=mask_url(exc.message))
            continue
        register(resource)


@hookimpl
def register_commands(cli):
    from .cli import add_commands

    add_commands(cli)
