"""The service's per-owner evidence quota.

Every run the service makes (a tool call, an agent run, an MCP session) has the
run's own quota (``ASSAY_ARTIFACT_RUN_MAX_BYTES``); here its sink gets a second
one: the bytes of every artifact of every run of the same owner, at most
``ASSAY_SERVICE_OWNER_MAX_ARTIFACT_BYTES``. The sum is asked of the catalog at
each capture, so runs of one owner going at once (or in other processes) all
count. Past it a capture fails with ``ARTIFACT_QUOTA_EXCEEDED`` (scope "owner").
"""

from __future__ import annotations

from typing import Any

from assay.kernel.evidence import Quota

from .settings import ServiceSettings

SETTING = "ASSAY_SERVICE_OWNER_MAX_ARTIFACT_BYTES"


def settings_of(kernel: Any) -> ServiceSettings:
    return kernel.settings.section("service", ServiceSettings)


def charge_to_owner(
    run: Any, kernel: Any, tokens: Any, who: str, settings: ServiceSettings | None = None
) -> None:
    """Add the owner's quota to ``run``'s sink (nothing when the run captures nothing)."""
    if run.artifacts is None or tokens is None:
        return
    limit = (settings or settings_of(kernel)).owner_max_artifact_bytes
    catalog = run.artifacts.catalog
    run.artifacts.add_quota(
        Quota("owner", limit, lambda: catalog.bytes_of_runs(tokens.runs_of(who, None)), SETTING)
    )
