"""Fixtures for the sandbox engine tests (docker, nerdctl, podman, local runtimes).

``podman_api_socket`` starts one private ``podman system service`` per test
session (per xdist worker) and stops it by PID at the end; the docker runtime
talks to it as a Docker daemon (target ``docker@podman``).
``docker_engine_socket`` starts one private Docker Engine (``dockerd``) the
same way, on first use, with the sandbox image loaded into it and gVisor
registered (targets ``docker``, ``docker+gvisor``). ``sandbox_image`` is the
locally built image (``scripts/build-sandbox-image.sh``); without podman,
dockerd, runsc or the image these tests skip locally and fail in CI.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest

from tests.conftest import require
from tests.sandbox_engines import docker_daemon
from tests.sandbox_engines.podman_service import image_present, podman_service, podman_usable

TEST_IMAGE = os.environ.get("ASSAY_TEST_SANDBOX_IMAGE", "localhost/assay-sandbox-python:bookworm")


@pytest.fixture(scope="session")
def podman_ok() -> bool:
    return podman_usable()


@pytest.fixture(scope="session")
def sandbox_image(podman_ok: bool) -> str:
    """The sandbox image name, after checking podman answers and the image exists."""
    require(podman_ok, "podman")
    require(
        image_present(TEST_IMAGE),
        f"sandbox image {TEST_IMAGE} (run scripts/build-sandbox-image.sh)",
    )
    return TEST_IMAGE


def _on_first_use(start: Callable[[], AbstractContextManager[str]]) -> Iterator[Callable[[], str]]:
    """A session fixture's body: yields a getter that enters ``start()`` on its first call (the
    service's socket path), then leaves that context when the session ends, if it was entered."""
    entered: list[tuple[AbstractContextManager[str], str]] = []

    def get() -> str:
        if not entered:
            cm = start()
            entered.append((cm, cm.__enter__()))
        return entered[0][1]

    yield get
    if entered:
        entered[0][0].__exit__(None, None, None)


@pytest.fixture(scope="session")
def _podman_service_on_demand():
    """Starts the private podman API service on first use; stops it (by PID) last.

    Fixtures that hold containers depend on this one, so the service outlives
    their clean-up even when it was started lazily, after them.
    """
    yield from _on_first_use(podman_service)


@pytest.fixture(scope="session")
def podman_api_socket(podman_ok: bool, _podman_service_on_demand) -> str:
    """Path of a private podman API socket (Docker-compatible), alive for the session."""
    require(podman_ok, "podman")
    return _podman_service_on_demand()


@pytest.fixture(scope="session")
def _dockerd_on_demand():
    """Starts the private Docker Engine (image loaded) on first use; stops it (by PID) last."""
    yield from _on_first_use(lambda: docker_daemon.docker_daemon(TEST_IMAGE))


@pytest.fixture(scope="session")
def docker_engine_socket(sandbox_image: str, _dockerd_on_demand) -> str:
    """Path of a private Docker Engine's socket (the sandbox image loaded), alive for the session."""
    require(docker_daemon.dockerd_binary() is not None, "dockerd (apt-get install docker.io)")
    return _dockerd_on_demand()


@pytest.fixture(scope="session")
def endpoint_socket(request):
    """``get(target)``: the socket path the target's runtime talks to (None for nerdctl, local)."""
    from tests.sandbox_engines.engines import endpoint_of, is_gvisor

    def get(target: str) -> str | None:
        if is_gvisor(target):
            require(
                docker_daemon.runsc_binary() is not None, "gVisor's runsc (apt-get install runsc)"
            )
        endpoint = endpoint_of(target)
        if endpoint == "podman":
            return request.getfixturevalue("podman_api_socket")
        if endpoint == "dockerd":
            return request.getfixturevalue("docker_engine_socket")
        return None

    return get


@pytest.fixture(scope="session")
def engine_cli(endpoint_socket):
    """``argv(target)``: the CLI that steers the target's containers (podman's, or docker's on the private
    daemon): ``kill``, ``wait``, ``start``, ``container inspect`` take the same arguments in both."""
    from tests.sandbox_engines.engines import endpoint_of

    def argv(target: str) -> list[str]:
        if endpoint_of(target) == "dockerd":
            return [
                docker_daemon.docker_cli() or "docker",
                "-H",
                f"unix://{endpoint_socket(target)}",
            ]
        return ["podman"]

    return argv


@pytest.fixture(scope="session")
def engine_managers(request, _podman_service_on_demand, _dockerd_on_demand, endpoint_socket):
    """``get(target, **overrides)``: a SandboxManager per (target, overrides), shared by the session.

    A target is a runtime on an endpoint, with settings (``engines.TARGETS``:
    ``docker`` is the private Docker Engine, ``docker@podman`` podman's
    compatible API, ``podman+gvisor`` podman with runsc, ...). Managers are
    closed only when the test session ends: closing one removes every
    container its process owns on that engine, which would pull shared
    sessions of other tests from under them.
    """
    from tests.sandbox_engines.engines import TARGETS, endpoint_of, manager_for, runtime_of

    made: dict[tuple, object] = {}

    def get(target: str, **overrides):
        if target != "local":
            request.getfixturevalue("sandbox_image")
        socket_path = endpoint_socket(target)
        key = (target, tuple(sorted(overrides.items())))
        if key not in made:
            made[key] = manager_for(
                runtime_of(target), socket_path, **{**TARGETS[target][2], **overrides}
            )
        return made[key]

    yield get
    opened = {sid for manager in made.values() for sid in manager.opened}
    for manager in made.values():
        manager.close()
    leaked: list[str] = []
    if opened and podman_usable():
        leaked += _containers_of_sessions(["podman"], os.getpid(), opened)
    if opened and any(endpoint_of(target) == "dockerd" for target, _ in made):
        leaked += _containers_of_sessions(
            [docker_daemon.docker_cli() or "docker", "-H", f"unix://{_dockerd_on_demand()}"],
            os.getpid(),
            opened,
        )
    if leaked:
        pytest.fail(f"sandbox containers outlived their managers: {leaked}", pytrace=False)


def _containers_of_sessions(cli: list[str], pid: int, sessions: set[str]) -> list[str]:
    """Containers of this process that belong to the given sessions (others' are not ours to judge);
    they are removed, and returned."""
    done = subprocess.run(
        [
            *cli,
            "ps",
            "-a",
            "--filter",
            "label=assay.sandbox=1",
            "--filter",
            f"label=assay.sandbox.owner-pid={pid}",
            "--format",
            '{{.ID}} {{index .Labels "assay.sandbox.session"}}',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = [line.split() for line in done.stdout.splitlines() if line.strip()]
    leaked = [row[0] for row in rows if len(row) == 2 and row[1] in sessions]
    if leaked:
        subprocess.run([*cli, "rm", "-f", *leaked], capture_output=True, timeout=120)
    return leaked


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
