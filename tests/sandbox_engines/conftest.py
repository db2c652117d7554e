"""Fixtures for the sandbox engine tests (docker, nerdctl, podman, local runtimes).

``podman_api_socket`` starts one private ``podman system service`` per test
session (per xdist worker) and stops it by PID at the end; the docker runtime
talks to it as a Docker daemon. ``sandbox_image`` is the locally built image
(``scripts/build-sandbox-image.sh``); without podman or the image these tests
skip locally and fail in CI.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import require
from tests.sandbox_engines.podman_service import image_present, podman_service, podman_usable

TEST_IMAGE = os.environ.get("ASSAY_TEST_SANDBOX_IMAGE", "localhost/assay-sandbox-python:bookworm")


@pytest.fixture(scope="session")
def podman_ok() -> bool:
    return podman_usable()


@pytest.fixture(scope="session")
def sandbox_image(podman_ok: bool) -> str:
    """The sandbox image name, after checking podman answers and the image exists."""
    require(podman_ok, "podman")
    require(image_present(TEST_IMAGE), f"sandbox image {TEST_IMAGE} (run scripts/build-sandbox-image.sh)")
    return TEST_IMAGE


@pytest.fixture(scope="session")
def _podman_service_on_demand():
    """Starts the private podman API service on first use; stops it (by PID) last.

    Fixtures that hold containers depend on this one, so the service outlives
    their clean-up even when it was started lazily, after them.
    """
    holder: dict[str, object] = {}

    def get() -> str:
        if "path" not in holder:
            cm = podman_service()
            holder["path"] = cm.__enter__()
            holder["cm"] = cm
        return holder["path"]  # type: ignore[return-value]

    yield get
    if "cm" in holder:
        holder["cm"].__exit__(None, None, None)  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def podman_api_socket(podman_ok: bool, _podman_service_on_demand) -> str:
    """Path of a private podman API socket (Docker-compatible), alive for the session."""
    require(podman_ok, "podman")
    return _podman_service_on_demand()


@pytest.fixture(scope="session")
def engine_managers(request, _podman_service_on_demand):
    """``get(runtime, **overrides)``: a SandboxManager per (runtime, overrides), shared by the session.

    Managers are closed only when the test session ends: closing one removes
    every container its process owns on that engine, which would pull shared
    sessions of other tests from under them.
    """
    from tests.sandbox_engines.engines import manager_for

    made: dict[tuple, object] = {}

    def get(runtime: str, **overrides):
        if runtime != "local":
            request.getfixturevalue("sandbox_image")
        socket_path = request.getfixturevalue("podman_api_socket") if runtime in ("podman", "docker") else None
        key = (runtime, tuple(sorted(overrides.items())))
        if key not in made:
            made[key] = manager_for(runtime, socket_path, **overrides)
        return made[key]

    yield get
    opened = {sid for manager in made.values() for sid in manager.opened}
    for manager in made.values():
        manager.close()
    if opened and podman_usable():
        leaked = _containers_of_sessions(os.getpid(), opened)
        if leaked:
            subprocess.run(["podman", "rm", "-f", *leaked], capture_output=True, timeout=120)
            pytest.fail(f"sandbox containers outlived their managers: {leaked}", pytrace=False)


def _containers_of_sessions(pid: int, sessions: set[str]) -> list[str]:
    """Containers of this process that belong to the given sessions (others' are not ours to judge)."""
    done = subprocess.run(
        ["podman", "ps", "-a", "--filter", "label=assay.sandbox=1",
         "--filter", f"label=assay.sandbox.owner-pid={pid}",
         "--format", '{{.ID}} {{index .Labels "assay.sandbox.session"}}'],
        capture_output=True, text=True, timeout=60,
    )
    rows = [line.split() for line in done.stdout.splitlines() if line.strip()]
    return [row[0] for row in rows if len(row) == 2 and row[1] in sessions]


@pytest.fixture(scope="session")
def shared_sessions(engine_managers):
    """``get(runtime)``: one long-lived session per runtime for probes that change nothing."""
    opened: dict[str, object] = {}

    def get(runtime: str):
        session = opened.get(runtime)
        if session is None or session.status().state in ("closed", "expired", "broken"):
            session = opened[runtime] = engine_managers(runtime).open_session()
        return session

    return get


@pytest.fixture
def fresh_session(engine_managers):
    """``open(runtime, **manager_overrides)``: a new session of its own, closed after the test."""
    opened = []

    def open_(runtime: str, **overrides):
        session = engine_managers(runtime, **overrides).open_session()
        opened.append(session)
        return session

    yield open_
    for session in opened:
        session.close()
