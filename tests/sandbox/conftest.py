"""Fixtures for the sandbox tests: real podman, the local runtime, fakes for selection."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import pytest

from tests.conftest import require

DEFAULT_TEST_IMAGE = "localhost/assay-sandbox-python:bookworm"


def sandbox_image() -> str:
    return os.environ.get("SANDBOX_IMAGE_PYTHON") or DEFAULT_TEST_IMAGE


def podman_ready() -> tuple[bool, str]:
    if shutil.which("podman") is None:
        return False, "podman binary"
    image = sandbox_image()
    probe = subprocess.run(["podman", "image", "exists", image], capture_output=True)
    if probe.returncode != 0:
        return False, f"podman image {image} (build it: assay sandbox build-image)"
    return True, ""


@pytest.fixture(autouse=True)
def _sandbox_env(monkeypatch):
    """No SANDBOX_* from the developer's shell leaks into a test, except the image."""
    for var in list(os.environ):
        if var.startswith("SANDBOX_") and var != "SANDBOX_IMAGE_PYTHON":
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SANDBOX_IMAGE_PYTHON", sandbox_image())
    yield


@pytest.fixture(scope="module")
def podman_runtime():
    ok, what = podman_ready()
    require(ok, what)
    from assay.plugins.sandbox import SandboxConfig
    from assay.sandbox_runtimes.podman import PodmanRuntime

    runtime = PodmanRuntime(SandboxConfig.from_env(runtime="podman", image_python=sandbox_image()))
    probe = runtime.probe()
    require(probe.available, f"podman API ({probe.detail})")
    yield runtime
    runtime.close()


@pytest.fixture(scope="module")
def podman_manager(podman_runtime):
    from assay.plugins.sandbox import SandboxConfig, SandboxManager

    config = SandboxConfig.from_env(runtime="podman", image_python=sandbox_image(), host_grace=3)
    manager = SandboxManager(config, runtime=podman_runtime)
    yield manager
    manager.close()


@pytest.fixture(scope="module")
def podman_session(podman_manager):
    """One shared container for read-only probes (each test must not rely on others' state)."""
    session = podman_manager.open_session()
    yield session
    session.close()


@pytest.fixture
def local_manager(monkeypatch):
    from assay.plugins.sandbox import SandboxConfig, SandboxManager
    from assay.sandbox_runtimes.local import LocalRuntime

    config = SandboxConfig.from_env(runtime="local", allow_local_runtime=True)
    manager = SandboxManager(config, {"local": LocalRuntime})
    yield manager
    manager.close()


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def podman_container_exists(cid: str) -> bool:
    out = subprocess.run(
        ["podman", "ps", "-a", "-q", "--no-trunc", "--filter", f"id={cid}"],
        capture_output=True,
        text=True,
    )
    return cid in out.stdout
