"""The runs store's schema 2 (a run's parent) reached in place from a schema-1 SQLite file."""

from __future__ import annotations

import sqlite3

from assay.plugins.runs.records import RunRecord
from assay.plugins.runs.store import SQLiteRunStore
from assay.plugins.runs.thread import thread_chain


def test_a_schema_1_sqlite_store_gains_the_parent_column_in_place(tmp_path):
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
