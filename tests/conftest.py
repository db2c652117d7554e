"""Shared test fixtures.

Tests that need a real service (PostgreSQL, MariaDB, podman, ...) call
:func:`require`: on a developer machine a missing service skips the test with
the reason; in CI (``CI`` set) it fails, so nothing is silently skipped there.
"""

from __future__ import annotations

import os

import pytest

IN_CI = bool(os.environ.get("CI"))


def require(available: bool, what: str) -> None:
    """Skip locally, fail in CI, when ``what`` is not available."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{what} is required in CI but is not available", pytrace=False)
    pytest.skip(f"{what} is not available here")


@pytest.fixture(autouse=True)
def _isolated_assay_env(assay_env):
    """Every test gets its own ASSAY_HOME and no inherited plugin controls
    (``assay_env``, from assay's pytest plugin, ``assay.kernel.testing``)."""
    return assay_env
