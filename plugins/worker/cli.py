"""``assay worker``: execute runs that ``assay serve`` put on the broker.

Only click is imported at start-up; Dramatiq, the broker's client and the
agent load when the command runs.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

import click


@click.command("worker")
@click.option("--threads", type=int, default=None,
              help="Runs this process executes at once (default ASSAY_BROKER_THREADS, 1).")
@click.option("--drain", "drain_s", type=float, default=30.0, show_default=True,
              help="On SIGTERM/SIGINT, seconds running runs may finish before they are cancelled.")
@click.pass_context
def worker_cmd(ctx: click.Context, threads: int | None, drain_s: float) -> None:
    """Execute runs from the broker (ASSAY_BROKER_URL), recording them in the shared catalog.

    Needs ASSAY_BROKER_URL (redis://... or amqp://...) and ASSAY_CATALOG_URL
    (postgresql://...), the same datasources and models as `assay serve`, and
    the shared artifact store (ASSAY_ARTIFACT_STORE=s3) when workers are on
    other hosts. Sandboxes run on this host's container engine.
    """
    from .broker import Broker, BrokerError, broker_settings, check_shared_catalog, configured
    from .dispatch import open_leases
    from .execute import Executor

    kernel = ctx.ensure_object(dict)["kernel"]
    if not configured(kernel.settings):
        raise BrokerError("BROKER_URL_INVALID", "ASSAY_BROKER_URL is not set: there is no queue to take runs from",
                          "Set ASSAY_BROKER_URL=redis://HOST:6379/0 or amqp://USER:PASSWORD@HOST:5672/.")
    check_shared_catalog(kernel.settings)
    settings = broker_settings(kernel.settings)
    if threads is not None:
        settings = settings.model_copy(update={"threads": max(1, threads)})
    kernel.start()
    leases = open_leases(kernel.settings)
    executor = Executor(kernel, settings, leases)
    broker = Broker(settings, handler=executor.handle)
    executor.broker = broker
    broker.check()
    _serve(kernel, broker, executor, settings, drain_s)


def _serve(kernel: Any, broker: Any, executor: Any, settings: Any, drain_s: float) -> None:
    import dramatiq
    from assay.kernel.log import get_logger

    log = get_logger("assay.worker")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    # a message waits on the queue, not in a busy worker (prefetch = threads); so a Redis consumer polls
    # again within 50 ms of a run's end (its idle back-off is capped at worker_timeout)
    worker = dramatiq.Worker(broker.broker, worker_threads=settings.threads, worker_timeout=50)
    worker.queue_prefetch = settings.threads
    worker.start()
    log.info("worker_started", worker=executor.worker, queue=settings.queue, threads=settings.threads,
             broker=broker.kind)
    click.echo(f"assay worker {executor.worker}: {broker.kind} queue {settings.queue!r}, "
               f"{settings.threads} thread(s)", err=True)
    sweeping = threading.Thread(target=_sweep, args=(executor, stop, settings.lease_s / 2, log), daemon=True)
    sweeping.start()
    stop.wait()
    log.info("worker_stopping", running=len(executor.running), drain_s=drain_s)
    done = threading.Thread(target=worker.stop, kwargs={"timeout": int(drain_s * 1000)}, daemon=True)
    done.start()
    done.join(drain_s + 1)
    if done.is_alive():
        executor.cancel_all()  # recorded as cancelled by the agent, lease ended
        done.join(30)
    broker.close()
    kernel.close()


def _sweep(executor: Any, stop: threading.Event, every_s: float, log: Any) -> None:
    while not stop.wait(every_s):
        try:
            executor.sweep()
        except Exception as exc:  # noqa: BLE001 - the catalog may blink; sweep again next round
            log.warning("worker_sweep_failed", error=repr(exc))


COMMANDS = (worker_cmd,)
