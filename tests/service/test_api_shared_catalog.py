"""Two `assay serve` processes as two hosts: their own ASSAY_HOME, one PostgreSQL catalog, one S3 store.

A run asked of one is read, with its events and verified evidence, from the
other; tokens and run owners are shared too (they live in the catalog
database), and the tokens are kept hashed there as in the SQLite file.
"""

from __future__ import annotations

import hashlib

import httpx
import pytest

from tests.evidence.conftest import s3_endpoint  # noqa: F401 - a fixture
from tests.service.conftest import LiveServer
from tests.service.test_api import ask, events, finished

pytest.importorskip("fastapi")
pytestmark = pytest.mark.timeout(240)


def test_a_run_asked_of_one_server_is_read_and_verified_on_another(
    tmp_path, pg_catalog_url, s3_endpoint
):  # noqa: F811
    import psycopg

    shared = {
        "ASSAY_CATALOG_URL": pg_catalog_url,
        "ASSAY_ARTIFACT_STORE": "s3",
        "ASSAY_ARTIFACT_S3_BUCKET": "assay-shared-" + tmp_path.name[-8:].lower().replace("_", "-"),
        "ASSAY_ARTIFACT_S3_ENDPOINT_URL": s3_endpoint,
        "ASSAY_ARTIFACT_S3_ACCESS_KEY_ID": "testing",
        "ASSAY_ARTIFACT_S3_SECRET_ACCESS_KEY": "testing",
        "ASSAY_ARTIFACT_S3_CREATE_BUCKET": "true",
    }
    one = LiveServer(tmp_path / "host-a", shared)
    try:
        two = LiveServer(tmp_path / "host-b", shared)
        try:
            run = ask(one, datasource="sales")
            done = finished(one, run["run_id"])
            assert done["status"] == "answered" and len(done["artifact_ids"]) == 1
            seen = finished(two, run["run_id"])  # host b's own token for alice
            assert seen == done
            kinds = [e["kind"] for e in events(two, run["run_id"])]
            assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
            aid = done["artifact_ids"][0]
            content = httpx.get(f"{two.url}/artifacts/{aid}", headers=two.headers(), timeout=30)
            assert content.status_code == 200
            assert content.headers["etag"] == f'"{hashlib.sha256(content.content).hexdigest()}"'
            rows = httpx.get(
                f"{two.url}/artifacts/{aid}",
                params={"rows": "0:1"},
                headers=two.headers(),
                timeout=30,
            ).json()
            assert rows["verified"] is True and rows["rows"][0][0] == "east"
            other = httpx.get(
                f"{two.url}/runs/{run['run_id']}", headers=two.headers("bob"), timeout=30
            )
            assert other.status_code == 404  # run owners are shared as well
        finally:
            two.stop()
    finally:
        one.stop()
    with psycopg.connect(pg_catalog_url) as conn:
        digests = [d for (d,) in conn.execute("SELECT digest FROM tokens")]
        owners = conn.execute(
            "SELECT owner FROM run_owners WHERE run_id = %s", (run["run_id"],)
        ).fetchall()
    assert len(digests) == 4 and hashlib.sha256(one.alice.encode()).hexdigest() in digests
    assert owners == [("alice",)]
    assert not (
        tmp_path / "host-a" / "home" / "runs"
    ).exists()  # nothing went to a SQLite file on the side
