"""A cluster on loopback: one `assay serve`, N `assay worker` processes, a PostgreSQL catalog, moto S3, a broker.

Each test gets its own PostgreSQL schema, S3 bucket and broker queue (removed
after), so parallel runs never see each other's runs or messages. Workers are
killed only by the pids this fixture started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import require
from tests.service.conftest import LiveServer, stop
from tests.worker.faults import REQUEUE_AFTER_S as _REQUEUE_AFTER_S
from tests.worker.private_services import PrivatePostgres, PrivateRedis, answers as _answers

REDIS_URL = "redis://127.0.0.1:6379/0"
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
SLOW = [
    {
        "tool": "code_interpreter",
        "arguments": {"code": "import time\ntime.sleep(20)\nprint('slept')"},
    },
    {"text": "Done sleeping."},
]


@pytest.fixture(params=["redis", "rabbitmq"])
def broker_url(request):
    """A broker URL (Redis, then RabbitMQ) and a queue of this test's own, flushed and deleted after."""
    kind = request.param
    require(_answers(6379 if kind == "redis" else 5672), f"{kind} on 127.0.0.1")
    queue = "assay_test_" + uuid.uuid4().hex[:10]
    url = REDIS_URL if kind == "redis" else AMQP_URL
    yield kind, url, queue
    _remove_queue(kind, url, queue)


def _remove_queue(kind: str, url: str, queue: str) -> None:
    if kind == "redis":
        import redis

        client = redis.Redis.from_url(url)
        keys = list(client.scan_iter(f"dramatiq:{queue}*"))
        if keys:
            client.delete(*keys)
        client.close()
        return
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        channel = conn.channel()
        for name in (queue, f"{queue}.DQ", f"{queue}.XQ"):
            channel.queue_delete(name)
    finally:
        conn.close()


class Cluster:
    """One API process and ``workers`` worker processes sharing the catalog, the bucket and the queue."""

    def __init__(
        self, root: Path, shared: dict[str, str], workers: int, script: list | None = None
    ) -> None:
        self.root, self.shared = root, shared
        self.api = LiveServer(root / "api", shared, script=script)
        self.workers: list[subprocess.Popen] = []
        self.logs: list = []
        try:
            for _ in range(workers):
                self.add_worker(wait=False)
            for n in range(1, workers + 1):
                self.wait_worker(n)
        except Exception:
            self.stop()
            raise

    def add_worker(
        self, wait: bool = True, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
    ) -> subprocess.Popen:
        n = len(self.workers) + 1
        base = {
            k: v for k, v in self.api.env.items() if k != "ASSAY_TEST_FAULT"
        }  # the API's own fault
        env = {**base, "ASSAY_HOME": str(self.root / f"worker-{n}" / "home"), **(env or {})}
        log = open(self.root / f"worker-{n}.log", "w")  # noqa: SIM115 - closed in stop()
        proc = subprocess.Popen(
            [sys.executable, "-m", "assay.kernel.cli", "worker", *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.workers.append(proc)
        self.logs.append(log)
        if wait:
            self.wait_worker(n)
        return proc

    def wait_worker(self, n: int) -> None:
        proc, deadline = self.workers[n - 1], time.monotonic() + 60
        while "assay worker " not in (self.root / f"worker-{n}.log").read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"worker {n} did not start: {(self.root / f'worker-{n}.log').read_text()}"
                )
            time.sleep(0.1)

    def kill(self, pid: int) -> None:
        """SIGKILL one of this cluster's workers (never another process)."""
        proc = next(p for p in self.workers if p.pid == pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop(self) -> None:
        for proc in self.workers:
            stop(proc)
        for log in self.logs:
            log.close()
        self.api.stop()


@pytest.fixture
def shared_env(tmp_path, pg_catalog_url, s3_endpoint, broker_url):
    """The settings every process of the cluster shares."""
    kind, url, queue = broker_url
    return {
        "ASSAY_CATALOG_URL": pg_catalog_url,
        "ASSAY_BROKER_URL": url,
        "ASSAY_BROKER_QUEUE": queue,
        "ASSAY_BROKER_LEASE_S": "3",
        "ASSAY_BROKER_REDELIVERY_S": "5",
        "ASSAY_BROKER_POLL_S": "0.1",
        "ASSAY_ARTIFACT_STORE": "s3",
        "ASSAY_ARTIFACT_S3_BUCKET": "assay-w-" + uuid.uuid4().hex[:12],
        "ASSAY_ARTIFACT_S3_ENDPOINT_URL": s3_endpoint,
        "ASSAY_ARTIFACT_S3_ACCESS_KEY_ID": "testing",
        "ASSAY_ARTIFACT_S3_SECRET_ACCESS_KEY": "testing",
        "ASSAY_ARTIFACT_S3_CREATE_BUCKET": "true",
        "ASSAY_SERVICE_QUESTIONS_PER_MINUTE": "1000",
        "ASSAY_LOG_LEVEL": "INFO",
        "ASSAY_LOG_FORMAT": "json",
    }


# --- services a fault test owns (tests/worker/test_faults.py, test_fault_guards.py, test_api_outage.py) ---


@pytest.fixture
def private_pg():
    pg = PrivatePostgres()
    yield pg
    pg.close()


@pytest.fixture
def private_redis():
    redis = PrivateRedis()
    yield redis
    redis.close()


@pytest.fixture
def fault_env(private_pg, private_redis):
    """A cluster's settings on a catalog and a broker this test owns (so it may kill them)."""
    return {
        "ASSAY_CATALOG_URL": private_pg.url,
        "ASSAY_BROKER_URL": private_redis.url,
        "ASSAY_BROKER_QUEUE": "assay_faults",
        "ASSAY_BROKER_LEASE_S": "3",
        "ASSAY_BROKER_REDELIVERY_S": "5",
        "ASSAY_BROKER_POLL_S": "0.1",
        "ASSAY_BROKER_RETRY_MIN_BACKOFF_S": "0.2",
        "ASSAY_BROKER_RETRY_MAX_BACKOFF_S": "2",
        "ASSAY_BROKER_CLAIM_RETRIES": "60",
        "ASSAY_BROKER_WRITE_RETRY_S": "60",
        "ASSAY_BROKER_REQUEUE_AFTER_S": str(_REQUEUE_AFTER_S),
        "ASSAY_BROKER_QUEUE_EXPIRY_S": "300",
        "ASSAY_SERVICE_QUESTIONS_PER_MINUTE": "1000",
        "ASSAY_LOG_LEVEL": "INFO",
        "ASSAY_LOG_FORMAT": "json",
    }
