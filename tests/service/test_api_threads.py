"""`POST /runs` with ``parent_run_id``: a follow-up of the owner's run; another owner's parent is an unknown one."""

from __future__ import annotations

import httpx
import pytest

from tests.service.conftest import LiveServer
from tests.service.test_api import ask, finished

pytest.importorskip("fastapi")
pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def thread_server(tmp_path_factory):
    server = LiveServer(tmp_path_factory.mktemp("serve_threads"))
    yield server
    server.stop()


def test_a_follow_up_continues_the_owners_run_and_get_shows_the_thread(thread_server):
    first = finished(thread_server, ask(thread_server, datasource="sales")["run_id"])
    second = finished(
        thread_server,
        ask(thread_server, question="and the second?", parent_run_id=first["run_id"])["run_id"],
    )
    assert second["status"] == "answered", second
    assert second["parent_run_id"] == first["run_id"]
    assert second["thread"] == [first["run_id"], second["run_id"]]
    assert first["thread"] == [] and first["parent_run_id"] is None


def test_another_owners_parent_is_the_same_404_as_an_unknown_one(thread_server):
    mine = finished(thread_server, ask(thread_server, datasource="sales")["run_id"])
    answers = [
        httpx.post(
            f"{thread_server.url}/runs",
            json={"question": "q", "parent_run_id": parent},
            headers=thread_server.headers("bob"),
            timeout=30,
        )
        for parent in (mine["run_id"], "run_nope")
    ]
    assert [a.status_code for a in answers] == [404, 404]
    theirs, unknown = (a.json() for a in answers)
    assert theirs["code"] == unknown["code"] == "SERVICE_RUN_NOT_FOUND"
    assert theirs["message"].replace(mine["run_id"], "X") == unknown["message"].replace(
        "run_nope", "X"
    )
