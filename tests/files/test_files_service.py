"""POST/GET/DELETE /files through a live `assay serve`: checked uploads, owner isolation, bad names."""

from __future__ import annotations

import httpx
import pytest

from tests.service.conftest import LiveServer

CSV = b"region,amount\nnorth,1\nsouth,2\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("serve-files"))
    yield live
    live.stop()


def upload(server, who, name, data=CSV):
    return httpx.post(
        f"{server.url}/files", headers=server.headers(who), files={"file": (name, data)}, timeout=60
    )


def test_an_uploaded_file_is_registered_and_listed_for_its_owner_only(server):
    made = upload(server, "alice", "sales.csv")
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["tables"] == ["sales"] and body["size"] == len(CSV) and len(body["sha256"]) == 64
    mine = httpx.get(f"{server.url}/files", headers=server.headers("alice")).json()["files"]
    assert body["file_id"] in [f["file_id"] for f in mine]
    theirs = httpx.get(f"{server.url}/files", headers=server.headers("bob")).json()["files"]
    assert body["file_id"] not in [f["file_id"] for f in theirs]


def test_another_owners_file_is_a_404_like_an_unknown_id(server):
    file_id = upload(server, "alice", "private.csv").json()["file_id"]
    other = httpx.delete(f"{server.url}/files/{file_id}", headers=server.headers("bob"))
    unknown = httpx.delete(f"{server.url}/files/file_{'0' * 20}", headers=server.headers("bob"))
    assert other.status_code == unknown.status_code == 404
    assert other.json()["code"] == unknown.json()["code"] == "FILE_NOT_FOUND"
    assert (
        httpx.delete(f"{server.url}/files/{file_id}", headers=server.headers("alice")).status_code
        == 200
    )
    assert (
        httpx.delete(f"{server.url}/files/{file_id}", headers=server.headers("alice")).status_code
        == 404
    )


@pytest.mark.parametrize("name", ["../evil.csv", "a/b.csv", ".hidden.csv", "..csv"])
def test_an_upload_name_that_could_name_a_path_is_refused(server, name):
    res = upload(server, "alice", name)
    assert res.status_code == 400 and res.json()["code"] in ("FILE_NAME_INVALID",)


def test_a_bad_upload_is_refused_with_its_code_and_not_kept(server):
    before = httpx.get(f"{server.url}/files", headers=server.headers("alice")).json()["files"]
    res = upload(server, "alice", "empty.csv", b"")
    assert res.status_code == 400 and res.json()["code"] == "FILE_EMPTY"
    assert (
        httpx.get(f"{server.url}/files", headers=server.headers("alice")).json()["files"] == before
    )


def test_files_need_a_token(server):
    assert httpx.get(f"{server.url}/files").status_code == 401
