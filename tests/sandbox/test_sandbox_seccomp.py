"""assay's seccomp profile: what it allows, what it denies, and refusing a container without it (issue 13)."""

from __future__ import annotations

import json

import pytest

from assay.plugins.sandbox import SandboxConfig, build_spec, seccomp
from assay.plugins.sandbox.spec import verify_inspect

NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET

DENIED = (
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "mount",
    "umount2",
    "fsopen",
    "fsmount",
    "move_mount",
    "open_tree",
    "pivot_root",
    "chroot",
    "init_module",
    "finit_module",
    "kexec_load",
    "reboot",
    "swapon",
    "syslog",
    "socketcall",
    "name_to_handle_at",
    "open_by_handle_at",
    "modify_ldt",
    "vmsplice",
    # Linux AIO: its contexts count against fs.aio-max-nr, one quota for the whole host (issue 31).
    "io_setup",
    "io_submit",
    "io_getevents",
    "io_pgetevents",
    "io_cancel",
    "io_destroy",
    "io_uring_register",
)


def _rules(name):
    return [r for r in seccomp.profile()["syscalls"] if name in r["names"]]


def test_the_profile_is_an_allow_list_that_leaves_the_escapes_out():
    p = seccomp.profile()
    assert p["defaultAction"] == "SCMP_ACT_ERRNO" and p["defaultErrnoRet"] == 1
    assert [a["architecture"] for a in p["archMap"]] == ["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"]
    assert all(
        not a["subArchitectures"] for a in p["archMap"]
    )  # no 32-bit ABI (socketcall hides families)
    for name in DENIED:
        assert all(r["action"] != "SCMP_ACT_ALLOW" for r in _rules(name)), name


def test_clone_is_allowed_only_without_namespace_flags_and_clone3_falls_back():
    (clone,) = _rules("clone")
    assert clone["args"] == [
        {"index": 0, "value": NAMESPACE_FLAGS, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}
    ]
    (clone3,) = _rules("clone3")
    assert (
        clone3["action"] == "SCMP_ACT_ERRNO" and clone3["errnoRet"] == 38
    )  # ENOSYS: libc uses clone


def test_sockets_only_for_unix_and_ip_families():
    families = sorted(r["args"][0]["value"] for r in _rules("socket"))
    assert families == [1, 2, 10]
    assert all(
        r["action"] == "SCMP_ACT_ALLOW"
        and len(r["args"]) == 1
        and r["args"][0]["op"] == "SCMP_CMP_EQ"
        and r["args"][0]["index"] == 0
        for r in _rules("socket")
    )
    assert [r["args"][0]["value"] for r in _rules("socketpair")] == [1]


def test_the_profile_ships_as_package_data_next_to_its_module():
    assert seccomp.PROFILE_PATH.name == "seccomp.json" and seccomp.PROFILE_PATH.is_file()
    assert seccomp.security_opt() == f"seccomp={seccomp.PROFILE_PATH}"
    assert json.loads(seccomp.security_opt(as_text=True)[len("seccomp=") :]) == seccomp.profile()


def _inspect(spec, security_opt):
    return {
        "HostConfig": {
            "NetworkMode": "none",
            "Memory": spec.memory_bytes,
            "MemorySwap": spec.memory_swap_bytes,
            "CpuQuota": spec.cpu_quota_us,
            "PidsLimit": spec.pids_limit,
            "SecurityOpt": security_opt,
            "ReadonlyRootfs": True,
            "Init": True,
            "ShmSize": spec.shm_bytes,
        },
        "Config": {"User": spec.user},
    }


@pytest.fixture
def spec():
    return build_spec(SandboxConfig.from_env(), language="python", name="t", labels={})


def test_inspect_without_the_profile_is_refused(spec, tmp_path):
    # Issue 13, item 4: runtimes remove and refuse such a container (podman, docker, nerdctl).
    assert verify_inspect(spec, _inspect(spec, ["no-new-privileges", seccomp.security_opt()])) == []
    assert (
        verify_inspect(
            spec, _inspect(spec, ["no-new-privileges", seccomp.security_opt(as_text=True)])
        )
        == []
    )
    other = dict(seccomp.profile(), defaultAction="SCMP_ACT_ALLOW")
    copy = tmp_path / "seccomp.json"
    copy.write_text(json.dumps(seccomp.profile()))
    for opts in (
        ["no-new-privileges"],
        ["no-new-privileges", "seccomp=unconfined"],
        ["no-new-privileges", "seccomp=" + json.dumps(other)],
        ["no-new-privileges", f"seccomp={copy}"],  # a copy elsewhere could be changed later
        ["no-new-privileges", seccomp.security_opt(), "seccomp=/other.json"],
    ):
        problems = verify_inspect(spec, _inspect(spec, opts))
        assert any("seccomp" in p for p in problems), opts


def test_oci_spec_check_tells_the_profile_from_another():
    assert seccomp.oci_mismatch(seccomp.profile()) is None
    assert seccomp.oci_mismatch(None)
    assert seccomp.oci_mismatch(dict(seccomp.profile(), defaultAction="SCMP_ACT_ALLOW"))
    loose = json.loads(json.dumps(seccomp.profile()))
    loose["syscalls"].append({"names": ["unshare"], "action": "SCMP_ACT_ALLOW"})
    assert "unshare" in seccomp.oci_mismatch(loose)


def test_podman_create_body_names_the_profile(spec):
    from assay.sandbox_runtimes.podman import spec_generator

    body = spec_generator(spec)
    assert body["seccomp_profile_path"] == str(seccomp.PROFILE_PATH)
    assert "--security-opt" in spec.cli_run_args() and seccomp.security_opt() in spec.cli_run_args()
