"""The engines' shape: the kernel's contract, a typed pool, one module per dialect, a guard no flag skips."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from assay import Kernel
from assay.kernel.database_engine import DatabaseEngine, DatabasePool
from assay.plugins.sql import builtin_engines
from assay.plugins.sql.engines import Pool
from assay.plugins.sql.errors import SQL_READ_ONLY_REQUIRED, SqlError
from assay.plugins.sql.resource import DatabaseResource

SQL_PLUGIN = Path(__file__).resolve().parents[2] / "plugins" / "sql"


def test_every_builtin_engine_satisfies_the_kernel_contract():
    for engine in builtin_engines():
        assert isinstance(engine, DatabaseEngine), engine
    missing = {
        engine.name: [
            m for m in dir(DatabaseEngine) if not m.startswith("_") and not hasattr(engine, m)
        ]
        for engine in builtin_engines()
    }
    assert missing == {"sqlite": [], "postgresql": [], "mysql": [], "duckdb": []}


def test_the_plugin_registers_each_engine_from_its_own_module():
    kernel = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False).start()
    try:
        registered = kernel.registry("database_engines").as_dict()
    finally:
        kernel.close()
    assert {name: type(e).__module__ for name, e in registered.items()} == {
        "sqlite": "assay.plugins.sql.engines.sqlite",
        "postgresql": "assay.plugins.sql.engines.postgres",
        "mysql": "assay.plugins.sql.engines.mysql",
        "duckdb": "assay.plugins.sql.engines.duckdb",
    }
    assert set(registered.values()) == set(builtin_engines())  # the same objects, not copies


def test_make_pool_returns_a_typed_pool_and_pins_nothing_on_sqlalchemy(engine, db):
    db.query("SELECT 1")
    pool = db.executor().pool
    assert isinstance(pool, Pool) and isinstance(pool, DatabasePool)
    assert not [a for a in vars(pool.connections) if a.startswith("_assay")]
    assert (pool.control is not None) == (engine == "mariadb")  # the KILL QUERY connection


def test_no_plugin_module_imports_another_modules_private_names():
    offenders = []
    for path in sorted(SQL_PLUGIN.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private:
                    offenders.append(
                        (path.relative_to(SQL_PLUGIN).as_posix(), node.module, private)
                    )
    assert offenders == []
    assert "_assay_" not in "".join(p.read_text() for p in SQL_PLUGIN.rglob("*.py"))


# --- the read-only check runs on every path ------------------------------------------------


def test_no_query_method_takes_a_flag_that_skips_the_check():
    for method in (DatabaseResource.query, DatabaseResource.aquery):
        assert set(inspect.signature(method).parameters) == {"self", "sql", "timeout_s", "attempt"}
    assert not {"execute", "async_execute", "check"} & set(
        vars(DatabaseResource)
    )  # databases query / aquery


def test_every_query_path_refuses_a_write(sqlite_path):
    import asyncio

    db = DatabaseResource("retail", f"sqlite:///{sqlite_path}")
    try:
        paths = {
            "query": lambda: db.query("DELETE FROM stores"),
            "query with an attempt": lambda: db.query(
                "DELETE FROM stores", attempt=db.new_attempt(5)
            ),
            "aquery": lambda: asyncio.run(db.aquery("DELETE FROM stores")),
            "the executor": lambda: db.executor().run("DELETE FROM stores", db.new_attempt(5)),
        }
        for name, call in paths.items():
            with pytest.raises(SqlError) as info:
                call()
            assert info.value.code == SQL_READ_ONLY_REQUIRED, name
        assert db.query("SELECT count(*) FROM stores").rows[0][0] == 8
    finally:
        db.close()


def test_the_check_runs_before_the_datasource_is_opened(tmp_path):
    db = DatabaseResource(
        "gone", f"duckdb:///{tmp_path / 'missing.duckdb'}"
    )  # read-only: cannot be opened
    try:
        with pytest.raises(SqlError) as refused:
            db.query("DROP TABLE orders")
        assert refused.value.code == SQL_READ_ONLY_REQUIRED
        with pytest.raises(SqlError) as unavailable:
            db.query("SELECT 1")
        assert unavailable.value.code == "SQL_DATASOURCE_UNAVAILABLE"
    finally:
        db.close()


def test_a_datasource_uses_the_kernels_registered_engines_only():
    # the engines come from the registry alone (the lazy registration), never also from a built-in list
    from assay import hookimpl
    from assay.plugins.sql import kernel_engines
    from assay.plugins.sql.engines.sqlite import SQLITE

    class OnlySqlite:
        __name__ = "only_sqlite"

        @hookimpl
        def register_database_engines(self, register):
            register(SQLITE)

    kernel = Kernel(plugins=[OnlySqlite()], load_entrypoints=False).start()
    try:
        assert kernel_engines(kernel) == [SQLITE]
    finally:
        kernel.close()
