"""The ``ask_cli`` plugin: ``assay ask``, the main agent on the command line.

The command itself is the kernel's (:mod:`assay.kernel.cli_ask`); this
plugin gives it (and ``assay chat``, :mod:`assay.kernel.agent.chat`) the SQL plugin's way to attach a ``--db URL`` and the
models plugin's recorder for ``--record``, which the kernel cannot import. ``assay runs`` is the kernel's own.
"""

from __future__ import annotations

from assay import hookimpl


def open_url(kernel, url: str, allow_privileged: bool):
    from assay.plugins.sql import attach_url

    return attach_url(kernel, url, allow_privileged)


def record_model(model, path: str):
    from assay.plugins.models.cassette import RecordingModel

    return RecordingModel(model, path)


@hookimpl
def register_commands(cli):
    from assay.kernel.agent.chat import make_chat_command
    from assay.kernel.cli_ask import make_ask_command

    cli.add_command(make_ask_command(open_url, record_model))
    cli.add_command(make_chat_command(open_url, record_model))
