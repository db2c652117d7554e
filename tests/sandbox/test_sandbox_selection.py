"""Fail-closed runtime selection: real probes, no fallback, local only when allowed."""

from __future__ import annotations

import pytest

from assay import Kernel
from assay.plugins.sandbox import (
    SANDBOX_LOCAL_NOT_ALLOWED,
    SANDBOX_RUNTIME_UNAVAILABLE,
    SANDBOX_UNKNOWN_RUNTIME,
    ProbeResult,
    SandboxConfig,
    SandboxError,
    SandboxRuntime,
    select_runtime,
)

PROBED: list[str] = []


def fake(name: str, available: bool, isolated: bool = True) -> type[SandboxRuntime]:
    class Fake(SandboxRuntime):
        def probe(self) -> ProbeResult:
            PROBED.append(name)
            return ProbeResult(
                runtime=name,
                available=available,
                isolated=isolated,
                detail="answered" if available else f"{name} socket refused",
            )

        def create_session(self, spec):  # pragma: no cover - selection only
            raise AssertionError("not used")

    Fake.name = name
    Fake.isolated = isolated
    return Fake


@pytest.fixture(autouse=True)
def _clear():
    PROBED.clear()


def test_named_runtime_that_answers_is_used():
    rt, probes = select_runtime(
        SandboxConfig.from_env(runtime="podman"),
        {"podman": fake("podman", True), "docker": fake("docker", True)},
    )
    assert rt.name == "podman" and PROBED == ["podman"]


def test_named_runtime_that_fails_its_probe_raises_and_never_falls_back():
    with pytest.raises(SandboxError) as err:
        select_runtime(
            SandboxConfig.from_env(runtime="docker", allow_local_runtime=True),
            {
                "docker": fake("docker", False),
                "podman": fake("podman", True),
                "local": fake("local", True, isolated=False),
            },
        )
    assert err.value.code == SANDBOX_RUNTIME_UNAVAILABLE
    assert "docker socket refused" in err.value.message
    assert PROBED == ["docker"]


def test_named_runtime_whose_plugin_is_missing_is_unavailable():
    with pytest.raises(SandboxError) as err:
        select_runtime(SandboxConfig.from_env(runtime="nerdctl"), {"podman": fake("podman", True)})
    assert err.value.code == SANDBOX_RUNTIME_UNAVAILABLE and "nerdctl" in err.value.message
    assert PROBED == []


def test_unknown_runtime_name_has_its_own_code():
    with pytest.raises(SandboxError) as err:
        select_runtime(SandboxConfig.from_env(runtime="lxc"), {})
    assert err.value.code == SANDBOX_UNKNOWN_RUNTIME


def test_local_without_the_allow_flag_is_refused():
    with pytest.raises(SandboxError) as err:
        select_runtime(
            SandboxConfig.from_env(runtime="local"), {"local": fake("local", True, isolated=False)}
        )
    assert err.value.code == SANDBOX_LOCAL_NOT_ALLOWED
    assert PROBED == []


def test_detection_tries_docker_podman_nerdctl_in_order():
    rt, probes = select_runtime(
        SandboxConfig.from_env(),
        {
            "nerdctl": fake("nerdctl", True),
            "podman": fake("podman", True),
            "docker": fake("docker", False),
        },
    )
    assert rt.name == "podman" and PROBED == ["docker", "podman"]


def test_detection_fails_closed_when_nothing_answers():
    with pytest.raises(SandboxError) as err:
        select_runtime(
            SandboxConfig.from_env(),
            {
                "docker": fake("docker", False),
                "podman": fake("podman", False),
                "local": fake("local", True, isolated=False),
            },
        )
    assert err.value.code == SANDBOX_RUNTIME_UNAVAILABLE
    assert (
        "docker socket refused" in err.value.message
        and "podman socket refused" in err.value.message
    )
    assert "SANDBOX_ALLOW_LOCAL_RUNTIME" in err.value.hint
    assert "local" not in PROBED


def test_detection_uses_local_only_when_allowed_and_nothing_else_answers():
    rt, _ = select_runtime(
        SandboxConfig.from_env(allow_local_runtime=True),
        {
            "docker": fake("docker", False),
            "podman": fake("podman", False),
            "local": fake("local", True, isolated=False),
        },
    )
    assert rt.name == "local" and rt.isolated is False


def test_a_probe_that_raises_counts_as_unavailable():
    class Broken(fake("podman", True)):
        def probe(self):
            raise OSError("boom")

    with pytest.raises(SandboxError) as err:
        select_runtime(SandboxConfig.from_env(runtime="podman"), {"podman": Broken})
    assert err.value.code == SANDBOX_RUNTIME_UNAVAILABLE and "boom" in err.value.message


def test_real_podman_probe_against_a_dead_socket_fails_closed(tmp_path):
    from assay.sandbox_runtimes.podman import PodmanRuntime

    config = SandboxConfig.from_env(
        runtime="podman", podman_socket=str(tmp_path / "none.sock"), probe_timeout=2
    )
    with pytest.raises(SandboxError) as err:
        select_runtime(config, {"podman": PodmanRuntime})
    assert err.value.code == SANDBOX_RUNTIME_UNAVAILABLE
    assert "none.sock" in err.value.message


def test_runtimes_register_through_the_hook_and_the_kernel_manager_uses_them(monkeypatch):
    monkeypatch.setenv("SANDBOX_RUNTIME", "local")
    kernel = Kernel()
    registry = kernel.registry("sandbox_runtimes")
    assert {"podman", "local"} <= set(registry)
    assert registry.get("local").isolated is False and registry.get("podman").isolated is True
    manager = kernel.sandbox
    assert kernel.sandbox is manager
    with pytest.raises(SandboxError) as err:
        manager.open_session()
    assert err.value.code == SANDBOX_LOCAL_NOT_ALLOWED
    manager.close()
