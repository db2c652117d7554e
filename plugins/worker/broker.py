"""The broker: one Dramatiq broker over Redis or RabbitMQ, chosen by ``ASSAY_BROKER_URL``'s scheme.

Dramatiq is imported here and in :mod:`.worker` only, when a broker is
configured: kernel start-up and a one-machine ``assay serve`` never load it.
A message is acknowledged only after the actor returns, so a message whose
worker died goes back on the queue (RabbitMQ: when the connection drops;
Redis: once the dead worker's heartbeat is ``redelivery_s`` old). What runs
exactly once is decided in the shared catalog (:mod:`.leases`), not by the
broker: a redelivered message whose run already ended is dropped.

A message whose actor raised (the catalog did not answer the claim) is
retried by Dramatiq's own ``Retries`` middleware, with exponential back-off
from ``retry_min_backoff_s`` to ``retry_max_backoff_s``, up to
``claim_retries`` times, only for catalog outages; past them, or for any
other error, it is failed, which puts it in the queue's dead-letter queue
(``QUEUE.XQ``, kept 7 days) that :meth:`Broker.dead_letters` counts and
``assay worker`` reports. A message is never acknowledged for a run that
was not claimed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from assay.kernel.database import CATALOG_UNAVAILABLE, CatalogError, catalog_url
from assay.kernel.errors import AssayError
from assay.kernel.settings import mask_url

from .messages import RunMessage
from .settings import BrokerSettings

BROKER_URL_INVALID = "BROKER_URL_INVALID"
BROKER_UNAVAILABLE = "BROKER_UNAVAILABLE"
BROKER_NEEDS_SHARED_CATALOG = "BROKER_NEEDS_SHARED_CATALOG"
BROKER_DEPENDENCY_MISSING = "BROKER_DEPENDENCY_MISSING"
ACTOR = "assay_run"
SCHEMES = {"redis": "redis", "rediss": "redis", "amqp": "rabbitmq", "amqps": "rabbitmq"}


class BrokerError(AssayError):
    code = BROKER_UNAVAILABLE


def broker_settings(kernel_settings: Any) -> BrokerSettings:
    return kernel_settings.section("broker", BrokerSettings)


def configured(kernel_settings: Any) -> bool:
    """Whether runs go to workers (``ASSAY_BROKER_URL`` set)."""
    if not kernel_settings.provided("broker", "ASSAY_BROKER_"):
        return False
    return bool(broker_settings(kernel_settings).url.strip())


def kind_of(url: str) -> str:
    """``redis`` or ``rabbitmq``; any other URL is refused."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in SCHEMES:
        raise BrokerError(
            BROKER_URL_INVALID,
            f"ASSAY_BROKER_URL {mask_url(url)!r} is not a redis:// or amqp:// URL",
            "Give redis://HOST:6379/0 or amqp://USER:PASSWORD@HOST:5672/, or unset ASSAY_BROKER_URL "
            "to run each run in the process that received it.",
        )
    return SCHEMES[scheme]


def check_shared_catalog(kernel_settings: Any) -> None:
    """A broker without ``ASSAY_CATALOG_URL`` is refused: workers could not see the runs."""
    if not catalog_url(kernel_settings):
        raise BrokerError(
            BROKER_NEEDS_SHARED_CATALOG,
            "ASSAY_BROKER_URL is set but ASSAY_CATALOG_URL is not: "
            "workers on other processes could not see the runs, their events or their leases",
            "Set ASSAY_CATALOG_URL=postgresql://... on the API and on every worker (docs/deploy.md), "
            "or unset ASSAY_BROKER_URL.",
        )


class Broker:
    """The Dramatiq broker of one process and the one actor that carries runs."""

    def __init__(self, settings: BrokerSettings, handler: Any = None) -> None:
        self.settings = settings
        self.url = settings.url.strip()
        self.kind = kind_of(self.url)
        try:
            import dramatiq
        except ImportError:
            raise BrokerError(
                BROKER_DEPENDENCY_MISSING,
                "the 'dramatiq' package is not installed",
                "pip install 'assay[worker]'",
            ) from None
        self.dramatiq = dramatiq
        self.broker = self._make()
        self.actor = dramatiq.Actor(
            handler or _not_here,
            broker=self.broker,
            actor_name=ACTOR,
            queue_name=settings.queue,
            priority=0,
            options={},
        )

    def _middleware(self) -> list[Any]:
        from dramatiq.middleware import Retries

        s = self.settings
        return [
            Retries(
                max_retries=s.claim_retries,
                min_backoff=max(1, int(s.retry_min_backoff_s * 1000)),
                max_backoff=max(1, int(s.retry_max_backoff_s * 1000)),
                retry_when=lambda retries, exc: retries < s.claim_retries and transient(exc),
            )
        ]

    def _make(self) -> Any:
        s = self.settings
        if self.kind == "redis":
            import redis
            from dramatiq.brokers.redis import RedisBroker

            client = redis.Redis.from_url(
                self.url,
                socket_connect_timeout=s.connect_timeout_s,
                socket_timeout=max(s.connect_timeout_s, 30.0),
                health_check_interval=30,
            )
            # maintenance (requeueing a dead worker's messages) on about 1 command in 20
            return RedisBroker(
                client=client,
                middleware=self._middleware(),
                heartbeat_timeout=int(s.redelivery_s * 1000),
                maintenance_chance=50_000,
            )
        from dramatiq.brokers.rabbitmq import RabbitmqBroker

        return RabbitmqBroker(
            url=_amqp_url(self.url, s.connect_timeout_s), middleware=self._middleware()
        )

    def dead_letters(self) -> int:
        """Messages of this queue in its dead-letter queue (their retries were used up, or they could not
        be handled at all); their runs are ended or enqueued again by the reconciler."""
        queue = self.settings.queue
        try:
            if self.kind == "redis":
                return int(self.broker.client.zcard(f"{self.broker.namespace}:{queue}.XQ"))
            channel = self.broker.channel
            return int(channel.queue_declare(f"{queue}.XQ", passive=True).method.message_count)
        except Exception as exc:  # noqa: BLE001 - redis, pika and socket errors alike
            raise self.unavailable(exc) from None

    def check(self) -> None:
        """Reach the broker now (BROKER_UNAVAILABLE with the masked URL when it does not answer)."""
        try:
            if self.kind == "redis":
                self.broker.client.ping()
            else:
                self.broker.declare_queue(self.settings.queue, ensure=True)
        except Exception as exc:  # noqa: BLE001 - redis, pika and socket errors alike
            raise self.unavailable(exc) from None

    def unavailable(self, exc: BaseException) -> BrokerError:
        return BrokerError(
            BROKER_UNAVAILABLE,
            f"the {self.kind} broker at {mask_url(self.url)} does not answer: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": "),
            f"Check that {self.kind} runs and ASSAY_BROKER_URL; runs are not executed in this "
            "process while a broker is configured.",
        )

    def enqueue(self, message: RunMessage, delay_s: float | None = None) -> None:
        try:
            built = self.actor.message(message.model_dump(mode="json"))
            self.broker.enqueue(built, delay=None if delay_s is None else int(delay_s * 1000))
        except Exception as exc:  # noqa: BLE001
            raise self.unavailable(exc) from None

    def flush(self) -> None:
        """Drop every message of the queue (tests)."""
        self.broker.flush(self.settings.queue)

    def close(self) -> None:
        try:
            self.broker.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass


def transient(exc: BaseException) -> bool:
    """Whether an actor's error is a catalog or broker outage (retried), not a fault of the message."""
    if isinstance(exc, CatalogError) and exc.code == CATALOG_UNAVAILABLE:
        return True
    if isinstance(exc, BrokerError) and exc.code == BROKER_UNAVAILABLE:
        return True
    return type(exc).__name__ in (
        "OperationalError",
        "InterfaceError",
        "ConnectionError",
        "TimeoutError",
    )


def _amqp_url(url: str, timeout_s: float) -> str:
    """``url`` with pika's connection attempts and timeouts bounded (unless the URL sets them)."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.setdefault("connection_attempts", "1")
    query.setdefault("socket_timeout", str(timeout_s))
    query.setdefault("stack_timeout", str(timeout_s * 2))
    return urlunsplit(parts._replace(query=urlencode(query)))


def _not_here(payload: dict[str, Any]) -> None:  # the API process enqueues; only workers execute
    raise RuntimeError("runs execute on `assay worker` processes")
