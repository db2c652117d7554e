"""Threads in the runs store: a run keeps the run it continues; the chain reads back; old stores migrate."""

from __future__ import annotations

import pytest

from assay import Settings
from assay.kernel.errors import AssayError
from assay.plugins.runs import RunRecord, open_store
from assay.plugins.runs.thread import resolve_parent, thread_chain

pytestmark = pytest.mark.usefixtures(
    "catalog_backend"
)  # each test on the SQLite and on the PostgreSQL catalog


def _three(store) -> None:
    store.start(RunRecord(run_id="run_t1", question="q1", started_at=1000, status="answered"))
    store.start(
        RunRecord(
            run_id="run_t2",
            question="q2",
            started_at=1001,
            status="answered",
            parent_run_id="run_t1",
        )
    )
    store.start(
        RunRecord(
            run_id="run_t3",
            question="q3",
            started_at=1002,
            status="answered",
            parent_run_id="run_t2",
        )
    )


def test_a_follow_up_records_its_parent_and_the_thread_reads_oldest_first(tmp_path):
    store = open_store(Settings.from_env(home=tmp_path))
    _three(store)
    assert (
        store.get("run_t3").parent_run_id == "run_t2" and store.get("run_t1").parent_run_id is None
    )
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
