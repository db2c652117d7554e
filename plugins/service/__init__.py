"""The ``service`` plugin: assay as a service, safe by default.

``assay mcp`` (an MCP server over stdio or streamable HTTP), ``assay serve``
(an HTTP API with bearer tokens, limits, server-sent events and a small web
page) and ``assay tokens``. This module registers the commands only; the MCP
SDK, FastAPI and uvicorn are imported when a command runs (extras ``mcp`` and
``serve``). See docs/service.md.
"""

from __future__ import annotations

from assay import hookimpl


@hookimpl
def register_commands(cli):
    from .cli import COMMANDS

    for command in COMMANDS:
        cli.add_command(command)
