"""The ``report_agent`` plugin: ``generate_report`` (the report sub-agent) and ``assay reports``.

``generate_report`` is a main-agent tool; the sub-agent's own two tools
(``request_report_calculation``, ``submit_report``) are never registered, so
no other agent can call them. See docs/reports.md.
"""

from __future__ import annotations

from assay import hookimpl


@hookimpl
def register_tools(register):
    register("assay.plugins.report_agent.generate:generate_report")


@hookimpl
def register_resources(settings):
    settings.declare_section(
        "report", "assay.plugins.report_agent.settings:ReportAgentSettings"
    )  # `assay config`


@hookimpl
def register_commands(cli, kernel):
    from .cli import add_commands

    add_commands(cli, kernel)
