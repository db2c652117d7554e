"""The SQL plugin: databases as resources, and the read-only ``sql_query`` tool.

Engines: SQLite, DuckDB, PostgreSQL (psycopg 3) and MySQL/MariaDB (pymysql),
through SQLAlchemy 2 pools, one module each under ``engines/``. This module
stays light: the engines and tools are registered as ``Lazy`` entries, and
SQLAlchemy, sqlglot and the drivers load only when a datasource is first used.
Import ``DatabaseResource`` from :mod:`.resource` and ``SqlSettings`` from
:mod:`.settings`.
"""

from __future__ import annotations

from typing import Any

from assay import Lazy, hookimpl
from assay.kernel.log import get_logger
from assay.kernel.settings import mask_url

log = get_logger("assay.sql")

__all__ = ["attach_url", "open_datasource"]


def sql_settings(settings: Any) -> Any:
    from .settings import SqlSettings

    return settings.section("sql", SqlSettings)


def kernel_engines(kernel: Any) -> list[Any]:
    """Engines registered through ``register_database_engines``, in registration order
    (this plugin's own first: assay's plugins load first).

    Safe from inside a register hook: the registry is then the one filled so far.
    """
    return [engine for _, engine in kernel.registry("database_engines").items()]


def builtin_engines() -> tuple[Any, ...]:
    """The built-in engines, loaded through the same ``Lazy`` entries the plugin registers (the same
    objects): what a :class:`DatabaseResource` made without a kernel uses."""
    return tuple(_engine(name, target).load() for name, target in ENGINES.items())


def _engine(name: str, target: str) -> Lazy:
    return Lazy(f"assay.plugins.sql.engines.{target}", name=name)


def open_datasource(
    name: str, url: str, *, kernel: Any = None, settings: Any = None, config: Any = None
) -> Any:
    """A :class:`DatabaseResource` for ``url`` with the kernel's SQL settings and engines."""
    from .resource import DatabaseResource

    source = settings or (kernel.settings if kernel is not None else None)
    sql = sql_settings(source) if source is not None else None
    engines = kernel_engines(kernel) if kernel is not None else None
    home = getattr(source, "home", None)  # the schema index lives under ASSAY_HOME/schema/
    # the kernel's knowledge bases give the schema index their definitions naming a table
    knowledge = (lambda: list(kernel.resources.values())) if kernel is not None else None
    return DatabaseResource(
        name, url, settings=sql, config=config, engines=engines, home=home, knowledge=knowledge
    )


def attach_url(kernel: Any, url: str, allow_privileged: bool = False) -> Any:
    """Attach the database at ``url`` to ``kernel`` (`assay ask --db URL`); the same database
    attached before (same URL) is returned instead of a twin. Nothing connects yet."""
    from .settings import DatasourceConfig, name_for_url

    name = name_for_url(url)
    if name in kernel.resources:
        name = f"{name}_cli"
    config = DatasourceConfig(url=url, allow_privileged=allow_privileged)
    resource = open_datasource(name, url, kernel=kernel, config=config)
    for existing in kernel.resources.values():
        if (
            getattr(existing, "url", None) == resource.url
            and getattr(existing, "type", None) == "database"
        ):
            return existing
    return kernel.attach(resource)


# Registered lazily: SQLAlchemy, sqlglot and the engine and tool modules load on first use.
ENGINES = {
    "sqlite": "sqlite:SQLITE",
    "postgresql": "postgres:POSTGRESQL",
    "mysql": "mysql:MYSQL",
    "duckdb": "duckdb:DUCKDB",
}
TOOLS = {
    "sql_query": "sql_query_tool",
    "list_tables": "list_tables_tool",
    "describe_table": "describe_table_tool",
}
SETTINGS_ENV_PREFIX = "ASSAY_SQL_"


@hookimpl
def register_database_engines(register):
    for name, target in ENGINES.items():
        register(_engine(name, target))


@hookimpl
def register_tools(register):
    for name, factory in TOOLS.items():
        register(
            Lazy(f"assay.plugins.sql.tools:{factory}", name=name, factory=True)
        )  # called with the kernel


@hookimpl
def register_resources(register, settings, kernel):
    settings.declare_section("sql", "assay.plugins.sql.settings:SqlSettings")  # for `assay config`
    if not settings.provided("sql", SETTINGS_ENV_PREFIX):
        return  # no ASSAY_SQL_* variable and no [sql] table: no datasources, nothing to check yet
    from .errors import SqlError

    sql = sql_settings(settings)
    for name, config in sql.databases.items():
        try:
            resource = open_datasource(
                name, config.url, kernel=kernel, settings=settings, config=config
            )
        except SqlError as exc:
            # One bad datasource must not take the tools (or the other datasources) down.
            log.error(
                "sql_datasource_invalid",
                datasource=name,
                code=exc.code,
                message=mask_url(exc.message),
            )
            continue
        register(resource)


@hookimpl
def register_commands(cli):
    from .cli import add_commands

    add_commands(cli)
