"""Shared test fixtures.

Tests that need a real service (PostgreSQL, MariaDB, podman, ...) call
:func:`require`: on a developer machine a missing service skips the test with
the reason; in CI (``CI`` set) it fails, so nothing is silently skipped there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Iterable

import pytest

IN_CI = bool(os.environ.get("CI"))


def require(available: bool, what: str) -> None:
    """Skip locally, fail in CI, when ``what`` is not available."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{what} is required in CI but is not available", pytrace=False)
    pytest.skip(f"{what} is not available here")


def imported_by(code: str, watched: Iterable[str], env: dict[str, str] | None = None) -> list[str]:
    """The ``watched`` modules that running ``code`` in a fresh interpreter imports
    (a name counts when it or one of its submodules is in ``sys.modules``)."""
    probe = (f"{code}\nimport json as _j, sys as _s\n_w = {sorted(watched)!r}\n"
             "print(_j.dumps([n for n in _w if any(m == n or m.startswith(n + '.') for m in list(_s.modules))]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def pytest_configure(config: pytest.Config) -> None:
    # assay's pytest plugin normally arrives through its pytest11 entry point; an
    # environment without it (plugin autoloading off, or an editable install made
    # before the entry point existed) still gets the fixtures the suite relies on.
    if not config.pluginmanager.has_plugin("assay"):
        import assay.kernel.testing

        config.pluginmanager.register(assay.kernel.testing, "assay")


@pytest.fixture(autouse=True)
def _isolated_assay_env(assay_env):
    """Every test gets its own ASSAY_HOME and no inherited plugin controls
    (``assay_env``, from assay's pytest plugin, ``assay.kernel.testing``)."""
    return assay_env


def run_assay(*args: str, env: dict[str, str] | None = None, input: str | None = None):
    """``assay ARGS`` run in this process, exactly as the console script runs it
    (``assay.kernel.cli:main``: a kernel from the environment, entry-point
    plugins, one-line errors and exit codes), through click's ``CliRunner``; a
    subprocess per call costs about a second. ``env`` is added to the
    environment for the call. Returns click's ``Result`` (``exit_code``,
    ``stdout``, ``stderr``)."""
    from assay.kernel import cli
    from assay.kernel.log import configure_logging
    from click.testing import CliRunner

    class _ConsoleScript:  # what CliRunner.invoke needs of a command: a name and main()
        name = "assay"

        @staticmethod
        def main(args: list[str], prog_name: str, **_: object) -> None:
            cli.main(list(args))

    try:
        return CliRunner().invoke(_ConsoleScript(), list(args), env=env, input=input)  # type: ignore[arg-type]
    finally:
        configure_logging("WARNING", "auto")  # the run's ASSAY_LOG_* must not outlive it
