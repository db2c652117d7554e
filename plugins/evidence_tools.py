"""Model-facing evidence tools and the ``assay artifacts`` commands (in :mod:`assay.plugins.evidence_cli`).

Tools (in :mod:`assay.plugins.evidence_read_tools`, imported on first use):
``read_artifact_result`` (a verified, bounded selection of one artifact),
``report_evidence_manifest`` (what the run captured) and
``artifact_details`` (full records of up to 12 artifacts).
"""

from __future__ import annotations

from assay import Lazy, hookimpl

_TOOLS = "assay.plugins.evidence_read_tools"


@hookimpl
def register_tools(register):
    register(Lazy(f"{_TOOLS}:read_artifact_result_tool", name="read_artifact_result"))
    register(f"{_TOOLS}:report_evidence_manifest")
    register(f"{_TOOLS}:artifact_details")


@hookimpl
def register_commands(cli, kernel):
    from assay.plugins.evidence_cli import add_commands

    add_commands(cli, kernel)
