"""Settings of the broker and its workers (``[broker]`` in the config file, ``ASSAY_BROKER_*`` variables).

``ASSAY_BROKER_URL`` unset (the default): runs execute inside the ``assay
serve`` process that received them, as they always have. Set to
``redis://...`` or ``amqp://...``: ``assay serve`` enqueues each run and
``assay worker`` processes execute them; both need the shared catalog
(``ASSAY_CATALOG_URL``), where runs, their events and the run leases live.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class BrokerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_BROKER_", extra="ignore")

    url: str = Field(
        default="",
        description="redis://HOST:6379/DB or amqp://USER:PASSWORD@HOST:5672/VHOST; "
        "empty: runs execute in the process that received them.",
    )
    queue: str = Field(
        default="assay_runs",
        pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$",
        description="The broker queue runs are enqueued on (one per deployment).",
    )
    lease_s: float = Field(
        default=15.0,
        ge=1.0,
        le=600.0,
        description="A worker's hold on a run: renewed every lease_s/3; a run whose lease "
        "lapsed is marked failed (RUN_WORKER_LOST).",
    )
    poll_s: float = Field(
        default=0.25,
        gt=0,
        le=5.0,
        description="How often a worker looks for a cancel, and the API for a worker's events.",
    )
    threads: int = Field(
        default=1, ge=1, le=64, description="Runs one `assay worker` process executes at once."
    )
    connect_timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=60.0,
        description="How long to wait for the broker before BROKER_UNAVAILABLE.",
    )
    redelivery_s: float = Field(
        default=30.0,
        ge=1.0,
        description="Redis only: after how long a dead worker's unacknowledged messages "
        "go back on the queue (RabbitMQ does it when the connection drops).",
    )
    claim_retries: int = Field(
        default=10,
        ge=0,
        le=100,
        description="How often a message is retried (Dramatiq's Retries middleware) when "
        "the catalog does not answer its claim; past it, the dead-letter queue.",
    )
    retry_min_backoff_s: float = Field(
        default=1.0,
        gt=0,
        description="First back-off of a retried message; it doubles at each retry.",
    )
    retry_max_backoff_s: float = Field(
        default=60.0, gt=0, description="Longest back-off of a retried message."
    )
    write_retry_s: float = Field(
        default=120.0,
        ge=0,
        description="How long a worker retries a run's writes through "
        "a catalog outage before its transcript is marked "
        "incomplete.",
    )
    requeue_after_s: float = Field(
        default=120.0,
        ge=1.0,
        description="Reconciler: a run queued this long (and again each time this "
        "long) is enqueued again, in case its message was lost.",
    )
    queue_expiry_s: float = Field(
        default=3600.0,
        ge=1.0,
        description="Reconciler: a run no worker took this long after it was enqueued "
        "is failed (RUN_QUEUE_EXPIRED).",
    )
