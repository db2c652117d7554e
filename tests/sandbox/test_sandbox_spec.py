"""The hardened spec: what every container gets, and refusal of weakening."""

from __future__ import annotations

import dataclasses

import pytest

from assay.plugins.sandbox import (
    SANDBOX_LANGUAGE_UNSUPPORTED,
    SANDBOX_OVERRIDE_REFUSED,
    SandboxConfig,
    SandboxError,
    build_spec,
)
from assay.plugins.sandbox.labels import owner_labels
from assay.plugins.sandbox.paths import sandbox_path
from assay.plugins.sandbox.resident import SPARE_PIDS


def _spec(**overrides):
    config = SandboxConfig.from_env()
    return build_spec(
        config,
        language="python",
        name="assay-test",
        labels=owner_labels("s", "podman", 60),
        overrides=overrides,
    )


def test_default_spec_is_hardened():
    s = _spec()
    assert s.network_disabled and s.cap_drop == ("ALL",) and not s.cap_add
    assert s.no_new_privileges and s.read_only_rootfs and s.init and not s.privileged
    assert s.seccomp == "assay" and s.host_mounts == ()
    assert s.memory_bytes == s.memory_swap_bytes == 256 * 1024**2
    assert (s.cpu_quota_us, s.cpu_period_us) == (50_000, 100_000)
    assert s.pids_limit == 10 + SPARE_PIDS  # the resident's spare is assay's, not the code's
    assert {t.target for t in s.tmpfs} == {"/workspace", "/tmp"}
    assert all(t.size_bytes > 0 and "nosuid" in t.options and "nodev" in t.options for t in s.tmpfs)
    assert {u.name: u.hard for u in s.ulimits}["fsize"] == 10 * 1024**2
    assert s.user != s.exec_user and not s.user.startswith("0") and not s.exec_user.startswith("0:")
    assert s.oci_runtime is None  # gVisor only when asked for


def test_cli_args_carry_every_flag_and_no_weak_one():
    args = _spec().cli_run_args()
    joined = " ".join(args)
    for flag in (
        "--network none",
        "--cap-drop ALL",
        "--security-opt no-new-privileges",
        "--read-only",
        "--init",
        f"--pids-limit {10 + SPARE_PIDS}",
        "--cpu-quota 50000",
        "--memory-swap 268435456",
    ):
        assert flag in joined
    for bad in (
        "--privileged",
        "--cap-add",
        "-v ",
        "--volume",
        "--mount",
        "--network host",
        "--pid host",
        "unconfined",
        "--cpuset",
    ):
        assert bad not in joined


@pytest.mark.parametrize(
    "override",
    [
        {"privileged": True},
        {"cap_add": ["SYS_ADMIN"]},
        {"network_mode": "host"},
        {"network": "bridge"},
        {"volumes": {"/": {"bind": "/host"}}},
        {"binds": ["/etc:/etc"]},
        {"mounts": []},
        {"security_opt": ["seccomp=unconfined"]},
        {"user": "0:0"},
        {"pid_mode": "host"},
        {"devices": ["/dev/kmsg"]},
    ],
)
def test_weakening_overrides_are_refused(override):
    with pytest.raises(SandboxError) as err:
        _spec(**override)
    assert err.value.code == SANDBOX_OVERRIDE_REFUSED


def test_under_gvisor_the_process_limit_moves_to_rlimit_nproc_and_the_pids_limit_covers_gvisor_itself():
    from assay.plugins.sandbox.gvisor import SENTRY_PIDS

    plain, gvisor = _spec(), _spec(oci_runtime="runsc")
    nproc = {s.oci_runtime: {u.name: u.hard for u in s.ulimits}["nproc"] for s in (plain, gvisor)}
    assert (
        gvisor.pids_limit == plain.pids_limit + SENTRY_PIDS
    )  # gVisor's own threads are in that cgroup
    assert nproc["runsc"] == 10  # enforced per uid inside gVisor's kernel
    assert nproc[None] > 10  # host-wide under runc: only a backstop there
    assert _spec(oci_runtime="runsc", max_processes=5).pids_limit == 5 + SPARE_PIDS + SENTRY_PIDS


def test_limits_can_only_tighten():
    assert _spec(memory_limit="64m").memory_bytes == 64 * 1024**2
    assert _spec(max_processes=5).pids_limit == 5 + SPARE_PIDS
    for key, value in (
        ("memory_limit", "1g"),
        ("cpu_limit", 4),
        ("max_processes", 1000),
        ("timeout", 9999),
    ):
        with pytest.raises(SandboxError) as err:
            _spec(**{key: value})
        assert err.value.code == SANDBOX_OVERRIDE_REFUSED


@pytest.mark.parametrize(
    "field,value",
    [
        ("network_disabled", False),
        ("cap_add", ("NET_ADMIN",)),
        ("cap_drop", ()),
        ("no_new_privileges", False),
        ("read_only_rootfs", False),
        ("init", False),
        ("privileged", True),
        ("seccomp", "unconfined"),
        ("host_mounts", ("/etc",)),
        ("user", "0:0"),
        ("memory_swap_bytes", 0),
        ("pids_limit", 0),
        ("extra", {"Binds": ["/:/host"]}),
        ("environment", {"LD_PRELOAD": "/x.so"}),
    ],
)
def test_check_refuses_a_spec_weakened_after_construction(field, value):
    weakened = dataclasses.replace(_spec(), **{field: value})
    with pytest.raises(SandboxError) as err:
        weakened.check()
    assert err.value.code == SANDBOX_OVERRIDE_REFUSED


def test_host_environment_never_enters_unless_allow_listed(monkeypatch):
    monkeypatch.setenv("ASSAY_TEST_SECRET", "hunter2")
    monkeypatch.setenv("ASSAY_TEST_SHARED", "ok")
    assert "ASSAY_TEST_SECRET" not in _spec().environment
    monkeypatch.setenv("SANDBOX_ENV_ALLOW", "ASSAY_TEST_SHARED")
    env = _spec().environment
    assert env["ASSAY_TEST_SHARED"] == "ok" and "ASSAY_TEST_SECRET" not in env


def test_thread_counts_follow_the_cpu_quota():
    env = _spec().environment
    assert env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"


def test_unknown_language_has_a_code():
    config = SandboxConfig.from_env()
    with pytest.raises(SandboxError) as err:
        build_spec(config, language="cobol", name="x", labels={})
    assert err.value.code == SANDBOX_LANGUAGE_UNSUPPORTED


@pytest.mark.parametrize(
    "bad",
    [
        "../etc/passwd",
        "/etc/passwd",
        "a/../../x",
        "/workspace/../etc",
        "",
        "a\x00b",
        "/workspacex/y",
    ],
)
def test_paths_outside_the_workdir_are_refused(bad):
    with pytest.raises(SandboxError) as err:
        sandbox_path("/workspace", bad)
    assert err.value.code == "SANDBOX_PATH_INVALID"


def test_paths_inside_the_workdir_are_normalised():
    assert sandbox_path("/workspace", "a/./b.txt") == "/workspace/a/b.txt"
    assert sandbox_path("/workspace", "/workspace/c") == "/workspace/c"


def test_a_spec_runs_as_its_uid_blocks_users_and_says_so_in_a_label():
    from assay.kernel.sandbox import uids
    from assay.plugins.sandbox.labels import UID_BLOCK

    config = SandboxConfig.from_env()
    block = uids.UidBlock(1879048192 + 40)
    s = build_spec(config, language="python", name="t", labels={}, users=block)
    assert (s.user, s.exec_user, s.resident_user) == (
        "1879048232:1879048232",
        "1879048233:1879048233",
        "1879048234:1879048234",
    )
    assert s.labels[UID_BLOCK] == "1879048232"


def test_picked_blocks_lie_in_the_range_on_a_block_boundary():
    from assay.kernel.sandbox import uids

    for _ in range(200):
        block = uids.pick("100000-100039")
        assert 100000 <= block.first <= 100036 and (block.first - 100000) % uids.BLOCK == 0
