"""``assay worker``: execute runs that ``assay serve`` put on the broker.

Only click is imported at start-up; Dramatiq, the broker's client and the
agent load when the command runs.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import click


@click.command("worker")
@click.option(
    "--threads",
    type=int,
    default=None,
    help="Runs this process executes at once (default ASSAY_BROKER_THREADS, 1).",
)
@click.option(
    "--drain",
    "drain_s",
    type=float,
    default=30.0,
    show_default=True,
    help="On SIGTERM/SIGINT, seconds running runs may finish before they are cancelled "
    "(then the worker waits for them to record it, and exits).",
)
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
        raise BrokerError(
            "BROKER_URL_INVALID",
            "ASSAY_BROKER_URL is not set: there is no queue to take runs from",
            "Set ASSAY_BROKER_URL=redis://HOST:6379/0 or amqp://USER:PASSWORD@HOST:5672/.",
        )
    check_shared_catalog(kernel.settings)
    check_home(kernel.settings)
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


def check_home(kernel_settings: Any) -> None:
    """Refuse to consume on an ASSAY_HOME this process cannot write (captures stage there): WORKER_HOME_UNWRITABLE."""
    from assay.kernel.errors import AssayError

    home = Path(kernel_settings.home)
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=home, prefix=".assay-worker-probe-") as probe:
            probe.write(b"x" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        raise AssayError(
            WORKER_HOME_UNWRITABLE,
            f"ASSAY_HOME {str(home)!r} cannot be written: {exc.strerror or exc}",
            "Give the worker a writable ASSAY_HOME with free space "
            "(captures are staged there); this worker takes no run until then.",
        ) from None


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
    log.info(
        "worker_started",
        worker=executor.worker,
        queue=settings.queue,
        threads=settings.threads,
        broker=broker.kind,
    )
    click.echo(
        f"assay worker {executor.worker}: {broker.kind} queue {settings.queue!r}, "
        f"{settings.threads} thread(s)",
        err=True,
    )
    _report_dead_letters(broker, settings, log, None)
    sweeping = threading.Thread(
        target=_sweep, args=(executor, broker, settings, stop, log), daemon=True
    )
    sweeping.start()
    stop.wait()
    _drain(worker, executor, drain_s, log)
    broker.close()
    kernel.close()


def _drain(worker: Any, executor: Any, drain_s: float, log: Any) -> None:
    """Stop taking messages; let running runs finish for ``drain_s``; cancel the rest and wait for them to
    record it (bounded); then stop Dramatiq (messages prefetched but not begun go back on the queue)."""
    log.info("worker_stopping", running=len(executor.running), drain_s=drain_s)
    for thread in worker.workers:  # no worker thread takes another message; the one it runs goes on
        thread.stop()
    deadline = time.monotonic() + drain_s
    while executor.busy() and time.monotonic() < deadline:
        time.sleep(0.05)
    if executor.busy():
        cancelled = executor.cancel_all()  # recorded as cancelled by the agent, lease ended
        log.info("worker_drain_cancelled", runs=cancelled)
        deadline = time.monotonic() + CANCEL_WAIT_S
        while executor.busy() and time.monotonic() < deadline:
            time.sleep(0.05)
    worker.stop(timeout=int(CANCEL_WAIT_S * 1000))
    log.info("worker_stopped", left=executor.busy())


def _report_dead_letters(broker: Any, settings: Any, log: Any, before: int | None) -> int | None:
    try:
        count = broker.dead_letters()
    except Exception as exc:  # noqa: BLE001 - the broker blinks: reported next round
        log.warning("worker_dead_letters_unknown", error=repr(exc))
        return before
    if count and count != before:
        log.warning("worker_dead_letters", queue=f"{settings.queue}.XQ", messages=count)
        click.echo(
            f"assay worker: {count} message(s) in the dead-letter queue {settings.queue}.XQ "
            "(their runs are enqueued again or failed by the reconciler)",
            err=True,
        )
    return count


def _sweep(executor: Any, broker: Any, settings: Any, stop: threading.Event, log: Any) -> None:
    """Every lease_s / 2: lost workers' runs (RUN_WORKER_LOST), queued runs whose message is gone, dead letters.

    After a round that failed (the catalog was down), runs are not declared lost for one lease_s: their
    workers, cut off from the catalog too, get the time to renew their leases first."""
    failed_at = 0.0
    dead = None
    rounds = 0
    while not stop.wait(settings.lease_s / 2):
        rounds += 1
        try:
            if time.monotonic() - failed_at >= settings.lease_s:
                executor.sweep()
            executor.reconcile()
        except Exception as exc:  # noqa: BLE001 - the catalog may blink; sweep again next round
            failed_at = time.monotonic()
            log.warning("worker_sweep_failed", error=repr(exc))
        if rounds % 10 == 1:
            dead = _report_dead_letters(broker, settings, log, dead)


WORKER_HOME_UNWRITABLE = "WORKER_HOME_UNWRITABLE"
CANCEL_WAIT_S = 30.0
COMMANDS = (worker_cmd,)
