"""Threads in the runs store: a run keeps the run it continues; the chain reads back; old stores migrate."""

from __future__ import annotations

import sqlite3

import pytest
from assay.kernel.errors import AssayError
from assay.plugins.runs import RunRecord, SQLiteRunStore, open_store
from assay.plugins.runs.thread import resolve_parent, thread_chain

from assay import Settings

pytestmark = pytest.mark.usefixtures("catalog_backend")  # each test on the SQLite and on the PostgreSQL catalog


def _three(store) -> None:
    store.start(RunRecord(run_id="run_t1", question="q1", started_at=1000, status="answered"))
    store.start(RunRecord(run_id="run_t2", question="q2", started_at=1001, status="answered", parent_run_id="run_t1"))
    store.start(RunRecord(run_id="run_t3", question="q3", started_at=1002, status="answered", parent_run_id="run_t2"))


def test_a_follow_up_records_its_parent_and_the_thread_reads_oldest_first(tmp_path):
    store = open_store(Settings.from_env(home=tmp_path))
    _three(store)
    assert store.get("run_t3").parent_run_id == "run_t2" and store.get("run_t1").parent_run_id is None
    assert [r.run_id for r in thread_chain(store, "run_t3")] == ["run_t1", "run_t2", "run_t3"]
    assert [r.run_id for r in store.children("run_t1")] == ["run_t2"]


def test_a_loop_in_the_links_ends_the_chain(tmp_path):
    store = open_store(Settings.from_env(home=tmp_path))
    store.start(RunRecord(run_id="run_a", question="a", started_at=1, parent_run_id="run_b"))
    store.start(RunRecord(run_id="run_b", question="b", started_at=2, parent_run_id="run_a"))
    assert [r.run_id for r in thread_chain(store, "run_b")] == ["run_a", "run_b"]


def test_continue_last_is_the_newest_ended_run_and_an_unknown_id_has_a_code(tmp_path):
    store = open_store(Settings.from_env(home=tmp_path))
    _three(store)
    assert resolve_parent(store, "last").run_id == "run_t3"
    with pytest.raises(AssayError) as caught:
        resolve_parent(store, "run_nope")
    assert caught.value.code == "THREAD_PARENT_NOT_FOUND"


def test_a_schema_1_sqlite_store_gains_the_parent_column_in_place(tmp_path, catalog_backend):
    if catalog_backend != "sqlite":
        pytest.skip("the in-place migration of a SQLite file")
    path = tmp_path / "runs.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE runs (run_id TEXT PRIMARY KEY, question TEXT NOT NULL, model TEXT NOT NULL DEFAULT '',
          status TEXT NOT NULL DEFAULT 'running', status_reason TEXT NOT NULL DEFAULT '', error TEXT, answer TEXT,
          steps INTEGER NOT NULL DEFAULT 0, tool_calls INTEGER NOT NULL DEFAULT 0,
          artifact_ids TEXT NOT NULL DEFAULT '[]', prompt_tokens INTEGER NOT NULL DEFAULT 0,
          completion_tokens INTEGER NOT NULL DEFAULT 0, started_at REAL NOT NULL, ended_at REAL, pid INTEGER,
          host TEXT NOT NULL DEFAULT '', summary TEXT NOT NULL DEFAULT '{}');
        INSERT INTO runs (run_id, question, started_at, status) VALUES ('run_old', 'old', 1, 'answered');
        PRAGMA user_version = 1;""")
    conn.close()
    store = SQLiteRunStore(path)
    assert store.get("run_old").parent_run_id is None
    store.start(RunRecord(run_id="run_new", question="new", started_at=2, parent_run_id="run_old"))
    assert [r.run_id for r in thread_chain(store, "run_new")] == ["run_old", "run_new"]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
