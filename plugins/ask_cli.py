"""The ``ask_cli`` plugin: ``assay ask``, the main agent on the command line.

The agent and the command are :mod:`assay.plugins.agent` (the loop, ``ask``,
:mod:`assay.plugins.agent.cli_ask`); this module stays thin so start-up
imports none of them. It gives the command the SQL plugin's way to attach a
``--db URL`` (to ``assay ask`` and ``assay chat``), the files plugin's for ``--file`` (and a
follow-up's files again) and the models plugin's
recorder for ``--record``, and declares the agent's ``[agent]`` settings
section for ``assay config``. ``assay runs`` is the runs plugin's
(:mod:`assay.plugins.runs_plugin`).
"""

from __future__ import annotations

from assay import hookimpl


def open_url(kernel, url: str, allow_privileged: bool):
    from assay.plugins.sql import attach_url

    return attach_url(kernel, url, allow_privileged)


def record_model(model, path: str):
    from assay.plugins.models.cassette import RecordingModel

    return RecordingModel(model, path)


def open_files(kernel, patterns: list[str]):
    from assay.plugins.files import attach_files

    return attach_files(kernel, patterns)


def reopen_files(kernel, run, record: dict):
    from assay.plugins.files import reopen_files as reopen

    return reopen(kernel, run, record)


@hookimpl
def register_resources(settings):
    settings.declare_section(
        "agent", "assay.plugins.agent.settings:AgentSettings"
    )  # for `assay config`


@hookimpl
def register_commands(cli):
    from assay.plugins.agent.chat import make_chat_command
    from assay.plugins.agent.cli_ask import make_ask_command

    cli.add_command(make_ask_command(open_url, record_model, open_files, reopen_files))
    cli.add_command(make_chat_command(open_url, record_model, reopen_files))
