"""`assay sandbox doctor | build-image | run`, in-process through click's CliRunner."""

from __future__ import annotations

import json

import pytest

from tests.conftest import require, run_assay
from tests.sandbox.conftest import podman_ready


def _assay(*args: str, env_extra: dict | None = None):
    return run_assay(*args, env={"ASSAY_LOG_LEVEL": "ERROR", **(env_extra or {})})


def test_sandbox_commands_are_registered():
    out = _assay("sandbox", "--help")
    assert out.exit_code == 0
    for cmd in ("doctor", "build-image", "run"):
        assert cmd in out.stdout


def test_run_on_local_without_the_allow_flag_is_refused():
    out = _assay("sandbox", "run", "--runtime", "local", "--", "print(1)")
    assert out.exit_code != 0 and "SANDBOX_LOCAL_NOT_ALLOWED" in out.stderr


def test_run_local_when_allowed_prints_the_result_and_warns():
    out = _assay(
        "sandbox",
        "run",
        "--runtime",
        "local",
        "--json",
        "--",
        "print(6*7)",
        env_extra={"SANDBOX_ALLOW_LOCAL_RUNTIME": "1"},
    )
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["stdout"] == "42\n" and data["isolated"] is False and data["warnings"]


def test_run_reads_the_sandbox_table_of_the_config_file(tmp_path):
    config = tmp_path / "assay.toml"
    config.write_text('[sandbox]\nruntime = "local"\nallow_local_runtime = true\n')
    out = _assay(
        "sandbox", "run", "--json", "--", "print(6*7)", env_extra={"ASSAY_CONFIG": str(config)}
    )
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["stdout"] == "42\n" and data["isolated"] is False


@pytest.mark.podman
def test_run_on_podman_exits_with_the_codes_status():
    ok, what = podman_ready()
    require(ok, what)
    out = _assay(
        "sandbox", "run", "--runtime", "podman", "--", "import sys; print('hi'); sys.exit(3)"
    )
    assert out.exit_code == 3 and out.stdout == "hi\n" and "exit 3" in out.stderr
    timed = _assay(
        "sandbox",
        "run",
        "--runtime",
        "podman",
        "--timeout",
        "1",
        "--json",
        "--",
        "while True: pass",
    )
    assert timed.exit_code == 124 and json.loads(timed.stdout)["timed_out"] is True


@pytest.mark.podman
def test_doctor_reports_runtime_version_oci_runtime_cgroups_image_and_limits():
    ok, what = podman_ready()
    require(ok, what)
    out = _assay("sandbox", "doctor", "--json")
    report = json.loads(out.stdout)
    podman = report["runtimes"]["podman"]
    assert (
        podman["available"]
        and podman["version"]
        and podman["oci_runtime"]
        and podman["cgroup_version"]
    )
    assert podman["image_present"] is True
    assert podman["limits"]["memory limit"] is True and podman["limits"]["pids limit"] is True
    assert report["runtimes"]["local"]["isolated"] is False
    assert report["selected"]["runtime"] in {"docker", "podman", "nerdctl"}


def test_doctor_explains_how_to_fix_a_dead_runtime(tmp_path):
    out = _assay(
        "sandbox",
        "doctor",
        env_extra={
            "SANDBOX_RUNTIME": "podman",
            "SANDBOX_PODMAN_SOCKET": str(tmp_path / "dead.sock"),
        },
    )
    assert out.exit_code == 1
    assert "SANDBOX_RUNTIME_UNAVAILABLE" in out.stdout and "hint:" in out.stdout


def test_doctor_shows_assays_seccomp_profile_and_what_it_denies():
    # Issue 13, item 4.
    from assay.plugins.sandbox import seccomp

    ok, what = podman_ready()
    require(ok, what)
    report = json.loads(_assay("sandbox", "doctor", "--json").stdout)
    podman = report["runtimes"]["podman"]
    assert podman["limits"]["seccomp (assay profile)"] is True
    assert (
        seccomp.digest() in podman["seccomp_profile"]
        and "kernel keyring" in podman["seccomp_profile"]
    )
    text = _assay("sandbox", "doctor").stdout
    assert f"seccomp_profile: assay profile {seccomp.digest()}" in text
