"""Fixtures for the code interpreter tests: a kernel on real podman, and one on the local runtime.

The podman kernel needs the podman binary and the sandbox image built by
``scripts/build-sandbox-image.sh``; without them the tests skip locally and
fail in CI (``tests.conftest.require``). Each test gets its own run, so its
own sandbox container, removed when the run closes.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import uuid

import pytest

from tests.conftest import require

IMAGE = os.environ.get("ASSAY_TEST_SANDBOX_IMAGE", "localhost/assay-sandbox-python:bookworm")


def _podman_image_ready() -> tuple[bool, str]:
    if shutil.which("podman") is None:
        return False, "podman"
    probe = subprocess.run(["podman", "image", "exists", IMAGE], capture_output=True)
    if probe.returncode != 0:
        return False, f"sandbox image {IMAGE} (run scripts/build-sandbox-image.sh)"
    return True, ""


def _kernel_with(home, **env: str):
    """A kernel whose sandbox manager is created under ``env`` (it keeps that config)."""
    from assay import Kernel, Settings

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        kernel = Kernel(settings=Settings.from_env(home=str(home)))
        kernel.start()
        assert kernel.sandbox.config.runtime == env.get("SANDBOX_RUNTIME")  # made now, under env
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return kernel


@pytest.fixture(scope="session")
def podman_kernel(tmp_path_factory):
    ok, what = _podman_image_ready()
    require(ok, what)
    # One full core instead of the default half: the tests import pandas in many fresh
    # processes, and the limits under test (time, memory, output) are unchanged.
    kernel = _kernel_with(
        tmp_path_factory.mktemp("ci-home"),
        SANDBOX_RUNTIME="podman",
        SANDBOX_IMAGE_PYTHON=IMAGE,
        SANDBOX_CPU_LIMIT="1",
    )
    yield kernel
    kernel.sandbox.close()


@pytest.fixture(scope="session")
def docker_kernel(tmp_path_factory):
    """The docker runtime, against a private podman service's Docker-compatible socket."""
    ok, what = _podman_image_ready()
    require(ok, what)
    from tests.sandbox_engines.podman_service import podman_service

    with podman_service() as socket_path:
        kernel = _kernel_with(
            tmp_path_factory.mktemp("ci-home-docker"),
            SANDBOX_RUNTIME="docker",
            SANDBOX_DOCKER_HOST=f"unix://{socket_path}",
            SANDBOX_IMAGE_PYTHON=IMAGE,
            SANDBOX_CPU_LIMIT="1",
        )
        yield kernel
        kernel.sandbox.close()


@pytest.fixture(scope="session")
def gvisor_kernel(tmp_path_factory):
    """podman with gVisor (``SANDBOX_OCI_RUNTIME=runsc``, registered by scripts/setup-system.sh)."""
    ok, what = _podman_image_ready()
    require(ok, what)
    require(
        shutil.which("runsc") is not None,
        "gVisor's runsc (scripts/setup-system.sh registers it with podman)",
    )
    kernel = _kernel_with(
        tmp_path_factory.mktemp("ci-home-gvisor"),
        SANDBOX_RUNTIME="podman",
        SANDBOX_IMAGE_PYTHON=IMAGE,
        SANDBOX_CPU_LIMIT="1",
        SANDBOX_OCI_RUNTIME="runsc",
    )
    yield kernel
    kernel.sandbox.close()


@pytest.fixture(scope="session", params=["podman", "docker"])
def container_kernel(request):
    """The podman kernel, then the docker one (the docker runtime on podman's Docker API)."""
    return request.getfixturevalue(f"{request.param}_kernel")


@pytest.fixture(scope="session", params=["podman", "docker", "gvisor"])
def engine_kernel(request):
    """Every container engine the notebook must work on: podman, docker, podman with gVisor."""
    return request.getfixturevalue(f"{request.param}_kernel")


@pytest.fixture(scope="session")
def local_kernel(tmp_path_factory):
    kernel = _kernel_with(
        tmp_path_factory.mktemp("ci-home-local"),
        SANDBOX_RUNTIME="local",
        SANDBOX_ALLOW_LOCAL_RUNTIME="1",
    )
    yield kernel
    kernel.sandbox.close()


@pytest.fixture(params=["podman", "local"])
def any_kernel(request):
    """The podman kernel, then the local one (for behaviour that must not depend on the runtime)."""
    return request.getfixturevalue(f"{request.param}_kernel")


def _caller(kernel, run):
    """``call(code, target=None, **args)`` -> ToolResult, in ``run`` (or ``target``)."""

    def _call(code: str, target=None, **args):
        return kernel.call_tool("code_interpreter", {"code": code, **args}, run=target or run)

    return _call


@pytest.fixture
def run(container_kernel):
    run = container_kernel.new_run()
    yield run
    run.close()


@pytest.fixture
def call(container_kernel, run):
    """``call(code, **args)`` -> ToolResult, in this test's run (on podman, then on docker)."""
    return _caller(container_kernel, run)


@pytest.fixture
def engine_run(engine_kernel):
    run = engine_kernel.new_run()
    yield run
    run.close()


@pytest.fixture
def engine_call(engine_kernel, engine_run):
    """``call(code, **args)`` on podman, docker and podman with gVisor."""
    return _caller(engine_kernel, engine_run)


@pytest.fixture
def sales_db(tmp_path):
    """A small SQLite database of sales with refunds (some during a promotion)."""
    path = tmp_path / f"sales_{uuid.uuid4().hex[:8]}.db"
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE sales (id INTEGER PRIMARY KEY, store TEXT, amount REAL, refunded INTEGER, promo INTEGER)"
    )
    rows = []
    for i in range(1, 601):
        store = ["north", "south", "east", "west"][i % 4]
        rows.append(
            (i, store, round((i * 7.31) % 97 + 1, 2), int(i % (3 + i % 4) == 0), int(i % 5 < 2))
        )
    con.executemany("INSERT INTO sales VALUES (?, ?, ?, ?, ?)", rows)
    con.commit()
    yield con
    con.close()


def capture_query(sink, con, sql: str):
    """Run ``sql`` on SQLite and capture it the way the sql tool does."""
    from assay.kernel.evidence import capture_sql_execution

    cur = con.execute(sql)
    columns = [d[0] for d in cur.description]
    return capture_sql_execution(
        sink, columns=columns, rows=cur, sql=sql, database="sales", dialect="sqlite", elapsed_ms=1.0
    )


@pytest.fixture
def any_run(any_kernel):
    run = any_kernel.new_run()
    yield run
    run.close()


@pytest.fixture
def any_call(any_kernel, any_run):
    """Like ``call``, once on podman and once on the local runtime."""
    return _caller(any_kernel, any_run)
