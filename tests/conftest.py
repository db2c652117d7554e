"""Shared test fixtures.

Tests that need a real service (PostgreSQL, MariaDB, podman, ...) call
:func:`require`: on a developer machine a missing service skips the test with
the reason; in CI (``CI`` set) it fails, so nothing is silently skipped there.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterable

import pytest

IN_CI = bool(os.environ.get("CI"))


def require(available: bool, what: str) -> None:
    """Skip locally, fail in CI, when ``what`` is not available."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{what} is required in CI but is not available", pytrace=False)
    pytest.skip(f"{what} is not available here")


def sigint_default() -> None:
    """``preexec_fn`` for a child the test sends Ctrl-C to: SIGINT back to its default disposition.

    A test run started in the background by a non-interactive shell has SIGINT
    ignored, and children inherit that; a Python started so installs no
    KeyboardInterrupt handler, and the signal would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def imported_by(code: str, watched: Iterable[str], env: dict[str, str] | None = None) -> list[str]:
    """The ``watched`` modules that running ``code`` in a fresh interpreter imports
    (a name counts when it or one of its submodules is in ``sys.modules``)."""
    probe = (
        f"{code}\nimport json as _j, sys as _s\n_w = {sorted(watched)!r}\n"
        "print(_j.dumps([n for n in _w if any(m == n or m.startswith(n + '.') for m in list(_s.modules))]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def pytest_configure(config: pytest.Config) -> None:
    # assay's pytest plugin normally arrives through its pytest11 entry point; an
    # environment without it (plugin autoloading off, or an editable install made
    # before the entry point existed) still gets the fixtures the suite relies on.
    if not config.pluginmanager.has_plugin("assay"):
        import assay.kernel.testing

        config.pluginmanager.register(assay.kernel.testing, "assay")


# pytest-xdist (`pytest -n 2 --dist loadgroup`): session fixtures start once per worker, so the tests
# that start the private container engines (a podman service, a dockerd with the image loaded) and
# the ones that load the local model each go to one worker instead of starting them twice.
ENGINE_FIXTURES = frozenset(
    {
        "podman_api_socket",
        "docker_engine_socket",
        "engine_managers",
        "shared_sessions",
        "engine_cli",
        "endpoint_socket",
        "podman_kernel",
        "docker_kernel",
        "gvisor_kernel",
        "container_kernel",
        "engine_kernel",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if ENGINE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("engines"))
        elif item.nodeid.startswith("tests/models/"):
            item.add_marker(pytest.mark.xdist_group("models"))


@pytest.fixture(autouse=True)
def _isolated_assay_env(assay_env, monkeypatch):
    """Every test gets its own ASSAY_HOME and no inherited plugin controls
    (``assay_env``, from assay's pytest plugin, ``assay.kernel.testing``), and
    never writes into an inherited ``ASSAY_CATALOG_URL``'s database."""
    monkeypatch.delenv("ASSAY_CATALOG_URL", raising=False)
    return assay_env


# --- the catalog database: SQLite (the default) or PostgreSQL ----------------------

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"


def postgres_available() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def pg_catalog_url():
    """A ``postgresql://`` catalog URL on a schema of its own (created here, dropped after)."""
    require(postgres_available(), "PostgreSQL on 127.0.0.1:5432")
    import psycopg

    schema = "assay_test_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    url = f"{PG_DSN}?options=-csearch_path%3D{schema}"
    try:
        yield url
    finally:
        from assay.kernel.database import forget

        forget(url)  # this process's connections to it
        with psycopg.connect(PG_DSN, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def catalog_backend(request, monkeypatch):
    """Run the test once on each catalog database: ``ASSAY_CATALOG_URL`` unset, then set to a fresh
    PostgreSQL schema. Modules opt in with ``pytestmark = pytest.mark.usefixtures("catalog_backend")``."""
    if request.param == "sqlite":
        yield "sqlite"
        return
    url = request.getfixturevalue("pg_catalog_url")
    monkeypatch.setenv("ASSAY_CATALOG_URL", url)
    yield "postgresql"


def run_assay(*args: str, env: dict[str, str] | None = None, input: str | None = None):
    """``assay ARGS`` run in this process, exactly as the console script runs it
    (``assay.kernel.cli:main``: a kernel from the environment, entry-point
    plugins, one-line errors and exit codes), through click's ``CliRunner``; a
    subprocess per call costs about a second. ``env`` is added to the
    environment for the call. Returns click's ``Result`` (``exit_code``,
    ``stdout``, ``stderr``)."""
    from click.testing import CliRunner

    from assay.kernel import cli
    from assay.kernel.log import reset_logging

    class _ConsoleScript:  # what CliRunner.invoke needs of a command: a name and main()
        name = "assay"

        @staticmethod
        def main(args: list[str], prog_name: str, **_: object) -> None:
            cli.main(list(args))

    try:
        return CliRunner().invoke(_ConsoleScript(), list(args), env=env, input=input)  # type: ignore[arg-type]
    finally:
        reset_logging()  # the run's ASSAY_LOG_* output must not outlive it


@pytest.fixture(autouse=True)
def _default_logging():
    """Logging is process-wide (the CLI configures it): put it back to the defaults after each test."""
    yield
    from assay.kernel.log import reset_logging

    reset_logging()
