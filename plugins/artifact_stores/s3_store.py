"""An S3-compatible artifact store, so several workers can share evidence.

Content goes to ``s3://BUCKET/PREFIX/content/sha256/<2 hex>/<64 hex>``
(an object appears whole or not at all, so publishing is atomic) and each
record is mirrored to ``PREFIX/records/`` where other workers' catalogs can
find it. Staging files, hashing and the SQLite catalog stay local.

Settings (``ASSAY_ARTIFACT_S3_*`` or the ``[artifact_s3]`` table):
``BUCKET`` (required), ``PREFIX``, ``ENDPOINT_URL`` (MinIO, moto, Ceph...),
``REGION``, ``ACCESS_KEY_ID``/``SECRET_ACCESS_KEY`` (else boto3's usual
credential chain), ``CREATE_BUCKET``. boto3 is imported only when the store
is first used.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from assay.kernel.evidence.content_store import ContentStore, ContentStream
from assay.kernel.evidence.errors import ARTIFACT_STORE_UNAVAILABLE, ArtifactError


class S3Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_ARTIFACT_S3_", extra="ignore")

    bucket: str = Field(default="", description="The bucket that holds the evidence.")
    prefix: str = Field(default="assay/", description="Key prefix inside the bucket.")
    endpoint_url: str | None = Field(default=None, description="For S3-compatible servers.")
    region: str = "us-east-1"
    access_key_id: SecretStr | None = None
    secret_access_key: SecretStr | None = None
    create_bucket: bool = Field(default=False, description="Create the bucket when it is missing.")


class S3ContentStore(ContentStore):
    """Content-addressed objects in an S3 bucket."""

    name = "s3"

    def __init__(self, settings: Any) -> None:
        super().__init__(settings)
        self.config = settings.section("artifact_s3", S3Settings)
        if not self.config.bucket:
            raise ArtifactError(
                ARTIFACT_STORE_UNAVAILABLE,
                "the s3 artifact store has no bucket",
                "Set ASSAY_ARTIFACT_S3_BUCKET (and ASSAY_ARTIFACT_S3_ENDPOINT_URL "
                "for a non-AWS server).",
            )
        prefix = self.config.prefix
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        self._client = None
        self._lock = threading.Lock()

    @property
    def root(self) -> Path:
        where = f"{self.config.endpoint_url or 'aws'}|{self.config.bucket}|{self.prefix}"
        slug = re.sub(r"[^A-Za-z0-9_.-]", "_", self.config.bucket)[:40]
        return (
            Path(self.settings.home)
            / "artifacts"
            / f"s3-{slug}-{hashlib.sha256(where.encode()).hexdigest()[:10]}"
        )

    # --- client --------------------------------------------------------------
    @property
    def client(self):
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._make_client()
        return self._client

    def _make_client(self) -> Any:
        try:
            import boto3
            from botocore.config import Config
        except ImportError:  # pragma: no cover - depends on the install
            raise ArtifactError(
                ARTIFACT_STORE_UNAVAILABLE, "boto3 is not installed", "pip install 'assay[s3]'"
            ) from None
        c = self.config
        kwargs: dict[str, Any] = {
            "region_name": c.region,
            "config": Config(retries={"max_attempts": 5, "mode": "standard"}),
        }
        if c.endpoint_url:
            kwargs["endpoint_url"] = c.endpoint_url
        if c.access_key_id and c.secret_access_key:
            kwargs["aws_access_key_id"] = c.access_key_id.get_secret_value()
            kwargs["aws_secret_access_key"] = c.secret_access_key.get_secret_value()
        client = boto3.client("s3", **kwargs)
        if c.create_bucket:
            try:
                client.head_bucket(Bucket=c.bucket)
            except client.exceptions.ClientError:
                client.create_bucket(Bucket=c.bucket)
        return client

    def _key(self, sha256: str) -> str:
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
        return f"{self.prefix}content/sha256/{sha256[:2]}/{sha256}"

    def _head(self, key: str) -> dict | None:
        try:
            return self.client.head_object(Bucket=self.config.bucket, Key=key)
        except self.client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise

    # --- content ---------------------------------------------------------------
    def commit(self, temp: Path, sha256: str, byte_size: int) -> None:
        key = self._key(sha256)
        try:
            head = self._head(key)
            if head is None or head.get("ContentLength") != byte_size:
                self.client.upload_file(
                    str(temp), self.config.bucket, key, ExtraArgs={"Metadata": {"sha256": sha256}}
                )
        finally:
            Path(temp).unlink(missing_ok=True)

    def open_content(self, sha256: str) -> ContentStream:
        try:
            obj = self.client.get_object(Bucket=self.config.bucket, Key=self._key(sha256))
        except self.client.exceptions.NoSuchKey:
            raise FileNotFoundError(sha256) from None
        return _Body(obj["Body"])

    def exists(self, sha256: str) -> bool:
        return self._head(self._key(sha256)) is not None

    def delete(self, sha256: str) -> None:
        self.client.delete_object(Bucket=self.config.bucket, Key=self._key(sha256))

    def iter_content(self) -> Iterator[str]:
        for key in self._list(f"{self.prefix}content/sha256/"):
            name = key.rsplit("/", 1)[-1]
            if len(name) == 64:
                yield name

    def modified_at(self, sha256: str) -> float | None:
        head = self._head(self._key(sha256))
        return head["LastModified"].timestamp() if head else None

    def _list(self, prefix: str) -> Iterator[str]:
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.config.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                yield item["Key"]

    # --- shared records ------------------------------------------------------------
    def put_record(self, artifact_id: str, data: bytes) -> None:
        run_id = json.loads(data)["run_id"]
        self.client.put_object(
            Bucket=self.config.bucket,
            Key=f"{self.prefix}records/by-id/{artifact_id}.json",
            Body=data,
            ContentType="application/json",
        )
        self.client.put_object(
            Bucket=self.config.bucket,
            Key=f"{self.prefix}records/by-run/{run_id}/{artifact_id}",
            Body=b"",
        )

    def delete_record(self, artifact_id: str, run_id: str) -> None:
        self.client.delete_object(
            Bucket=self.config.bucket, Key=f"{self.prefix}records/by-run/{run_id}/{artifact_id}"
        )
        self.client.delete_object(
            Bucket=self.config.bucket, Key=f"{self.prefix}records/by-id/{artifact_id}.json"
        )

    def get_record(self, artifact_id: str) -> bytes | None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", artifact_id):
            return None
        try:
            obj = self.client.get_object(
                Bucket=self.config.bucket, Key=f"{self.prefix}records/by-id/{artifact_id}.json"
            )
        except self.client.exceptions.NoSuchKey:
            return None
        return obj["Body"].read()

    def shared_record_ids(self, run_id: str | None = None) -> list[str]:
        if run_id is not None:
            return [
                k.rsplit("/", 1)[-1] for k in self._list(f"{self.prefix}records/by-run/{run_id}/")
            ]
        return [
            k.rsplit("/", 1)[-1].removesuffix(".json")
            for k in self._list(f"{self.prefix}records/by-id/")
        ]

    def close(self) -> None:
        self._client = None


class _Body:
    """A botocore streaming body as a context-managed binary stream."""

    def __init__(self, body: Any) -> None:
        self._body = body

    def read(self, n: int = -1) -> bytes:
        return self._body.read() if n is None or n < 0 else self._body.read(n)

    def close(self) -> None:
        self._body.close()

    def __enter__(self) -> _Body:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
