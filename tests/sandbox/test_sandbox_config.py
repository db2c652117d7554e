"""SandboxConfig: the seed's defaults, SANDBOX_* variables, refusals."""

from __future__ import annotations

import pytest

from assay.plugins.sandbox import SANDBOX_CONFIG_INVALID, SandboxConfig, SandboxError, parse_size


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
    [
        ("SANDBOX_MEMORY_LIMIT", "lots"),
        ("SANDBOX_MEMORY_LIMIT", "1m"),
        ("SANDBOX_USER", "0:0"),
        ("SANDBOX_USER", "root"),
        ("SANDBOX_WORKDIR", "/"),
        ("SANDBOX_WORKDIR", "/a/../etc"),
        ("SANDBOX_OCI_RUNTIME", "runsc --flag"),
        ("SANDBOX_CPU_LIMIT", "0"),
    ],
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


def _config_file(tmp_path, monkeypatch, text: str):
    path = tmp_path / "assay.toml"
    path.write_text(text)
    monkeypatch.setenv("ASSAY_CONFIG", str(path))
    return path


def test_a_sandbox_table_in_the_config_file_is_read(monkeypatch, tmp_path):
    monkeypatch.delenv("SANDBOX_IMAGE_PYTHON", raising=False)
    _config_file(
        tmp_path,
        monkeypatch,
        '[sandbox]\nruntime = "podman"\nmemory_limit = "128m"\n'
        'timeout = 12\nimage_python = "localhost/from-file:1"\n',
    )
    c = SandboxConfig.from_env()
    assert (c.runtime, c.memory_limit, c.timeout) == ("podman", 128 * 1024**2, 12)
    assert c.image_for("python") == "localhost/from-file:1"
    assert c.cpu_limit == 0.5  # what the file does not name keeps its default


def test_sandbox_variables_win_over_the_config_file(monkeypatch, tmp_path):
    _config_file(
        tmp_path,
        monkeypatch,
        '[sandbox]\ntimeout = 12\nmax_processes = 5\nimage_python = "localhost/from-file:1"\n',
    )
    monkeypatch.setenv("SANDBOX_TIMEOUT", "7")
    monkeypatch.setenv("SANDBOX_IMAGE_PYTHON", "localhost/from-env:1")
    c = SandboxConfig.from_env()
    assert (c.timeout, c.max_processes) == (7, 5)
    assert c.image_for("python") == "localhost/from-env:1"


def test_explicit_overrides_win_over_variables_and_file(monkeypatch, tmp_path):
    from assay import Settings

    _config_file(tmp_path, monkeypatch, "[sandbox]\ntimeout = 12\n")
    monkeypatch.setenv("SANDBOX_IMAGE_PYTHON", "localhost/from-env:1")
    settings = Settings.from_env()
    c = SandboxConfig.from_settings(settings, image_python="localhost/explicit:1", timeout=3)
    assert c.image_for("python") == "localhost/explicit:1" and c.timeout == 3
    # an overridden config is a one-off: the section itself still reads variables and file
    plain = SandboxConfig.from_settings(settings)
    assert plain.image_for("python") == "localhost/from-env:1" and plain.timeout == 12
    assert settings.sections()["sandbox"] is plain


def test_an_invalid_value_in_the_file_is_refused_with_the_sandbox_code(monkeypatch, tmp_path):
    _config_file(tmp_path, monkeypatch, '[sandbox]\nuser = "0:0"\n')
    with pytest.raises(SandboxError) as err:
        SandboxConfig.from_env()
    assert err.value.code == SANDBOX_CONFIG_INVALID and "user" in err.value.message


def test_the_kernels_sandbox_reads_the_kernels_own_settings(make_assay_kernel, tmp_path):
    config = tmp_path / "kernel.toml"
    config.write_text("[sandbox]\ntimeout = 9\nmax_sessions = 3\n")
    kernel = make_assay_kernel(
        "assay.plugins.sandbox_plugin", config=str(config)
    )  # no ASSAY_CONFIG: only this kernel's settings name it
    assert (kernel.sandbox.config.timeout, kernel.sandbox.config.max_sessions) == (9, 3)
    assert kernel.settings.masked()["sandbox"]["timeout"] == 9
