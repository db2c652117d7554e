"""The ``worker`` plugin: runs on worker processes through a broker (Redis or RabbitMQ, via Dramatiq).

``assay worker`` takes runs that ``assay serve`` enqueued when
``ASSAY_BROKER_URL`` is set, executes them and records them in the shared
catalog (``ASSAY_CATALOG_URL``): :mod:`.messages` (what crosses the broker),
:mod:`.broker` (the Dramatiq broker, its retries and dead letters),
:mod:`.leases` (exactly-once in the catalog), :mod:`.execute` (a worker's
side), :mod:`.recording` (a run's writes, fenced by its lease),
:mod:`.dispatch` (the API's side), :mod:`.faults` (fault points for tests).
This module registers the command only; Dramatiq loads when a broker
is used (extra ``worker``). See docs/deploy.md.
"""

from __future__ import annotations

from assay import hookimpl


@hookimpl
def register_commands(cli):
    from .cli import COMMANDS

    for command in COMMANDS:
        cli.add_command(command)


@hookimpl
def register_resources(register, settings, kernel):
    settings.declare_section(
        "broker", "assay.plugins.worker.settings:BrokerSettings"
    )  # for `assay config`
