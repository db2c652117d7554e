"""SandboxConfig: the seed's defaults, SANDBOX_* variables, refusals."""

from __future__ import annotations

import pytest

from assay.kernel.sandbox import SANDBOX_CONFIG_INVALID, SandboxConfig, SandboxError, parse_size


def test_defaults_are_the_seeds(monkeypatch):
    monkeypatch.delenv("SANDBOX_IMAGE_PYTHON", raising=False)
    c = SandboxConfig.from_env()
    assert c.runtime is None and c.allow_local_runtime is False
    assert c.memory_limit == 256 * 1024**2
    assert c.cpu_limit == 0.5
    assert c.timeout == 30
    assert c.max_file_size == 10 * 1024**2
    assert c.max_processes == 10
    assert c.workdir == "/workspace"
    assert c.image_for("python") == "python:3.11-slim"
    assert c.idle_ttl == 300 and c.max_lifetime == 3600
    assert c.output_limit == 1024**2
    assert c.pool_size == 0


def test_environment_variables_are_read(monkeypatch):
    monkeypatch.setenv("SANDBOX_RUNTIME", "Podman")
    monkeypatch.setenv("SANDBOX_MEMORY_LIMIT", "128m")
    monkeypatch.setenv("SANDBOX_CPU_LIMIT", "0.25")
    monkeypatch.setenv("SANDBOX_TIMEOUT", "5")
    monkeypatch.setenv("SANDBOX_MAX_FILE_SIZE", "1MB")
    monkeypatch.setenv("SANDBOX_MAX_PROCESSES", "7")
    monkeypatch.setenv("SANDBOX_ALLOW_LOCAL_RUNTIME", "1")
    monkeypatch.setenv("SANDBOX_IMAGE_PYTHON", "localhost/x:y")
    c = SandboxConfig.from_env()
    assert (c.runtime, c.memory_limit, c.cpu_limit, c.timeout) == ("podman", 128 * 1024**2, 0.25, 5)
    assert (c.max_file_size, c.max_processes, c.allow_local_runtime) == (1024**2, 7, True)
    assert c.image_for("python") == "localhost/x:y"
    assert c.image_for("shell") == "localhost/x:y"


@pytest.mark.parametrize(
    "var,value",
    [("SANDBOX_MEMORY_LIMIT", "lots"), ("SANDBOX_MEMORY_LIMIT", "1m"), ("SANDBOX_USER", "0:0"),
     ("SANDBOX_USER", "root"), ("SANDBOX_WORKDIR", "/"), ("SANDBOX_WORKDIR", "/a/../etc"),
     ("SANDBOX_OCI_RUNTIME", "runsc --flag"), ("SANDBOX_CPU_LIMIT", "0")],
)
def test_invalid_values_are_refused_with_a_code(monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(SandboxError) as err:
        SandboxConfig.from_env()
    assert err.value.code == SANDBOX_CONFIG_INVALID


def test_sizes_parse_units():
    assert parse_size("256m") == 256 * 1024**2
    assert parse_size("10MB") == 10 * 1024**2
    assert parse_size("1g") == 1024**3
    assert parse_size(4096) == 4096
    with pytest.raises(ValueError):
        parse_size("12 parsecs")
