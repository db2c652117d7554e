"""Every hardening property, proven twice on real podman: the created container's
inspect output, and a behavioural probe from inside."""

from __future__ import annotations

import socket

import pytest

pytestmark = pytest.mark.podman


def _inspect(manager, sb):
    return manager.inspect(sb.id)


def _run(sb, code, **kw):
    result = sb.run_code(code, **kw)
    assert result.isolated and result.runtime == "podman"
    return result


def test_no_network(podman_manager, podman_session):
    assert _inspect(podman_manager, podman_session)["HostConfig"]["NetworkMode"] == "none"
    r = _run(
        podman_session,
        (
            "import socket\n"
            "for host, port in (('127.0.0.1', 5432), ('10.0.2.2', 80), ('1.1.1.1', 53)):\n"
            "    s = socket.socket(); s.settimeout(2)\n"
            "    try:\n        s.connect((host, port)); print('CONNECTED', host)\n"
            "    except OSError as e:\n        print('blocked', host, e.errno)\n"
            "import os; print(sorted(os.listdir('/sys/class/net')))\n"
        ),
    )
    assert "CONNECTED" not in r.stdout and r.stdout.count("blocked") == 3
    assert r.stdout.strip().endswith("['lo']")


def test_host_loopback_services_are_unreachable(podman_session):
    # PostgreSQL listens on the host's 127.0.0.1:5432; the sandbox's loopback is its own.
    from tests.conftest import require

    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=2).close()
        listening = True
    except OSError:
        listening = False
    require(listening, "PostgreSQL on 127.0.0.1:5432 (the host service the sandbox must not reach)")
    r = _run(
        podman_session,
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 5432), 2); print('open')\n"
        "except OSError as e:\n    print('refused', e.errno)\n",
    )
    assert r.stdout.startswith("refused")


def test_memory_limit_with_swap_equal_to_it(podman_manager, podman_session):
    hc = _inspect(podman_manager, podman_session)["HostConfig"]
    assert hc["Memory"] == hc["MemorySwap"] == 256 * 1024**2
    r = _run(podman_session, "x = bytearray(400 * 1024 * 1024); x[::4096] = b'1' * len(x[::4096])")
    assert r.oom_killed and r.exit_code == 137 and not r.timed_out
    assert _run(podman_session, "print('alive')").stdout == "alive\n"


def test_cpu_is_a_quota_not_a_cpuset(podman_manager, podman_session):
    hc = _inspect(podman_manager, podman_session)["HostConfig"]
    assert (hc["CpuQuota"], hc["CpuPeriod"], hc["CpusetCpus"]) == (50_000, 100_000, "")
    r = _run(
        podman_session,
        (
            "import os, time\nt0 = time.monotonic(); c0 = time.process_time()\n"
            "while time.monotonic() - t0 < 2.0: pass\n"
            "print(round((time.process_time() - c0) / (time.monotonic() - t0), 2), len(os.sched_getaffinity(0)))"
        ),
    )
    share, cpus = r.stdout.split()
    assert float(share) <= 0.65, f"got {share} of a core with a 50% quota"
    assert int(cpus) == __import__("os").cpu_count()  # not pinned


def test_pids_limit_contains_a_fork_bomb(podman_manager, podman_session):
    from assay.plugins.sandbox.resident import SPARE_PIDS

    assert _inspect(podman_manager, podman_session)["HostConfig"]["PidsLimit"] == 10 + SPARE_PIDS
    r = _run(
        podman_session,
        (
            "import os, time\nkids = 0\n"
            "for _ in range(200):\n"
            "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
            "    if pid == 0:\n        time.sleep(30); os._exit(0)\n    kids += 1\n"
            "print(kids)\n"
        ),
        timeout_s=10,
    )
    assert int(r.stdout.strip()) < 10
    assert _run(podman_session, "print('alive')").stdout == "alive\n"


def test_all_capabilities_dropped(podman_manager, podman_session):
    hc = _inspect(podman_manager, podman_session)["HostConfig"]
    assert not hc["CapAdd"] and "CAP_SYS_ADMIN" not in str(hc.get("CapAdd"))
    assert {"CAP_CHOWN", "CAP_SETUID", "CAP_NET_RAW", "CAP_KILL"} <= set(hc["CapDrop"])
    r = _run(
        podman_session,
        "print([l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapBnd', 'CapPrm'))])",
    )
    assert r.stdout.strip() == "['0000000000000000', '0000000000000000', '0000000000000000']"


def test_no_new_privileges_and_setuid_escalation_fails(podman_manager, podman_session):
    assert (
        "no-new-privileges" in _inspect(podman_manager, podman_session)["HostConfig"]["SecurityOpt"]
    )
    r = _run(
        podman_session,
        (
            "import os, subprocess\n"
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('NoNewPrivs')][0])\n"
            "try:\n    os.setuid(0); print('became root')\nexcept PermissionError:\n    print('setuid refused')\n"
            "print(subprocess.run(['su', '-c', 'id -u'], capture_output=True, text=True).returncode != 0)\n"
        ),
        language="python",
    )
    assert r.stdout.split() == ["1", "setuid", "refused", "True"]


def test_read_only_root_filesystem(podman_manager, podman_session):
    assert _inspect(podman_manager, podman_session)["HostConfig"]["ReadonlyRootfs"] is True
    r = _run(
        podman_session,
        (
            "for p in ('/etc/evil', '/usr/bin/evil', '/evil'):\n"
            "    try:\n        open(p, 'w'); print('wrote', p)\n    except OSError as e:\n        print(e.errno)\n"
        ),
    )
    assert "wrote" not in r.stdout and set(r.stdout.split()) <= {"30", "13"}


def test_workspace_and_tmp_are_size_limited_tmpfs(podman_manager):
    with podman_manager.open_session(workspace_size="8m", tmp_size="4m") as sb:
        tmpfs = podman_manager.inspect(sb.id)["HostConfig"]["Tmpfs"]
        assert (
            f"size={8 * 1024**2}" in tmpfs["/workspace"] and f"size={4 * 1024**2}" in tmpfs["/tmp"]
        )
        assert all("nosuid" in v and "nodev" in v for v in tmpfs.values())
        r = _run(
            sb,
            (
                "import errno\n"
                "def fill(d):\n"
                "    try:\n"
                "        for i in range(20):\n"
                "            with open(f'{d}/f{i}', 'wb') as fh: fh.write(b'x' * 1024 * 1024)\n"
                "    except OSError as e:\n        return errno.errorcode[e.errno]\n"
                "print(fill('/workspace'), fill('/tmp'))\n"
            ),
        )
        assert r.stdout.split() == ["ENOSPC", "ENOSPC"]


def test_file_size_ulimit(podman_manager, podman_session):
    ulimits = {
        u["Name"]: u for u in _inspect(podman_manager, podman_session)["HostConfig"]["Ulimits"]
    }
    assert ulimits["RLIMIT_FSIZE"]["Hard"] == 10 * 1024**2
    r = _run(
        podman_session,
        (
            "import errno\ntry:\n    open('/workspace/big', 'wb').write(b'x' * (11 * 1024 * 1024)); print('wrote')\n"
            "except OSError as e:\n    print(errno.errorcode[e.errno])\n"
            "import os; os.remove('/workspace/big')\n"
        ),
    )
    assert r.stdout.strip() == "EFBIG"


def test_non_root_users(podman_manager, podman_session):
    keeper, code, _ = podman_manager.session_users(podman_session.id)
    assert _inspect(podman_manager, podman_session)["Config"]["User"] == keeper
    r = _run(podman_session, "import os; print(os.getuid(), os.getgid(), os.geteuid())")
    assert r.stdout.split() == [code.split(":")[0]] * 3 and int(r.stdout.split()[0]) > 65534


def test_init_process(podman_manager, podman_session):
    assert _inspect(podman_manager, podman_session)["HostConfig"]["Init"] is True
    r = _run(podman_session, "print(open('/proc/1/cmdline').read().split(chr(0))[0])")
    assert "init" in r.stdout


def test_no_host_mounts(podman_manager, podman_session, tmp_path):
    info = _inspect(podman_manager, podman_session)
    assert info["Mounts"] == [] and not info["HostConfig"]["Binds"]
    sentinel = tmp_path / "host-only.txt"
    sentinel.write_text("secret on the host")
    r = _run(
        podman_session,
        (
            f"import os; print(os.path.exists({str(sentinel)!r}))\n"
            "print(sorted({l.split()[4] for l in open('/proc/self/mountinfo')} & {'/host', '/root', '/home', '/work'}))\n"
        ),
    )
    assert r.stdout.split("\n")[:2] == ["False", "[]"]


def test_environment_is_an_allow_list(podman_manager, monkeypatch):
    monkeypatch.setenv("ASSAY_TEST_HOST_SECRET", "hunter2")
    with podman_manager.open_session() as sb:
        env = podman_manager.inspect(sb.id)["Config"]["Env"]
        assert not any("hunter2" in e for e in env)
        r = _run(
            sb,
            "import os; print('hunter2' in str(os.environ), os.environ.get('OPENBLAS_NUM_THREADS'))",
        )
    assert r.stdout.split() == ["False", "1"]


def test_assay_seccomp_profile_is_applied(podman_manager, podman_session):
    from assay.plugins.sandbox import seccomp

    opts = _inspect(podman_manager, podman_session)["HostConfig"]["SecurityOpt"]
    assert not any("unconfined" in o for o in opts)
    assert seccomp.applied(opts), opts
    r = _run(
        podman_session,
        (
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')][0])\n"
            "import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "print(libc.syscall(165, b'none', b'/tmp', b'tmpfs', 0, None), errno.errorcode[ctypes.get_errno()])\n"
        ),
    )
    assert r.stdout.split() == ["2", "-1", "EPERM"]  # 2 = seccomp filter mode; mount(2) refused


def test_labels_name_the_owner_and_expiry(podman_manager, podman_session):
    import os

    from assay.plugins.sandbox.labels import process_start_time

    labels = _inspect(podman_manager, podman_session)["Config"]["Labels"]
    assert labels["assay.sandbox"] == "1"
    assert labels["assay.sandbox.owner-pid"] == str(os.getpid())
    assert labels["assay.sandbox.owner-start"] == process_start_time(os.getpid())
    assert float(labels["assay.sandbox.expires"]) - float(
        labels["assay.sandbox.created"]
    ) == pytest.approx(3600)


def test_gvisor_is_opt_in(podman_manager, podman_session):
    assert _inspect(podman_manager, podman_session)["OCIRuntime"] != "runsc"


def test_gvisor_when_asked_runs_the_code_under_gvisors_kernel(podman_manager):
    import os
    import shutil

    from tests.conftest import require

    require(shutil.which("runsc") is not None, "gVisor's runsc (apt-get install runsc)")
    with podman_manager.open_session(oci_runtime="runsc") as sb:
        assert podman_manager.inspect(sb.id)["OCIRuntime"] == "runsc"
        release = _run(sb, "import platform; print(platform.release())").stdout.strip()
    assert release != os.uname().release and release == "4.4.0", release


def test_a_named_oci_runtime_podman_does_not_have_fails_closed(podman_manager):
    from assay.plugins.sandbox import SandboxError

    with pytest.raises(SandboxError) as err:
        podman_manager.open_session(oci_runtime="assay-no-such-runtime")
    assert err.value.code == "SANDBOX_START_FAILED" and "assay-no-such-runtime" in err.value.message
