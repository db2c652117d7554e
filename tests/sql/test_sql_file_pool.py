"""SQLite without SQLAlchemy: the standard-library pool and URL of ``engines/file_pool.py``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from assay.plugins.sql.engines.file_pool import ConnectionPool, PoolBusy, parse_file_url
from assay.plugins.sql.execution import _connect_error
from assay.plugins.sql.resource import DatabaseResource

SCHEMES = ("sqlite", "sqlite+pysqlite")


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///shop.db",
        "sqlite:////abs/path/shop.db",
        "sqlite+pysqlite:///x.db",
        "sqlite:///a%20b.db",
        "sqlite:///dir with space/é.db",
        "sqlite:///weird+name#1.db",
        "SQLite:///Upper.db",
    ],
)
def test_sqlite_url_reads_and_renders_as_sqlalchemy_reads_and_renders_it(url):
    from sqlalchemy.engine import make_url

    ours, theirs = parse_file_url(url, SCHEMES), make_url(url)
    assert ours is not None
    assert (ours.drivername, ours.database, ours.get_backend_name()) == (
        theirs.drivername,
        theirs.database,
        theirs.get_backend_name(),
    )
    assert ours.render_as_string(hide_password=True) == theirs.render_as_string(hide_password=True)


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///",
        "sqlite:///x.db?mode=ro",
        "sqlite://host/x.db",
        "postgresql:///db",
        "sqlite:x.db",
    ],
)
def test_sqlite_urls_of_any_other_shape_are_left_to_sqlalchemy(url):
    assert parse_file_url(url, SCHEMES) is None


def test_a_sqlite_url_with_a_query_string_still_opens_through_sqlalchemy(sqlite_path):
    db = DatabaseResource("q", f"sqlite:///{sqlite_path}?timeout=5")
    try:
        assert type(db._url).__module__.startswith("sqlalchemy")
        assert db.query("SELECT 1").rows == [(1,)]
    finally:
        db.close()


def test_a_sqlite_datasource_opens_and_describes_itself_without_importing_sqlalchemy(sqlite_path):
    code = (
        "import sys, json; from assay.plugins.sql.resource import DatabaseResource; "
        f"db = DatabaseResource('r', 'sqlite:///{sqlite_path}'); tables = db.tables(); "
        "print(json.dumps({'tables': len(tables), 'url': db.url, "
        "'sqlalchemy': sorted(m for m in sys.modules if m.startswith('sqlalchemy'))})); db.close()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["tables"] > 0 and found["url"] == f"sqlite:///{sqlite_path}"
    assert found["sqlalchemy"] == []


def _pool(tmp_path, size=1, timeout_s=0.2):
    made = []

    def creator():
        conn = sqlite3.connect(tmp_path / "p.db", check_same_thread=False)
        made.append(conn)
        return conn

    return ConnectionPool(creator, pool_size=size, timeout_s=timeout_s), made


def test_a_checkout_beyond_the_pool_size_waits_then_is_sql_datasource_busy(tmp_path):
    pool, _ = _pool(tmp_path, size=1, timeout_s=0.2)
    held = pool.connect()
    started = time.monotonic()
    with pytest.raises(PoolBusy) as caught:
        pool.connect()
    assert time.monotonic() - started >= 0.19
    error = _connect_error("shop", caught.value)
    assert error.code == "SQL_DATASOURCE_BUSY" and "pool_size" in error.hint
    held.close()


def test_a_waiting_checkout_gets_the_connection_handed_back(tmp_path):
    pool, made = _pool(tmp_path, size=1, timeout_s=5)
    held = pool.connect()
    threading.Timer(0.1, held.close).start()
    again = pool.connect()
    assert again.dbapi_connection is made[0] and len(made) == 1
    again.close()


def test_a_connection_handed_back_is_rolled_back_before_reuse(tmp_path):
    pool, _ = _pool(tmp_path, size=1)
    fairy = pool.connect()
    fairy.dbapi_connection.execute("CREATE TABLE t (x)")
    fairy.dbapi_connection.execute("BEGIN")
    fairy.dbapi_connection.execute("INSERT INTO t VALUES (1)")
    fairy.close()
    fairy.close()  # a second close does nothing
    again = pool.connect()
    assert not again.dbapi_connection.in_transaction
    assert again.dbapi_connection.execute("SELECT count(*) FROM t").fetchone() == (0,)
    again.close()


def test_an_invalidated_connection_is_closed_and_frees_its_place(tmp_path):
    pool, made = _pool(tmp_path, size=1)
    fairy = pool.connect()
    fairy.invalidate()
    with pytest.raises(sqlite3.ProgrammingError):
        made[0].execute("SELECT 1")
    fresh = pool.connect()  # not PoolBusy: the place was freed
    assert fresh.dbapi_connection is made[1]
    fresh.close()


def test_dispose_closes_idle_connections_and_those_handed_back_later(tmp_path):
    pool, made = _pool(tmp_path, size=2)
    idle, busy = pool.connect(), pool.connect()
    idle.close()
    pool.dispose()
    with pytest.raises(sqlite3.ProgrammingError):
        made[0].execute("SELECT 1")
    busy.close()
    with pytest.raises(sqlite3.ProgrammingError):
        made[1].execute("SELECT 1")


def test_a_connection_that_fails_to_open_frees_its_place(tmp_path):
    calls = []

    def creator():
        calls.append(1)
        if len(calls) == 1:
            raise sqlite3.OperationalError("unable to open database file")
        return sqlite3.connect(tmp_path / "p.db", check_same_thread=False)

    pool = ConnectionPool(creator, pool_size=1, timeout_s=0.1)
    with pytest.raises(sqlite3.OperationalError):
        pool.connect()
    pool.connect().close()
