"""The local runtime: temp dir, env allow-list, rlimits, process group killed, loud warning."""

from __future__ import annotations

import os
import time

import pytest

from assay.plugins.sandbox import (
    LOCAL_WARNING,
    SANDBOX_FILE_TOO_LARGE,
    SANDBOX_PATH_INVALID,
    SandboxError,
)


def test_results_say_not_isolated_and_carry_the_warning(local_manager):
    with local_manager.open_session() as sb:
        r = sb.run_code("print('hi')")
        assert sb.isolated is False
    assert r.ok and r.stdout == "hi\n"
    assert r.isolated is False and r.runtime == "local" and LOCAL_WARNING in r.warnings


def test_each_session_gets_a_fresh_temp_dir_removed_on_close(local_manager):
    a, b = local_manager.open_session(), local_manager.open_session()
    ra = a.run_code("import os; print(os.getcwd()); open('mine.txt','w').write('a')")
    rb = b.run_code("import os; print(os.getcwd(), os.path.exists('mine.txt'))")
    cwd = ra.stdout.strip()
    assert cwd != rb.stdout.split()[0] and rb.stdout.split()[1] == "False"
    assert os.path.isdir(cwd)
    a.close()
    b.close()
    assert not os.path.exists(cwd)


def test_host_environment_is_not_passed(local_manager, monkeypatch):
    monkeypatch.setenv("ASSAY_TEST_SECRET_TOKEN", "hunter2")
    with local_manager.open_session() as sb:
        r = sb.run_code("import os; print(os.environ.get('ASSAY_TEST_SECRET_TOKEN'))")
    assert r.stdout.strip() == "None"


def test_timeout_kills_the_whole_process_group(local_manager, tmp_path):
    # The pid goes into the session's own directory: as root the code runs as a uid of its
    # own and cannot write the host's (root-only) temp dirs.
    code = (
        "import subprocess, time\n"
        "p = subprocess.Popen(['sleep', '300']); open('child.pid', 'w').write(str(p.pid))\n"
        "while True: time.sleep(0.1)\n"
    )
    with local_manager.open_session() as sb:
        started = time.monotonic()
        r = sb.run_code(code, timeout_s=1.5)
        elapsed = time.monotonic() - started
        child = int(sb.get_file("child.pid"))
    assert r.timed_out and r.exit_code is None and elapsed < 5
    time.sleep(0.2)
    assert not _alive(child), "the child of a timed-out execution survived"


def test_file_size_rlimit_applies(local_manager):
    with local_manager.open_session(max_file_size="1m") as sb:
        r = sb.run_code("open('big.bin','wb').write(b'x' * (2 * 1024 * 1024))")
    assert not r.ok and "File too large" in r.stderr


def test_address_space_rlimit_turns_a_memory_bomb_into_oom(local_manager):
    with local_manager.open_session() as sb:
        r = sb.run_code("x = bytearray(2 * 1024**3)")
    assert r.oom_killed and not r.ok


def test_open_files_rlimit_applies(local_manager):
    with local_manager.open_session() as sb:
        r = sb.run_code(
            "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], "
            "resource.getrlimit(resource.RLIMIT_CPU)[0] > 0, resource.getrlimit(resource.RLIMIT_CORE)[0])"
        )
    nofile, cpu_limited, core = r.stdout.split()
    assert int(nofile) <= 256 and cpu_limited == "True" and core == "0"


def test_stdout_flood_is_capped_while_streaming(local_manager):
    code = "import sys\nb = b'x' * (1 << 20)\nfor _ in range(64): sys.stdout.buffer.write(b)\n"
    with local_manager.open_session() as sb:
        r = sb.run_code(code)
    assert r.stdout_truncated and len(r.stdout) == 1024**2 and r.ok


def test_files_round_trip_and_escapes_are_refused(local_manager, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    with local_manager.open_session() as sb:
        sb.put_file("in/data.csv", b"a,b\n1,2\n")
        r = sb.run_code(
            "print(open('in/data.csv').read().splitlines()[1]); open('out.txt','w').write('done')"
        )
        assert r.stdout.strip() == "1,2"
        assert [f.path for f in r.files] == ["/workspace/out.txt"]
        assert sb.get_file("out.txt") == b"done"
        assert {f.name for f in sb.list_files()} == {"in", "out.txt"}
        sb.run_code(f"import os; os.symlink({str(secret)!r}, 'link.txt')")
        for bad in ("link.txt", "../secret.txt", str(secret)):
            with pytest.raises(SandboxError) as err:
                sb.get_file(bad)
            assert err.value.code == SANDBOX_PATH_INVALID
        with pytest.raises(SandboxError) as err:
            sb.put_file("big.bin", b"x" * (10 * 1024**2 + 1))
        assert err.value.code == SANDBOX_FILE_TOO_LARGE


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
