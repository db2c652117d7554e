"""Fixtures for the sandbox engine tests (docker, nerdctl, podman, local runtimes).

``podman_api_socket`` starts one private ``podman system service`` per test
session (per xdist worker) and stops it by PID at the end; the docker runtime
talks to it as a Docker daemon. ``sandbox_image`` is the locally built image
(``scripts/build-sandbox-image.sh``); without podman or the image these tests
skip locally and fail in CI.
"""

from __future__ import annotations

import os

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
def podman_api_socket(podman_ok: bool):
    """Path of a private podman API socket (Docker-compatible), alive for the session."""
    require(podman_ok, "podman")
    with podman_service() as path:
        yield path
