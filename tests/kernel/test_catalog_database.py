"""The catalog database: SQLite by default, PostgreSQL with ASSAY_CATALOG_URL; several processes writing at once.

The concurrency tests start 4 processes (``spawn``: nothing inherited) that
write into one catalog, one runs store and one report state at the same time,
then count: every record is there once, none is missing, none is doubled.
They run on both backends (``catalog_backend``).
"""

from __future__ import annotations

import multiprocessing
import os
import socket
from pathlib import Path

import pytest

from assay import Kernel, Settings
from assay.kernel.database import (
    CATALOG_SCHEMA_NEWER,
    CATALOG_UNAVAILABLE,
    CATALOG_URL_INVALID,
    CatalogError,
    SQLiteDatabase,
    open_database,
)
from tests.conftest import imported_by
from tests.evidence.conftest import EVIDENCE_PLUGINS


def make_kernel(**settings_overrides) -> Kernel:
    """The evidence tests' kernel, with the runs plugin (``kernel.runs``)."""
    return Kernel(
        load_entrypoints=False,
        plugins=[*EVIDENCE_PLUGINS, "assay.plugins.runs_plugin"],
        settings=Settings.from_env(**settings_overrides),
    )


PROCS, PER_PROC = 4, 40


# --- choosing the backend, and its errors ---------------------------------------------


def test_without_a_url_every_store_is_a_sqlite_file_under_assay_home(assay_env):
    kernel = make_kernel()
    try:
        catalog, runs = kernel.evidence.catalog, kernel.runs
        assert (
            isinstance(catalog.db, SQLiteDatabase)
            and catalog.path == assay_env / "artifacts" / "catalog.sqlite"
        )
        assert runs.db.path == assay_env / "runs" / "runs.sqlite3"
    finally:
        kernel.close()


def test_kernel_start_up_imports_no_postgresql_driver():
    code = (
        "from assay import Kernel\nk = Kernel(load_entrypoints=False, plugins=['assay.plugins.runs_plugin']); k.start()\n"
        "k.runs.list(); import assay.kernel.evidence as e; e.ArtifactCatalog"
    )
    assert imported_by(code, ["psycopg", "sqlalchemy", "assay.kernel.database_pg"]) == []


@pytest.mark.parametrize(
    "url", ["mysql://root@127.0.0.1/test", "sqlite:///tmp/x.db", "127.0.0.1:5432"]
)
def test_a_url_that_is_not_postgresql_is_refused_never_a_silent_sqlite(tmp_path, url):
    with pytest.raises(CatalogError) as caught:
        open_database(Settings.from_env(catalog_url=url), tmp_path / "c.sqlite")
    assert caught.value.code == CATALOG_URL_INVALID and "postgresql://" in caught.value.hint
    assert not (tmp_path / "c.sqlite").exists()


def test_assay_config_shows_the_catalog_url_with_its_password_masked():
    settings = Settings.from_env(catalog_url="postgresql://assay:s3cret-pw@db.internal:5432/assay")
    assert (
        settings.masked()["kernel"]["catalog_url"]
        == "postgresql://assay:***@db.internal:5432/assay"
    )


def test_a_database_that_does_not_answer_is_catalog_unavailable_with_the_password_masked(
    monkeypatch,
):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ASSAY_CATALOG_URL", f"postgresql://assay:s3cret-pw@127.0.0.1:{port}/assay")
    kernel = make_kernel()
    try:
        with pytest.raises(CatalogError) as caught:
            kernel.runs.list()
        error = caught.value
        assert error.code == CATALOG_UNAVAILABLE and "s3cret-pw" not in str(error.to_dict())
        assert "assay:***@127.0.0.1" in error.message and "ASSAY_CATALOG_URL" in error.hint
    finally:
        kernel.close()


def test_a_catalog_written_by_a_newer_assay_is_refused(pg_catalog_url, monkeypatch):
    import psycopg

    monkeypatch.setenv("ASSAY_CATALOG_URL", pg_catalog_url)
    kernel = make_kernel()
    kernel.runs.list()  # creates the tables
    kernel.close()
    with psycopg.connect(pg_catalog_url, autocommit=True) as conn:
        conn.execute("UPDATE assay_schema SET version = 99 WHERE component = 'runs'")
    from assay.kernel.database import forget

    forget(pg_catalog_url)
    kernel = make_kernel()
    try:
        with pytest.raises(CatalogError) as caught:
            kernel.runs.list()
        assert caught.value.code == CATALOG_SCHEMA_NEWER and "schema 99" in caught.value.message
    finally:
        kernel.close()


def test_a_connection_the_server_dropped_is_replaced_once(pg_catalog_url, monkeypatch):
    import psycopg

    from assay.plugins.runs import RunRecord

    monkeypatch.setenv("ASSAY_CATALOG_URL", pg_catalog_url)
    kernel = make_kernel()
    try:
        kernel.runs.start(RunRecord(run_id="run_a", question="q", started_at=1.0))
        for statement in ("list", "append", "capture"):
            backend = kernel.runs.db.execute("SELECT pg_backend_pid()").fetchone()[0]
            with psycopg.connect(pg_catalog_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
            if statement == "list":
                assert [r.run_id for r in kernel.runs.list()] == ["run_a"]
            elif statement == "append":
                kernel.runs.append("run_a", "note", 0, 2.0, {})
                assert [e.seq for e in kernel.runs.events("run_a")] == [1]
            else:
                from assay.kernel.evidence import capture_sql_execution

                sink = kernel.new_run(run_id="run_a").artifacts
                record = capture_sql_execution(
                    sink,
                    columns=["a"],
                    rows=[(1,)],
                    sql="select 1",
                    database="db",
                    dialect="sqlite",
                    elapsed_ms=0,
                )
                assert kernel.evidence.catalog.get(record.artifact_id) is not None
            assert kernel.runs.db.execute("SELECT pg_backend_pid()").fetchone()[0] != backend
    finally:
        kernel.close()


def test_postgresql_keeps_every_store_in_the_one_database(pg_catalog_url, monkeypatch):
    import psycopg

    monkeypatch.setenv("ASSAY_CATALOG_URL", pg_catalog_url)
    kernel = make_kernel()
    try:
        assert kernel.evidence.catalog.path is None and kernel.evidence.catalog.db is kernel.runs.db
        kernel.runs.list()
        kernel.evidence.catalog.count()
        from assay.plugins.report_agent.state import ReportStateStore

        ReportStateStore.for_run(kernel).all()
    finally:
        kernel.close()
    with psycopg.connect(pg_catalog_url) as conn:
        tables = {
            t
            for (t,) in conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        }
        versions = dict(conn.execute("SELECT component, version FROM assay_schema").fetchall())
    assert tables == {"artifacts", "runs", "run_events", "report_state", "assay_schema"}
    assert versions == {
        "catalog": 1,
        "runs": 2,
        "report_state": 1,
    }  # runs 2: parent_run_id (threads)
    assert not (Path(os.environ["ASSAY_HOME"]) / "runs").exists()  # no SQLite file on the side


# --- several processes writing at once --------------------------------------------------


def _write(which: str, i: int, env: dict[str, str], barrier, queue) -> None:
    os.environ.update(env)
    try:
        kernel = make_kernel()
        barrier.wait(timeout=60)
        if which == "catalog":
            from assay.kernel.evidence import capture_sql_execution

            sink = kernel.new_run(run_id="run_shared").artifacts
            ids = [
                capture_sql_execution(
                    sink,
                    columns=["proc", "n"],
                    rows=[(i, n)],
                    sql=f"select {i}, {n}",
                    database="db",
                    dialect="sqlite",
                    elapsed_ms=0,
                ).artifact_id
                for n in range(PER_PROC)
            ]
            queue.put((i, ids))
        elif which == "runs":
            from assay.plugins.runs import RunRecord

            kernel.runs.start(RunRecord(run_id=f"run_p{i}", question=f"q{i}", started_at=float(i)))
            for n in range(PER_PROC):
                kernel.runs.append("run_shared", "note", n, float(n), {"proc": i, "n": n})
            queue.put((i, []))
        else:
            from assay.plugins.report_agent.state import ReportStateStore

            store = ReportStateStore.for_run(kernel)
            for n in range(PER_PROC):
                store.update(
                    "run_shared",
                    lambda s, i=i, n=n: (
                        setattr(s, "tool_calls", s.tool_calls + 1),
                        s.memory.append(f"{i}/{n}"),
                    ),
                )
            queue.put((i, []))
        kernel.close()
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        queue.put((i, f"error: {type(exc).__name__}: {exc}"))


def _run_writers(which: str) -> dict[int, list[str]]:
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(PROCS), ctx.Queue()
    env = {k: v for k, v in os.environ.items() if k.startswith("ASSAY_")}
    procs = [ctx.Process(target=_write, args=(which, i, env, barrier, queue)) for i in range(PROCS)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert not [v for v in results.values() if isinstance(v, str)], results
    assert [p.exitcode for p in procs] == [0] * PROCS
    return results


@pytest.mark.usefixtures("catalog_backend")
def test_four_processes_capturing_into_one_catalog_lose_and_double_no_record():
    results = _run_writers("catalog")
    written = [a for ids in results.values() for a in ids]
    kernel = make_kernel()
    try:
        catalog = kernel.evidence.catalog
        listed = [r.artifact_id for r in catalog.iter("run_shared")]
        assert len(written) == PROCS * PER_PROC == len(set(written))
        assert sorted(listed) == sorted(written) and catalog.count() == PROCS * PER_PROC
        assert {r.provenance["sql"] for r in catalog.iter("run_shared")} == {
            f"select {i}, {n}" for i in range(PROCS) for n in range(PER_PROC)
        }
    finally:
        kernel.close()


@pytest.mark.usefixtures("catalog_backend")
def test_four_processes_appending_to_one_run_number_every_event_once():
    _run_writers("runs")
    kernel = make_kernel()
    try:
        events = list(kernel.runs.events("run_shared"))
        assert [e.seq for e in events] == list(range(1, PROCS * PER_PROC + 1))
        assert sorted((e.data["proc"], e.data["n"]) for e in events) == [
            (i, n) for i in range(PROCS) for n in range(PER_PROC)
        ]
        assert {r.run_id for r in kernel.runs.list()} == {f"run_p{i}" for i in range(PROCS)}
    finally:
        kernel.close()


@pytest.mark.usefixtures("catalog_backend")
def test_four_processes_updating_one_report_state_lose_no_increment():
    _run_writers("report")
    kernel = make_kernel()
    try:
        from assay.plugins.report_agent.state import ReportStateStore

        state = ReportStateStore.for_run(kernel).load("run_shared")
        assert state.tool_calls == PROCS * PER_PROC == state.seq
        assert sorted(state.memory) == sorted(
            f"{i}/{n}" for i in range(PROCS) for n in range(PER_PROC)
        )
    finally:
        kernel.close()


@pytest.mark.usefixtures("catalog_backend")
def test_a_checkpoint_saved_over_a_newer_one_is_refused_not_overwritten():
    from assay.plugins.report_agent.state import (
        REPORT_STATE_CONFLICT,
        ReportState,
        ReportStateStore,
    )

    kernel = make_kernel()
    try:
        store = ReportStateStore.for_run(kernel)
        store.save(ReportState(run_id="run_x"))
        first, second = store.load("run_x"), store.load("run_x")
        first.steps = 1
        store.save(first)
        second.steps = 2
        with pytest.raises(Exception) as caught:
            store.save(second)
        assert getattr(caught.value, "code", None) == REPORT_STATE_CONFLICT and second.seq == 1
        kept = store.load("run_x")
        assert (kept.steps, kept.seq) == (1, 2)
    finally:
        kernel.close()


@pytest.mark.usefixtures("catalog_backend")
def test_iter_newest_first_gives_a_runs_records_in_reverse_capture_order_up_to_the_limit():
    from assay.kernel.evidence import capture_sql_execution

    kernel = make_kernel()
    try:
        sink = kernel.new_run(run_id="run_newest").artifacts
        ids = [
            capture_sql_execution(
                sink,
                columns=["n"],
                rows=[(n,)],
                sql=f"select {n}",
                database="db",
                dialect="sqlite",
                elapsed_ms=0,
            ).artifact_id
            for n in range(5)
        ]
        catalog = kernel.evidence.catalog
        newest = [r.artifact_id for r in catalog.iter("run_newest", limit=3, newest_first=True)]
        oldest = [r.artifact_id for r in catalog.iter("run_newest", limit=3)]
    finally:
        kernel.close()
    assert newest == ids[:-4:-1] and oldest == ids[:3]
