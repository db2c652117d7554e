"""Fixtures for the report sub-agent tests: a kernel on a real store (local, or S3 on a moto server)."""

from __future__ import annotations

import pytest

from examples.report_scenarios import PLUGINS
from tests.evidence.conftest import s3_endpoint, s3_env  # noqa: F401 - fixtures used by the s3 parameter


@pytest.fixture(params=["local", "s3"])
def store(request):
    """Each test that asks for it runs on both stores."""
    if request.param == "s3":
        request.getfixturevalue("s3_env")
    return request.param


@pytest.fixture
def store_run(store, make_assay_kernel):
    """A run on the parametrised store (local, then S3)."""
    kernel = make_assay_kernel(*PLUGINS)
    with kernel.new_run() as run:
        assert run.artifacts.catalog.store.name == store
        yield run


@pytest.fixture
def kernel(make_assay_kernel):
    return make_assay_kernel(*PLUGINS)


@pytest.fixture
def run(kernel):
    with kernel.new_run() as run:
        assert run.artifacts is not None
        yield run


def tamper(run, record) -> None:
    """Flip one byte of an artifact's stored content, in whichever store holds it."""
    path = run.artifacts.catalog.store.local_path(record.sha256)
    if path is not None:
        from examples.report_scenarios import tamper as tamper_local

        tamper_local(run, record)
        return
    import boto3

    store = run.artifacts.catalog.store
    cfg = store.config
    s3 = boto3.client(
        "s3",
        endpoint_url=cfg.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    key = f"{cfg.prefix.rstrip('/')}/content/sha256/{record.sha256[:2]}/{record.sha256}"
    body = bytearray(s3.get_object(Bucket=cfg.bucket, Key=key)["Body"].read())
    body[len(body) // 2] ^= 1
    s3.put_object(Bucket=cfg.bucket, Key=key, Body=bytes(body))
    cache = store.root / "cache" / record.sha256
    cache.unlink(missing_ok=True)
