"""`assay serve` against a catalog that fails or hangs: a coded 503, and an event loop that keeps answering."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.service.conftest import LiveServer
from tests.service.test_api import ask, finished

pytest.importorskip("fastapi")
pytestmark = pytest.mark.timeout(180)


def test_a_catalog_outage_is_catalog_unavailable_with_503_on_every_route(tmp_path, private_pg):
    server = LiveServer(tmp_path, {"ASSAY_CATALOG_URL": private_pg.url})
    try:
        run_id = ask(server, datasource="sales")["run_id"]
        finished(server, run_id)  # recorded before the outage
        private_pg.stop()
        answers = [
            httpx.post(
                f"{server.url}/runs",
                json={"question": "Which region?"},
                headers=server.headers(),
                timeout=30,
            ),
            httpx.get(f"{server.url}/runs/{run_id}", headers=server.headers(), timeout=30),
            httpx.get(f"{server.url}/runs", headers=server.headers(), timeout=30),
        ]
        for answer in answers:
            assert answer.status_code == 503, answer.text
            assert answer.json()["code"] == "CATALOG_UNAVAILABLE", answer.text
        private_pg.start()
        assert (
            httpx.get(
                f"{server.url}/runs/{run_id}", headers=server.headers(), timeout=30
            ).status_code
            == 200
        )
    finally:
        server.stop()


def test_health_answers_at_once_while_a_request_waits_on_a_hung_catalog(tmp_path, private_pg):
    server = LiveServer(tmp_path, {"ASSAY_CATALOG_URL": private_pg.url})
    pending = threading.Thread(
        target=lambda: _quietly(
            lambda: httpx.post(
                f"{server.url}/runs",
                json={"question": "Which region?"},
                headers=server.headers(),
                timeout=20,
            )
        )
    )
    try:
        private_pg.freeze()
        pending.start()
        time.sleep(0.5)  # the POST is now waiting on the catalog
        health = httpx.get(
            f"{server.url}/health", timeout=5
        )  # the catalog stays frozen until the thaw below
        assert (
            health.status_code == 200 and pending.is_alive()
        )  # answered while the POST still waits
    finally:
        private_pg.thaw()
        pending.join(30)
        server.stop()


def _quietly(call) -> None:
    try:
        call()
    except httpx.HTTPError:
        pass
