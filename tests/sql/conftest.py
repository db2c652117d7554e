"""Fixtures for the SQL plugin's tests: the retail data set on the four real engines.

Every server fixture creates a uniquely named schema (PostgreSQL) or database
(MariaDB) and drops it afterwards. A missing server fails in CI (``require``).

The datasources connect as least-privilege logins the fixtures create
(``pg_analyst``, ``mariadb_analyst``: SELECT on this run's schema/database,
nothing else) and drop afterwards, as an analyst's datasource would: a
superuser/root login is refused unless marked ``allow_privileged``
(``admin_url_for`` gives the superuser URL for tests of that path).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require

PG_BASE = "postgresql://127.0.0.1:5432/test"
MARIADB_BASE = "mysql://root@127.0.0.1:3306"
SCALE = 2_000  # orders; the retail generator's other tables scale with it

ENGINES = ["sqlite", "duckdb", "postgresql", "mariadb"]

# A statement per engine that runs until stopped.
RUNAWAY = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "duckdb": "SELECT count(*) FROM range(1000000000000) t(a), range(100) u(b) WHERE (a * b) % 7 = 3",
    "postgresql": "SELECT count(*) FROM generate_series(1, 1000000000000::bigint) g, generate_series(1, 10) h",
    "mariadb": "SELECT count(*) FROM seq_1_to_1000000 a, seq_1_to_1000000 b, seq_1_to_1000 c",
}


def unique(prefix: str = "assay_t") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def pg_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(PG_BASE, connect_timeout=3):
            return True
    except Exception:  # noqa: BLE001
        return False


def mariadb_available() -> bool:
    try:
        import pymysql

        pymysql.connect(host="127.0.0.1", port=3306, user="root", connect_timeout=3).close()
        return True
    except Exception:  # noqa: BLE001
        return False


def pg_admin() -> Any:
    import psycopg

    return psycopg.connect(PG_BASE, autocommit=True)


def mariadb_admin(database: str | None = None) -> Any:
    import pymysql

    return pymysql.connect(
        host="127.0.0.1", port=3306, user="root", database=database, autocommit=True
    )


@pytest.fixture(scope="session")
def sqlite_path(tmp_path_factory) -> Path:
    from examples.retail.generate import write_sqlite

    path = tmp_path_factory.mktemp("sqlite") / "retail.db"
    write_sqlite(path, orders=SCALE)
    return path


@pytest.fixture(scope="session")
def duckdb_path(tmp_path_factory) -> Path:
    from examples.retail.load import load_duckdb

    path = tmp_path_factory.mktemp("duckdb") / "retail.duckdb"
    load_duckdb(str(path), orders=SCALE)
    return path


@pytest.fixture(scope="session")
def pg_schema() -> Iterator[str | None]:
    if not pg_available():
        yield None
        return
    from examples.retail.load import load_postgres

    schema = unique()
    load_postgres(PG_BASE, schema, orders=SCALE)
    yield schema
    with pg_admin() as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def mariadb_database() -> Iterator[str | None]:
    if not mariadb_available():
        yield None
        return
    from examples.retail.load import load_mysql

    database = unique()
    load_mysql(f"{MARIADB_BASE}/{database}", orders=SCALE)
    yield database
    conn = mariadb_admin()
    try:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS `{database}`")
    finally:
        conn.close()


@pytest.fixture(scope="session")
def pg_analyst(pg_schema) -> Iterator[str | None]:
    """A least-privilege PostgreSQL login: SELECT on this run's schema, nothing else (dropped afterwards)."""
    if pg_schema is None:
        yield None
        return
    role = unique("assay_analyst")
    with pg_admin() as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'GRANT USAGE ON SCHEMA "{pg_schema}" TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{pg_schema}" TO "{role}"')
    yield role
    drop_pg_role(role)


def drop_pg_role(role: str) -> None:
    with pg_admin() as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
        )
        conn.execute(f'DROP OWNED BY "{role}"')
        conn.execute(f'DROP ROLE IF EXISTS "{role}"')


@pytest.fixture(scope="session")
def mariadb_analyst(mariadb_database) -> Iterator[str | None]:
    """A least-privilege MariaDB login: SELECT on this run's database, nothing else (dropped afterwards)."""
    if mariadb_database is None:
        yield None
        return
    user = unique("assay_an")[:32]
    create_mariadb_user(user, f"SELECT ON `{mariadb_database}`.*")
    yield user
    drop_mariadb_user(user)


def create_mariadb_user(user: str, grant: str) -> None:
    conn = mariadb_admin()
    try:
        with conn.cursor() as cur:
            for host in ("%", "localhost", "127.0.0.1"):
                cur.execute(f"CREATE USER '{user}'@'{host}'")
                cur.execute(f"GRANT {grant} TO '{user}'@'{host}'")
    finally:
        conn.close()


def drop_mariadb_user(user: str) -> None:
    conn = mariadb_admin()
    try:
        with conn.cursor() as cur:
            for host in ("%", "localhost", "127.0.0.1"):
                cur.execute(f"DROP USER IF EXISTS '{user}'@'{host}'")
    finally:
        conn.close()


def url_for(engine: str, request: pytest.FixtureRequest) -> str:
    """The datasource URL of ``engine``; the servers' as the least-privilege login."""
    if engine == "sqlite":
        return f"sqlite:///{request.getfixturevalue('sqlite_path')}"
    if engine == "duckdb":
        return f"duckdb:///{request.getfixturevalue('duckdb_path')}"
    if engine == "postgresql":
        schema = request.getfixturevalue("pg_schema")
        require(schema is not None, "PostgreSQL at 127.0.0.1:5432")
        role = request.getfixturevalue("pg_analyst")
        return f"postgresql://{role}@127.0.0.1:5432/test?options=-csearch_path%3D{schema}"
    database = request.getfixturevalue("mariadb_database")
    require(database is not None, "MariaDB at 127.0.0.1:3306")
    user = request.getfixturevalue("mariadb_analyst")
    return f"mariadb://{user}@127.0.0.1:3306/{database}"


def admin_url_for(engine: str, request: pytest.FixtureRequest) -> str:
    """The same datasource as the superuser/root login (refused unless allow_privileged)."""
    if engine == "postgresql":
        schema = request.getfixturevalue("pg_schema")
        require(schema is not None, "PostgreSQL at 127.0.0.1:5432")
        return f"{PG_BASE}?options=-csearch_path%3D{schema}"
    database = request.getfixturevalue("mariadb_database")
    require(database is not None, "MariaDB at 127.0.0.1:3306")
    return f"mariadb://root@127.0.0.1:3306/{database}"


@pytest.fixture(scope="session")
def _resources() -> Iterator[dict[str, Any]]:
    cache: dict[str, Any] = {}
    yield cache
    for resource in cache.values():
        resource.close()


@pytest.fixture(params=ENGINES)
def engine(request) -> str:
    return request.param


@pytest.fixture
def db(engine, request, _resources) -> Any:
    """A DatabaseResource named ``retail`` on ``engine`` (shared across tests)."""
    from assay.plugins.sql.resource import DatabaseResource

    url = url_for(engine, request)
    if engine not in _resources:
        _resources[engine] = DatabaseResource(
            "retail", url, config=config_for(engine, url, request)
        )
    return _resources[engine]


def config_for(engine: str, url: str, request: pytest.FixtureRequest) -> Any:
    """PostgreSQL: describe only this run's schema (other tests share the database)."""
    from assay.plugins.sql.settings import DatasourceConfig

    schemas = [request.getfixturevalue("pg_schema")] if engine == "postgresql" else None
    return DatasourceConfig(url=url, schemas=schemas)


def new_db(
    engine: str, request: pytest.FixtureRequest, name: str = "retail", **settings: Any
) -> Any:
    """A fresh DatabaseResource (the caller closes it) with SqlSettings overrides."""
    from assay.plugins.sql.resource import DatabaseResource
    from assay.plugins.sql.settings import SqlSettings

    url = url_for(engine, request)
    return DatabaseResource(
        name, url, settings=SqlSettings(**settings), config=config_for(engine, url, request)
    )


@pytest.fixture
def parser_bypassed(monkeypatch) -> None:
    """Take the read-only parser out of the way (no flag can), to prove what the database itself refuses."""
    from assay.plugins.sql import execution

    monkeypatch.setattr(
        execution, "check_read_only", lambda sql, dialect, **_: None
    )  # the text runs as sent


@pytest.fixture
def kernel() -> Any:
    """A kernel with only the SQL plugin (its evidence goes to the test's own ASSAY_HOME)."""
    from assay import Kernel

    k = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False)
    k.start()
    yield k
    k.close()


class RecordingSink:
    """Stands in for an evidence sink: records what the SQL plugin captured, in order."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.captures: list[dict[str, Any]] = []


class FakeRecord:
    def __init__(self, artifact_id: str, status: str, row_count: int) -> None:
        self.artifact_id, self.status, self.row_count = artifact_id, status, row_count

    def ref(self) -> Any:
        from assay import ArtifactRef

        return ArtifactRef(
            artifact_id=self.artifact_id, kind="sql", status=self.status, row_count=self.row_count
        )


@pytest.fixture
def recording_capture(monkeypatch) -> Any:
    """Route the plugin's one capture call to a recorder (rows consumed like a real store)."""
    from assay.plugins.sql import capture as capture_module

    def fake_capture(
        sink,
        *,
        columns,
        rows,
        sql,
        database,
        dialect,
        elapsed_ms,
        status="succeeded",
        error=None,
        column_types=None,
        decimal_text_columns=(),
        value_kinds=None,
        count_rest=False,
        submitted_sql=None,
    ):
        if sink.fail:
            raise RuntimeError("disk full")
        from decimal import Decimal

        # what the store reads: decimal text columns as the Decimal the driver would have made
        materialized = [
            [
                Decimal(v.decode() if isinstance(v, bytes) else v)
                if j in decimal_text_columns and isinstance(v, (str, bytes))
                else v
                for j, v in enumerate(r)
            ]
            for r in rows
        ]
        record = FakeRecord(f"art_{len(sink.captures) + 1}", status, len(materialized))
        sink.captures.append(
            {
                "columns": list(columns),
                "rows": materialized,
                "sql": sql,
                "submitted_sql": submitted_sql,
                "database": database,
                "dialect": dialect,
                "status": status,
                "error": error,
                "record": record,
            }
        )
        return record

    monkeypatch.setattr(capture_module, "_capture_fn", lambda: fake_capture)
    return RecordingSink
