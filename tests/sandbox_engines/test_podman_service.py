"""The private podman API service fixture answers like a Docker daemon and is gone afterwards."""

from __future__ import annotations

import os

from tests.conftest import require
from tests.sandbox_engines.podman_service import podman_service, podman_usable, socket_answers


def test_podman_service_answers_docker_ping_then_stops_and_cleans_up():
    require(podman_usable(), "podman")
    with podman_service() as path:
        assert socket_answers(path)
        directory = os.path.dirname(path)
    assert not os.path.exists(directory)
    assert not socket_answers(path, timeout=0.5)
