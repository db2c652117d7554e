"""The escape suite: what hostile code tries, per runtime, and how it is contained.

Each test runs real code on the real engine and asserts the outcome from
outside (the host's /proc, the host's own services, the result), not only
what the code reports. The local runtime is included only where it claims
to contain the attack; where it does not (network, host files, the fork
bomb as root), the test says so by leaving it out.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid

import pytest

from assay.sandbox_runtimes.local import ENVIRONMENT_READABLE, own_uid_possible
from tests.conftest import require
from tests.sandbox_engines.engines import (
    ALL_RUNTIMES,
    GVISOR_TARGETS,
    HARDENED_TARGETS,
    host_pids_running,
    is_gvisor,
)

MiB = 1024**2


def _gone(marker: str, within_s: float = 5.0) -> list[int]:
    """Poll the host's process table until nothing carries ``marker`` (returns what is left)."""
    deadline = time.monotonic() + within_s
    left = host_pids_running(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = host_pids_running(marker)
    return left


def _facts(result) -> dict:
    assert result.exit_code == 0, (result.exit_code, result.stderr[-2000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


# Under gVisor the bomb is held at RLIMIT_NPROC. Its processes once outlived the call (a fork in
# flight while kill(-1) walked gVisor's process table); when any of the code's processes is left,
# the launcher repeats kill(-1), with spaced rounds at the end, and this test says so on every
# hardened target.
# Local runs the fork bomb as this host user; as root RLIMIT_NPROC does not apply.
@pytest.mark.parametrize("runtime", HARDENED_TARGETS)
def test_fork_bomb_is_held_to_the_pids_limit_and_killed(runtime, fresh_session, engine_managers):
    session = fresh_session(runtime)
    marker = f"forkbomb-{uuid.uuid4().hex}"
    code = f"# {marker}\nimport os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    peak = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], len(host_pids_running(marker)))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        result = session.run_code(code, timeout_s=2)
    finally:
        stop.set()
        watcher.join()
    assert result.timed_out
    limit = engine_managers(runtime).config.max_processes
    if is_gvisor(runtime):
        # The bomb's processes live in gVisor's kernel, not in the host's process table:
        # ask that kernel (the marker is spelled backwards here, so this probe does not match).
        look = (
            f"import os\nm = {marker[::-1]!r}[::-1].encode()\n"
            "print(sum(1 for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()"
            " and m in open('/proc/%s/cmdline' % p, 'rb').read()))"
        )
        rs = engine_managers(runtime)._sessions[session.id].runtime
        argv = ["python3", "-I", "-S", "-c", look]
        for _ in range(
            20
        ):  # asked as the keeper: the code's uid may still be at its limit for a moment
            code, out, err, _ = rs._run_helper(argv, 4096, user=rs.spec.user)
            if out.strip() == b"0":
                break
            time.sleep(0.25)
        assert (code, out.strip()) == (0, b"0"), (code, out, err[-500:])
        held = session.run_code(
            "import os, time\nn = 0\ntry:\n    while n < 100:\n        if os.fork() == 0:\n"
            "            time.sleep(5)\n            os._exit(0)\n        n += 1\n"
            "except OSError:\n    pass\nprint(n)",
            timeout_s=20,
        )
        assert 1 <= int(held.stdout) < limit, held  # the launcher and its child count too
    else:
        assert 1 <= peak[0] <= limit, f"saw {peak[0]} bomb processes on the host (limit {limit})"
        assert _gone(marker) == []
    assert session.run_code("print('still here')").stdout == "still here\n"


@pytest.mark.parametrize("runtime", [*ALL_RUNTIMES, *GVISOR_TARGETS])
def test_memory_bomb_is_killed_and_reported(runtime, fresh_session):
    session = fresh_session(runtime)
    code = "x = []\nwhile True:\n    x.append(b'\\x01' * (16 * 1024 * 1024))\n"
    result = session.run_code(code, timeout_s=20)
    assert not result.timed_out
    assert result.exit_code not in (0, None)
    assert result.oom_killed, result
    assert session.run_code("print('still here')").stdout == "still here\n"


# Local writes to the host's disk: only its per-file limit applies there.
@pytest.mark.parametrize("runtime", HARDENED_TARGETS)
def test_filling_the_disk_stops_at_each_tmpfs_size(runtime, fresh_session, engine_managers):
    session = fresh_session(runtime)
    code = r"""
import errno, json, os
out = {}
for place in ('/workspace', '/tmp', '/dev/shm'):
    written, err, i = 0, None, 0
    chunk = b'\0' * (1024 * 1024)
    while written < 1024 ** 3:
        try:
            with open(os.path.join(place, 'fill-%d' % i), 'wb') as fh:
                for _ in range(8):
                    fh.write(chunk)
                    fh.flush()
                    written += len(chunk)
        except OSError as e:
            err = errno.errorcode.get(e.errno, str(e.errno))
            break
        i += 1
    out[place] = [written, err]
    for name in os.listdir(place):
        if name.startswith('fill-'):
            os.unlink(os.path.join(place, name))
print(json.dumps(out))
"""
    facts = _facts(session.run_code(code, timeout_s=25))
    config = engine_managers(runtime).config
    assert (
        facts["/workspace"][1] in ("ENOSPC", "EFBIG")
        and facts["/workspace"][0] <= config.workspace_size
    )
    assert facts["/tmp"][1] in ("ENOSPC", "EFBIG") and facts["/tmp"][0] <= config.tmp_size
    # /dev/shm is the engine's own small tmpfs; it must be bounded too (and memory-charged).
    assert (
        facts["/dev/shm"][1] in ("ENOSPC", "EFBIG", "EACCES", "EROFS")
        and facts["/dev/shm"][0] <= 64 * MiB
    )
    assert (
        session.run_code(
            "open('after.txt', 'w').write('ok'); print(open('after.txt').read())"
        ).stdout
        == "ok\n"
    )


@pytest.mark.parametrize("runtime", [*ALL_RUNTIMES, *GVISOR_TARGETS])
def test_one_gib_stdout_flood_is_capped_and_the_process_ends(
    runtime, fresh_session, engine_managers
):
    session = fresh_session(runtime)
    code = (
        "import os, sys\nblock = b'x' * (1024 * 1024)\n"
        "for _ in range(1024):\n    os.write(1, block)\nsys.stderr.write('flood done')\n"
    )
    started = time.monotonic()
    result = session.run_code(code, timeout_s=30)
    took = time.monotonic() - started
    limit = engine_managers(runtime).config.output_limit
    assert not result.timed_out, f"took {took:.1f}s"
    assert result.exit_code == 0
    assert result.stdout_truncated
    assert limit // 2 <= len(result.stdout.encode()) <= limit
    assert "flood done" in result.stderr


def _host_ip() -> str | None:
    # The address this host would use towards the outside (no packet is sent).
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
    except OSError:
        return None


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


# Local shares the host's network: it does not claim to block egress.
@pytest.mark.parametrize("runtime", HARDENED_TARGETS)
def test_network_egress_fails_including_to_host_loopback_services(runtime, shared_sessions):
    require(
        _listening("127.0.0.1", 5432),
        "PostgreSQL on 127.0.0.1:5432 (the target that must be unreachable)",
    )
    targets = [
        ["127.0.0.1", 5432],
        ["127.0.0.1", 3306],
        ["10.88.0.1", 5432],
        ["1.1.1.1", 443],
        ["::1", 5432],
    ]
    host_ip = _host_ip()
    if host_ip and _listening(host_ip, 5432):
        targets.append([host_ip, 5432])
    code = r"""
import errno, json, socket
targets = %s
out = {}
for host, port in targets:
    fam = socket.AF_INET6 if ':' in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
        out['%%s:%%d' %% (host, port)] = 'CONNECTED'
    except OSError as e:
        out['%%s:%%d' %% (host, port)] = errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()
try:
    socket.getaddrinfo('deb.debian.org', 80)
    out['dns'] = 'RESOLVED'
except OSError as e:
    out['dns'] = 'failed'
print(json.dumps(out))
""" % json.dumps(targets)
    facts = _facts(shared_sessions(runtime).run_code(code, timeout_s=30))
    assert "CONNECTED" not in facts.values(), facts
    assert facts["dns"] == "failed"
    assert facts["127.0.0.1:5432"] == "ECONNREFUSED" or facts["127.0.0.1:5432"].startswith("ENET")


@pytest.mark.parametrize("runtime", [*ALL_RUNTIMES, *GVISOR_TARGETS])
def test_secrets_of_the_host_process_are_not_visible(runtime, fresh_session, monkeypatch, tmp_path):
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    monkeypatch.setenv("ASSAY_ESCAPE_TEST_SECRET", secret)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    secret_file = tmp_path / "credentials"
    secret_file.write_text(secret)
    session = fresh_session(runtime)  # created while the secrets are in this process's environment
    code = r"""
import json, os
secret, host_pid, path = %r, %d, %r
out = {'env': any(secret in v for v in os.environ.values()), 'proc_environ': []}
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            if secret.encode() in open('/proc/%%s/environ' %% pid, 'rb').read():
                cmd = open('/proc/%%s/cmdline' %% pid, 'rb').read().replace(b'\0', b' ')
                out['proc_environ'].append(pid + ' ' + cmd.decode(errors='replace')[:200])
        except OSError:
            pass
try:
    out['file'] = secret in open(path).read()
except OSError as e:
    out['file'] = type(e).__name__
try:
    out['host_pid_environ'] = secret.encode() in open('/proc/%%d/environ' %% host_pid, 'rb').read()
except OSError as e:
    out['host_pid_environ'] = type(e).__name__
print(json.dumps(out))
""" % (secret, os.getpid(), str(secret_file))
    result = session.run_code(code, timeout_s=20)
    facts = _facts(result)
    assert facts["env"] is False
    if runtime == "local" and not own_uid_possible():
        # The same user as this process: every process of it that was started with the secrets is
        # readable through /proc (a podman service or helper this test run starts meanwhile), and
        # the runtime says so on every result instead of claiming otherwise.
        assert ENVIRONMENT_READABLE in result.warnings
    else:
        assert facts["proc_environ"] == [], facts["proc_environ"]
    if runtime != "local":  # local reads the host's files and /proc by design (it is not isolated)
        assert facts["file"] in ("FileNotFoundError", "PermissionError"), facts
        assert facts["host_pid_environ"] in ("FileNotFoundError", "PermissionError", False), facts


@pytest.mark.parametrize("runtime", HARDENED_TARGETS)
def test_writes_outside_the_workspace_fail(runtime, shared_sessions):
    code = r"""
import errno, json, os
out = {}
for path in ('/etc/passwd', '/usr/lib/python3/dist-packages/evil.py', '/root/x', '/home/x', '/x',
             '/var/tmp/x', '/run/x', '/sys/fs/cgroup/x', '/proc/sys/kernel/hostname', '/opt/x'):
    try:
        with open(path, 'a') as fh:
            fh.write('pwned')
        out[path] = 'WRITTEN'
    except OSError as e:
        out[path] = errno.errorcode.get(e.errno, str(e.errno))
with open('/workspace/inside.txt', 'w') as fh:
    fh.write('ok')
out['/workspace/inside.txt'] = 'WRITTEN'
os.unlink('/workspace/inside.txt')
print(json.dumps(out))
"""
    facts = _facts(shared_sessions(runtime).run_code(code, timeout_s=20))
    assert facts.pop("/workspace/inside.txt") == "WRITTEN"
    assert "WRITTEN" not in facts.values(), facts


@pytest.mark.parametrize("runtime", HARDENED_TARGETS)
def test_setuid_binaries_and_setuid_calls_do_not_escalate(runtime, shared_sessions):
    code = r"""
import json, os, subprocess, time
out = {}
# su is setuid root in the image: read the running su's ids from /proc.
p = subprocess.Popen(['/bin/su', '-c', 'id'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
ids = None
for _ in range(50):
    try:
        status = open('/proc/%d/status' % p.pid).read()
    except OSError:
        break
    if '/su' in os.readlink('/proc/%d/exe' % p.pid):
        ids = [l.split()[1:] for l in status.splitlines() if l.startswith(('Uid:', 'Gid:'))]
        break
    time.sleep(0.02)
p.communicate(b'\n', timeout=10)
out['su_ids'] = ids
out['su_exit'] = p.returncode
try:
    os.setuid(0)
    out['setuid0'] = 'OK'
except PermissionError:
    out['setuid0'] = 'EPERM'
m = subprocess.run(['/bin/mount', '-t', 'tmpfs', 'none', '/workspace'], capture_output=True)
out['mount_exit'] = m.returncode
out['setuid_files'] = [p for p in ('/bin/su', '/usr/bin/su', '/bin/mount', '/usr/bin/mount')
                       if os.path.exists(p) and os.stat(p).st_mode & 0o4000]
print(json.dumps(out))
"""
    facts = _facts(shared_sessions(runtime).run_code(code, timeout_s=20))
    assert facts["setuid_files"], (
        "the image should contain setuid binaries for this test to mean anything"
    )
    assert facts["su_ids"], facts
    for row in facts["su_ids"]:
        assert "0" not in row, f"su gained root ids: {facts['su_ids']}"
    assert facts["su_exit"] != 0
    assert facts["setuid0"] == "EPERM"
    assert facts["mount_exit"] != 0


@pytest.mark.parametrize("runtime", [*ALL_RUNTIMES, *GVISOR_TARGETS])
def test_infinite_loop_is_killed_at_the_limit_and_gone_from_the_host(
    runtime, fresh_session, engine_managers
):
    session = fresh_session(runtime)
    marker = f"spin-{uuid.uuid4().hex}"
    started = time.monotonic()
    result = session.run_code(f"# {marker}\nwhile True:\n    pass\n", timeout_s=2)
    took = time.monotonic() - started
    assert result.timed_out
    assert 1.9 <= took <= 2 + engine_managers(runtime).config.host_grace + 1.5, took
    assert _gone(marker, within_s=2) == []
    assert session.run_code("print('next')").stdout == "next\n"


@pytest.mark.parametrize("runtime", HARDENED_TARGETS)
def test_code_that_stops_its_own_kill_timer_is_killed_by_the_host_deadline(runtime, fresh_session):
    session = fresh_session(runtime, host_grace=1.0)
    marker = f"stopper-{uuid.uuid4().hex}"
    code = f"# {marker}\nimport os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\nwhile True:\n    pass\n"
    started = time.monotonic()
    result = session.run_code(code, timeout_s=1)
    took = time.monotonic() - started
    assert result.timed_out
    assert took < 1 + 1.0 + 10, took
    assert any("host" in w for w in result.warnings), result.warnings
    assert _gone(marker) == []
    assert session.run_code("print('restarted')").stdout == "restarted\n"


@pytest.mark.parametrize("runtime", HARDENED_TARGETS)
def test_planted_stdlib_modules_never_run_in_the_launcher_or_the_host_helpers(
    runtime, fresh_session
):
    # Issue 13, item 1: with /workspace on the launcher's sys.path, a planted signal.py
    # switched the timeout off and hijacked the host's kill and file helpers.
    session = fresh_session(runtime, host_grace=1.0)
    planted = (
        "signal",
        "selectors",
        "json",
        "stat",
        "posixpath",
        "types",
        "site",
        "encodings",
        "traceback",
    )
    plant = (
        "import os\n"
        "body = \"open('/tmp/hijacked.log', 'a').write(__name__ + '\\\\n')\\nimport time\\ntime.sleep(600)\\n\"\n"
        f"for name in {planted!r}:\n"
        "    with open('/workspace/%s.py' % name, 'w') as fh:\n"
        "        fh.write(body)\n"
        "with open('/workspace/mymod.py', 'w') as fh:\n"
        "    fh.write('VALUE = 42\\n')\n"
        "print('planted')\n"
    )
    assert session.run_code(plant, timeout_s=10).stdout == "planted\n"
    started = time.monotonic()
    result = session.run_code(
        "import os, mymod\nprint(mymod.VALUE, os.path.exists('/tmp/hijacked.log'))", timeout_s=5
    )
    assert (result.stdout, result.timed_out, result.warnings) == ("42 False\n", False, []), result
    assert time.monotonic() - started < 5
    names = {f.name for f in session.list_files("/workspace")}
    assert {f"{name}.py" for name in planted} <= names
    marker = f"spin-{uuid.uuid4().hex}"
    started = time.monotonic()
    spun = session.run_code(f"# {marker}\nwhile True:\n    pass\n", timeout_s=2)
    took = time.monotonic() - started
    assert spun.timed_out and took < 2 + 1.0 + 1.5, took
    assert _gone(marker, within_s=2) == []
    after = session.run_code("import os\nprint(os.path.exists('/tmp/hijacked.log'))", timeout_s=5)
    assert after.stdout == "False\n", after


_SYSCALL_PROBE = r"""
import ctypes, errno, json, os, platform, socket, subprocess
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": dict(add_key=248, request_key=249, keyctl=250, unshare=272, setns=308, ptrace=101,
                     process_vm_readv=310, bpf=321, perf_event_open=298, userfaultfd=323),
      "aarch64": dict(add_key=217, request_key=218, keyctl=219, unshare=97, setns=268, ptrace=117,
                      process_vm_readv=270, bpf=280, perf_event_open=241, userfaultfd=282)}[platform.machine()]
def call(name, *args):
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = libc.syscall(NR[name], *args)
    return "OK" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
out = {}
"""


@pytest.mark.parametrize("runtime", HARDENED_TARGETS)
def test_the_kernel_keyring_is_not_shared_between_sandboxes(runtime, fresh_session):
    # Issue 13, item 2: keys written by one sandbox were read by a later one (same host uid).
    writer, reader = fresh_session(runtime), fresh_session(runtime)
    secret = uuid.uuid4().hex
    code = (
        _SYSCALL_PROBE
        + f"""
out['add_key'] = call('add_key', b'user', b'assay-{secret}', b'{secret}', {len(secret)}, -4)  # @u
out['keyctl'] = call('keyctl', 0, -4, 0)  # KEYCTL_GET_KEYRING_ID of the user keyring
out['request_key'] = call('request_key', b'user', b'assay-{secret}', None, 0)
print(json.dumps(out))
"""
    )
    wrote = _facts(writer.run_code(code, timeout_s=20))
    read = _facts(reader.run_code(code, timeout_s=20))
    # gVisor's kernel has no keyrings (EACCES): the host's keyring is never reached there.
    refused = "EACCES" if is_gvisor(runtime) else "EPERM"
    for facts in (wrote, read):
        assert facts == {"add_key": refused, "keyctl": refused, "request_key": refused}, facts


# Debian's runsc (20221219) loads the OCI seccomp filter for the container's own process but not
# for processes started by `exec`, which is how every execution runs: under gVisor assay's profile
# does not filter the code, and these two escapes meet gVisor's kernel instead (AF_NETLINK is
# gVisor's own netlink; ptrace, unshare... are gVisor's). Known, documented (docs/sandbox_engines.md);
# strict, so the day it holds the marker must go.
SECCOMP_NOT_ON_EXECS = pytest.mark.xfail(
    strict=True, reason="runsc 20221219 does not apply the OCI seccomp filter to exec'd processes"
)
SECCOMP_TARGETS = [
    pytest.param(t, marks=SECCOMP_NOT_ON_EXECS) if is_gvisor(t) else t for t in HARDENED_TARGETS
]


@pytest.mark.parametrize("runtime", SECCOMP_TARGETS)
def test_socket_families_other_than_unix_and_ip_are_refused(runtime, shared_sessions):
    # Issue 13, item 3: AF_VSOCK reached the hypervisor; only AF_UNIX, AF_INET, AF_INET6 are allowed.
    code = r"""
import errno, json, socket
out = {}
for name, fam, kind in (('AF_VSOCK', 40, socket.SOCK_STREAM), ('AF_NETLINK', 16, socket.SOCK_RAW),
                        ('AF_PACKET', 17, socket.SOCK_DGRAM), ('AF_ALG', 38, socket.SOCK_SEQPACKET),
                        ('AF_KEY', 15, socket.SOCK_RAW), ('AF_BLUETOOTH', 31, socket.SOCK_STREAM),
                        ('AF_UNIX', 1, socket.SOCK_STREAM), ('AF_INET', 2, socket.SOCK_STREAM),
                        ('AF_INET6', 10, socket.SOCK_DGRAM)):
    try:
        socket.socket(fam, kind).close()
        out[name] = 'OK'
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
a, b = socket.socketpair()
a.sendall(b'x'); out['socketpair'] = b.recv(1).decode()
print(json.dumps(out))
"""
    facts = _facts(shared_sessions(runtime).run_code(code, timeout_s=20))
    assert {k: facts.pop(k) for k in ("AF_UNIX", "AF_INET", "AF_INET6", "socketpair")} == {
        "AF_UNIX": "OK",
        "AF_INET": "OK",
        "AF_INET6": "OK",
        "socketpair": "x",
    }
    assert set(facts.values()) == {"EPERM"}, facts


@pytest.mark.parametrize("runtime", SECCOMP_TARGETS)
def test_new_namespaces_ptrace_and_kernel_interfaces_are_refused(
    runtime, shared_sessions, engine_managers
):
    # Issue 13, item 4: `unshare -Urm` gave full capabilities in a new namespace; ptrace worked.
    code = (
        _SYSCALL_PROBE
        + r"""
u = subprocess.run(['unshare', '-Urm', 'sh', '-c', 'mount -t tmpfs -o size=1g none /mnt && echo MOUNTED'],
                   capture_output=True, text=True, timeout=20)
out['unshare_cmd'] = [u.returncode, 'MOUNTED' in u.stdout]
out['unshare_userns'] = call('unshare', 0x10000000)
out['unshare_mntns'] = call('unshare', 0x00020000)
out['setns'] = call('setns', os.open('/proc/self/ns/mnt', os.O_RDONLY), 0) if os.path.exists('/proc/self/ns/mnt') \
    else call('setns', os.open('/proc/self/exe', os.O_RDONLY), 0)
out['ptrace_attach_launcher'] = call('ptrace', 16, os.getppid(), 0, 0)
out['ptrace_traceme'] = call('ptrace', 0, 0, 0, 0)
out['process_vm_readv'] = call('process_vm_readv', os.getppid(), 0, 0, 0, 0, 0)
out['bpf'] = call('bpf', 0, 0, 0)
out['perf_event_open'] = call('perf_event_open', 0, 0, -1, -1, 0)
out['userfaultfd'] = call('userfaultfd', 0)
out['seccomp_mode'] = [l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')][0]
print(json.dumps(out))
"""
    )
    facts = _facts(shared_sessions(runtime).run_code(code, timeout_s=30))
    assert facts.pop("seccomp_mode") == "2"
    unshare_exit, mounted = facts.pop("unshare_cmd")
    assert unshare_exit != 0 and not mounted
    assert set(facts.values()) == {"EPERM"}, facts
    # The container carries assay's own profile, and inspect shows it.
    from assay.plugins.sandbox import seccomp

    inspect = engine_managers(runtime).inspect(shared_sessions(runtime).id)
    assert seccomp.applied(inspect["HostConfig"]["SecurityOpt"]), inspect["HostConfig"][
        "SecurityOpt"
    ]
