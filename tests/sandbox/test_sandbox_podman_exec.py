"""Execution on real podman: timeouts that kill, output caps, files, produced files."""

from __future__ import annotations

import time

import pytest

from assay.plugins.sandbox import (
    SANDBOX_FILE_NOT_FOUND,
    SANDBOX_FILE_TOO_LARGE,
    SANDBOX_PATH_INVALID,
    SandboxError,
)

pytestmark = pytest.mark.podman

LIST_CODE_PROCESSES = (
    "import os\nme = (os.getpid(), os.getppid())\nfor p in os.listdir('/proc'):\n"
    "    if p.isdigit() and int(p) not in me and os.stat('/proc/' + p).st_uid == os.getuid():\n"
    "        print(p, open('/proc/%s/cmdline' % p).read().replace(chr(0), ' '))\n"
)


def test_state_in_the_workspace_persists_but_each_run_is_a_fresh_process(podman_session):
    a = podman_session.run_code(
        "import os; x = 41; open('state.txt', 'w').write('41'); print(os.getpid())"
    )
    b = podman_session.run_code(
        "import os; print(open('state.txt').read(), 'x' in globals(), os.getpid())"
    )
    assert a.ok and b.ok
    assert b.stdout.split()[:2] == ["41", "False"] and a.stdout.strip() != b.stdout.split()[2]


def test_timeout_kills_every_process_of_the_execution(podman_session):
    code = (
        "import subprocess, time\n"
        "subprocess.Popen(['setsid', 'sleep', '300'])\n"  # escapes the process group
        "subprocess.Popen(['sleep', '300'])\n"
        "while True: pass\n"
    )
    started = time.monotonic()
    r = podman_session.run_code(code, timeout_s=2)
    assert r.timed_out and not r.oom_killed and time.monotonic() - started < 5
    left = podman_session.run_code(LIST_CODE_PROCESSES)
    assert left.stdout == "", f"processes survived the timeout: {left.stdout}"


def test_host_deadline_kills_work_when_the_in_container_timer_is_stopped(podman_manager):
    # The code freezes its own launcher (same uid), so only the host can end it.
    code = "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\nwhile True: pass\n"
    with podman_manager.open_session() as sb:
        sb.put_file("keep.txt", b"kept")
        started = time.monotonic()
        r = sb.run_code(code, timeout_s=1)
        elapsed = time.monotonic() - started
        assert r.timed_out and any("host" in w for w in r.warnings)
        assert elapsed < 1 + podman_manager.config.host_grace + 5
        assert sb.run_code(LIST_CODE_PROCESSES).stdout == ""
        assert sb.get_file("keep.txt") == b"kept"  # killed from outside, not reset


def test_killed_launcher_is_noticed_and_its_children_are_killed(podman_session):
    code = (
        "import os, signal, subprocess\nsubprocess.Popen(['setsid', 'sleep', '300'])\n"
        "os.kill(os.getppid(), signal.SIGKILL)\n"
    )
    r = podman_session.run_code(code)
    assert any("launcher" in w for w in r.warnings)
    assert podman_session.run_code(LIST_CODE_PROCESSES).stdout == ""


def test_a_gigabyte_of_stdout_is_capped_at_one_mebibyte(podman_session):
    code = "import sys\nb = b'x' * (1 << 20)\nfor _ in range(1024): sys.stdout.buffer.write(b)\nprint('done', file=sys.stderr)\n"
    r = podman_session.run_code(code, timeout_s=30)
    assert r.stdout_truncated and len(r.stdout) == 1024**2 and not r.timed_out
    assert r.stderr == "done\n" and not r.stderr_truncated and r.exit_code == 0


def test_stderr_is_capped_separately(podman_session):
    r = podman_session.run_code("import sys; sys.stderr.write('e' * (3 << 20)); print('ok')")
    assert (
        r.stderr_truncated
        and len(r.stderr) == 1024**2
        and r.stdout == "ok\n"
        and not r.stdout_truncated
    )


def test_exit_codes_and_tracebacks_are_reported(podman_session):
    r = podman_session.run_code("raise ValueError('nope')")
    assert r.exit_code == 1 and "ValueError: nope" in r.stderr and not r.ok
    assert podman_session.run_code("import sys; sys.exit(3)").exit_code == 3


def test_shell_language(podman_session):
    r = podman_session.run_code("echo $((6*7)) && id -u", language="shell")
    assert r.stdout.split() == ["42", str(podman_session.caller_uids[1])] and r.language == "shell"


def test_code_larger_than_an_argument_runs_from_a_file(podman_session):
    code = "x = 0\n" + "x += 1\n" * 30000 + "print(x)\n"  # ~210 KiB
    r = podman_session.run_code(code)
    assert r.stdout.strip() == "30000", r.stderr[-500:]


def test_produced_files_are_reported(podman_session):
    r = podman_session.run_code(
        "import os\nos.makedirs('out', exist_ok=True)\nopen('out/chart.png','wb').write(b'png' * 10)"
    )
    paths = {f.path: f.size for f in r.files}
    assert paths.get("/workspace/out/chart.png") == 30
    again = podman_session.run_code("print(1)")
    assert again.files == []


def test_upload_list_download_round_trip(podman_session):
    podman_session.put_file("inputs/data.csv", b"a,b\n1,2\n")
    r = podman_session.run_code("print(open('inputs/data.csv').read().split()[1])")
    assert r.stdout.strip() == "1,2"
    names = {f.name: f for f in podman_session.list_files("inputs")}
    assert names["data.csv"].size == 8 and not names["data.csv"].is_dir
    assert podman_session.get_file("/workspace/inputs/data.csv") == b"a,b\n1,2\n"


def test_read_only_uploads_cannot_be_changed_by_the_code(podman_session):
    podman_session.put_file("ro.txt", b"original", read_only=True)
    r = podman_session.run_code(
        "import os\nfor f in (lambda: open('ro.txt','w'), lambda: os.remove('ro.txt'), lambda: os.chmod('ro.txt', 0o666)):\n"
        "    try:\n        f(); print('changed')\n    except OSError as e:\n        print(e.errno)\n"
    )
    assert "changed" not in r.stdout
    assert podman_session.get_file("ro.txt") == b"original"


def test_downloads_refuse_symlinks_and_escapes(podman_session):
    podman_session.run_code(
        "import os\nfor n in ('pw', 'tmp'):\n    os.path.lexists(n) and os.remove(n)\n"
        "os.symlink('/etc/passwd', 'pw'); os.symlink('/tmp', 'tmp')\n"
        "open('/tmp/t.txt', 'w').write('t')"
    )
    for bad in ("pw", "tmp/t.txt", "../etc/passwd", "/etc/passwd", "/workspace/../etc/passwd"):
        with pytest.raises(SandboxError) as err:
            podman_session.get_file(bad)
        assert err.value.code == SANDBOX_PATH_INVALID, bad
    with pytest.raises(SandboxError) as err:
        podman_session.get_file("missing.txt")
    assert err.value.code == SANDBOX_FILE_NOT_FOUND


def test_file_sizes_are_capped_both_ways(podman_session):
    with pytest.raises(SandboxError) as err:
        podman_session.put_file("big.bin", b"x" * (10 * 1024**2 + 1))
    assert err.value.code == SANDBOX_FILE_TOO_LARGE
    podman_session.run_code("open('mid.bin','wb').write(b'y' * 200000)")
    with pytest.raises(SandboxError) as err:
        podman_session.get_file("mid.bin", max_bytes=100000)
    assert err.value.code == SANDBOX_FILE_TOO_LARGE
    assert len(podman_session.get_file("mid.bin")) == 200000


def test_writing_outside_the_workspace_fails(podman_session):
    r = podman_session.run_code(
        "for p in ('/etc/x', '/home/x', '/usr/lib/x', '/root/x', '/var/x'):\n"
        "    try:\n        open(p, 'w'); print('wrote', p)\n    except OSError:\n        pass\nprint('end')"
    )
    assert r.stdout == "end\n"


def test_writable_uploads_and_uploaded_directories_can_be_changed_by_the_code(podman_session):
    podman_session.put_file("rw/notes.txt", b"v1")
    r = podman_session.run_code(
        "open('rw/notes.txt','a').write('+v2'); open('rw/new.txt','w').write('n')"
    )
    assert r.ok, r.stderr
    assert podman_session.get_file("rw/notes.txt") == b"v1+v2"


def test_read_only_uploads_hold_even_in_a_directory_the_code_prepared(podman_session):
    podman_session.run_code(
        "import os\nos.makedirs('trap', exist_ok=True)\n"
        "os.path.lexists('trap/run.py') or os.symlink('/tmp/elsewhere', 'trap/run.py')"
    )
    podman_session.put_file("trap/run.py", b"print('runner')", read_only=True)
    r = podman_session.run_code(
        "import os\nprint(os.path.islink('trap/run.py'), os.path.exists('/tmp/elsewhere'))\n"
        "for f in (lambda: os.remove('trap/run.py'), lambda: os.rename('trap/run.py', 'trap/x')):\n"
        "    try:\n        f(); print('changed')\n    except OSError:\n        print('refused')\n"
    )
    assert r.stdout.split() == ["False", "False", "refused", "refused"]
    assert podman_session.get_file("trap/run.py") == b"print('runner')"
