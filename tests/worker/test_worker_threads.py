"""A follow-up question (`POST /runs` with ``parent_run_id``) run on a worker, on Redis and on RabbitMQ.

The worker reads the thread from the shared catalog (PostgreSQL) and the
evidence from the shared bucket (moto S3): turn 2 is recorded with its
parent, and its model starts with turn 1's answer and verified artifact.
"""

from __future__ import annotations

import json

import pytest

from tests.evidence.conftest import s3_endpoint  # noqa: F401 - a fixture
from tests.service.test_api import ask
from tests.worker.conftest import Cluster
from tests.worker.test_workers import catalog, ended

pytest.importorskip("fastapi")
pytest.importorskip("dramatiq")
pytestmark = pytest.mark.timeout(300)


def first_message(url: str, run_id: str) -> str:
    """The run's first message (its system prompt), as the worker recorded it in the shared catalog."""
    rows = catalog(
        url,
        "SELECT data FROM run_events WHERE run_id = %s AND kind = 'message' ORDER BY seq LIMIT 1",
        run_id,
    )
    data = rows[0][0]
    data = json.loads(data) if isinstance(data, str) else data
    return data["message"]["content"]


def test_a_two_turn_thread_runs_on_workers_and_turn_two_starts_with_turn_ones_evidence(
    tmp_path, shared_env
):
    cluster = Cluster(tmp_path, shared_env, workers=2)
    try:
        first = ended(cluster, ask(cluster.api, datasource="sales")["run_id"])
        assert first["status"] == "answered", first
        assert first["artifact_ids"], first
        second = ended(
            cluster,
            ask(cluster.api, question="and the second?", parent_run_id=first["run_id"])["run_id"],
        )
        assert second["status"] == "answered", second
        assert second["parent_run_id"] == first["run_id"]
        assert second["thread"] == [first["run_id"], second["run_id"]]
        prompt = first_message(shared_env["ASSAY_CATALOG_URL"], second["run_id"])
        assert first["answer"] in prompt and "Which region sold the most?" in prompt
        for artifact_id in first["artifact_ids"]:
            assert f"- {artifact_id} sql rows=" in prompt and "Unavailable evidence" not in prompt
    finally:
        cluster.stop()
