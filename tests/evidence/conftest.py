"""Fixtures for the evidence-store tests: kernels, sinks, real databases, a moto S3 server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from assay import Kernel
from assay.kernel.evidence import ArtifactSink
from tests.conftest import require

EVIDENCE_PLUGINS = [
    "assay.plugins.artifact_stores.local",
    "assay.plugins.artifact_stores.s3",
    "assay.plugins.evidence_tools",
]


def make_kernel(**settings_overrides) -> Kernel:
    from assay import Settings

    settings = Settings.from_env(**settings_overrides)
    return Kernel(load_entrypoints=False, plugins=EVIDENCE_PLUGINS, settings=settings)


@pytest.fixture
def kernel(make_assay_kernel) -> Kernel:
    """A fresh kernel with the evidence plugins (assay's pytest plugin closes it)."""
    return make_assay_kernel(*EVIDENCE_PLUGINS)


@pytest.fixture
def sink(kernel) -> ArtifactSink:
    return kernel.evidence.open_sink("run_" + uuid.uuid4().hex[:12])


@pytest.fixture
def home() -> Path:
    return Path(os.environ["ASSAY_HOME"])


# --- real databases --------------------------------------------------------------


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def pg_conn():
    require(_port_open(5432), "PostgreSQL on 127.0.0.1:5432")
    import psycopg

    conn = psycopg.connect("host=127.0.0.1 port=5432 dbname=test user=postgres", autocommit=True)
    yield conn
    conn.close()


@pytest.fixture
def maria_conn():
    require(_port_open(3306), "MariaDB on 127.0.0.1:3306")
    import pymysql

    conn = pymysql.connect(
        host="127.0.0.1", port=3306, user="root", password="", database="test", autocommit=True
    )
    yield conn
    conn.close()


# --- a local S3 server (moto in server mode) ----------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint():
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError:
        require(False, "moto[server] and boto3")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not _port_open(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                require(False, "a moto S3 server")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def s3_env(s3_endpoint, monkeypatch):
    """Point the s3 store at a fresh bucket on the moto server."""
    bucket = "assay-test-" + uuid.uuid4().hex[:10]
    monkeypatch.setenv("ASSAY_ARTIFACT_STORE", "s3")
    monkeypatch.setenv("ASSAY_ARTIFACT_S3_BUCKET", bucket)
    monkeypatch.setenv("ASSAY_ARTIFACT_S3_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("ASSAY_ARTIFACT_S3_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("ASSAY_ARTIFACT_S3_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("ASSAY_ARTIFACT_S3_CREATE_BUCKET", "true")
    return {"bucket": bucket, "endpoint": s3_endpoint}
