"""A database attached to one run (a service run's uploads) is that run's alone."""

from __future__ import annotations

import sqlite3

import pytest

from assay.kernel.context import RunContext
from assay.plugins.sql import open_datasource
from assay.plugins.sql.errors import SqlError
from assay.plugins.sql.settings import SqlSettings
from assay.plugins.sql.tools import Datasources


@pytest.fixture
def private_db(tmp_path):
    path = tmp_path / "mine.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE secret (x INTEGER)")
    return open_datasource("uploads_mine", f"sqlite:///{path}")


def test_a_run_finds_the_database_attached_to_it(private_db):
    run = RunContext()
    run.attach(private_db)
    assert Datasources(None, SqlSettings()).resolve(None, run) is private_db


def test_another_run_neither_finds_nor_is_told_the_name_of_a_database_attached_to_a_run(private_db):
    mine, theirs = RunContext(), RunContext()
    mine.attach(private_db)
    sources = Datasources(None, SqlSettings())
    assert sources.all(theirs) == {}
    with pytest.raises(SqlError) as caught:
        sources.resolve("uploads_mine", theirs)
    assert "uploads_mine" not in (caught.value.hint or "")


def test_a_database_attached_to_a_run_is_closed_with_the_run(private_db, monkeypatch):
    closed = []
    monkeypatch.setattr(private_db, "close", lambda: closed.append(True))
    run = RunContext()
    run.attach(private_db)
    run.close()
    assert closed == [True] and run.own_resources() == {}
