"""The files plugin: CSV/TSV, Parquet, JSON/NDJSON and Excel files as a read-only datasource.

Each file is a table of one embedded DuckDB database per datasource, owned by assay under
``ASSAY_HOME/files/``: a view over the file read in place (CSV, Parquet, JSON), or a table loaded once
(Excel). ``sql_query``, ``list_tables`` and ``describe_table`` work on it through the SQL plugin's guard
and evidence path. See docs/files.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from assay import Lazy, hookimpl
from assay.kernel.log import get_logger

log = get_logger("assay.files")

__all__ = ["attach_files", "open_files", "reopen_files"]

ENV = "ASSAY_FILES"
SETTINGS_ENV_PREFIX = "ASSAY_FILES_"


def files_settings(settings: Any) -> Any:
    from .settings import FilesSettings

    return settings.section("files", FilesSettings)


def open_files(name: str, patterns: list[str], *, kernel: Any = None, settings: Any = None) -> Any:
    """A :class:`FilesResource` named ``name`` over ``patterns`` (``path``, ``name=path``, a glob, a directory)."""
    from assay.plugins.sql import kernel_engines, sql_settings

    from .catalog import Limits
    from .resource import FilesResource
    from .sources import parse_assignments, specs_from

    settings = settings or kernel.settings
    fs = files_settings(settings)
    roots = [Path(r) for r in fs.roots] if fs.roots is not None else None
    assignments = [a for p in patterns for a in parse_assignments(p)]
    specs = specs_from(assignments, roots=roots)
    limits = Limits(
        max_columns=fs.max_columns,
        max_line_bytes=fs.max_line_bytes,
        max_excel_expanded_bytes=fs.max_excel_expanded_bytes,
    )
    engines = kernel_engines(kernel) if kernel is not None else None
    return FilesResource(
        name,
        specs,
        home=settings.home,
        limits=limits,
        settings=sql_settings(settings),
        engines=engines,
        # the kernel's knowledge bases give the tables' schema index their definitions naming a table
        knowledge=(lambda: list(kernel.resources.values())) if kernel is not None else None,
    )


def attach_files(kernel: Any, patterns: list[str], name: str | None = None) -> Any:
    """Attach ``patterns`` as one files datasource (`assay ask --file`, `assay sql --file`); returns it."""
    base = name or files_settings(kernel.settings).datasource
    chosen = base if base not in kernel.resources else f"{base}_cli"
    return kernel.attach(open_files(chosen, patterns, kernel=kernel))


def reopen_files(kernel: Any, run: Any, record: dict[str, Any]) -> Any:
    """A follow-up's files (`assay ask --continue`, `assay chat`): its parent's ``record``, each file checked
    against it (``FILE_MISSING`` / ``FILE_CHANGED`` are problems, not registered), the rest attached to
    ``run`` as one datasource named as the parent's. Returns a :class:`~.thread.Reopened`."""
    from assay.plugins.sql import kernel_engines, sql_settings

    from .catalog import Limits
    from .resource import FilesResource
    from .sources import checked
    from .thread import reopen

    fs = files_settings(kernel.settings)
    roots = [Path(r) for r in fs.roots] if fs.roots is not None else None
    limits = Limits(
        max_columns=fs.max_columns,
        max_line_bytes=fs.max_line_bytes,
        max_excel_expanded_bytes=fs.max_excel_expanded_bytes,
    )
    name = record.get("datasource") or fs.datasource
    if (
        name in kernel.resources
    ):  # a configured datasource of that name: the thread's files beside it
        name = f"{name}_thread"

    def open_specs(specs: list[Any]) -> Any:
        resource = FilesResource(
            name,
            specs,
            home=kernel.settings.home,
            limits=limits,
            settings=sql_settings(kernel.settings),
            engines=kernel_engines(kernel),
            knowledge=lambda: list(kernel.resources.values()),
        )
        return resource

    out = reopen(record, lambda f: checked(Path(f["path"]), roots), open_specs)
    if out.resource is not None:
        run.attach(out.resource)
    return out


@hookimpl
def register_database_engines(register):
    register(Lazy("assay.plugins.files.engine:FILES", name="files"))


@hookimpl
def register_resources(register, settings, kernel):
    settings.declare_section("files", "assay.plugins.files.settings:FilesSettings")
    patterns = [os.environ[ENV]] if os.environ.get(ENV, "").strip() else []
    if settings.provided("files", SETTINGS_ENV_PREFIX):
        patterns += [f"{n}={p}" for n, p in files_settings(settings).sources.items()]
    if not patterns:
        return
    from .errors import FileError

    name = files_settings(settings).datasource
    try:
        resource = open_files(name, patterns, kernel=kernel, settings=settings)
    except (
        FileError
    ) as exc:  # a bad file must not take the other datasources down; nothing is registered
        log.error("files_datasource_invalid", datasource=name, code=exc.code, message=exc.message)
        return
    register(resource)
