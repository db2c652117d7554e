"""What the host accepts from the launcher (issue 31, items 1, 8, 11, 12), against a fake engine.

A trailer counts only after the launcher's own nonce line opened its stderr and
only when the engine's exit status for the exec is the one the launcher exits
with after that trailer; files outside the working directory are never
reported; a stream far past its cap is not drained; without a trailer, the
cgroup's OOM counter says whether memory ran out; a resident whose kill cannot
run is ended by a hard reset.
"""

from __future__ import annotations

import time

from assay.plugins.sandbox import (
    ContainerSession,
    ExecRequest,
    ExecStream,
    SandboxConfig,
    build_spec,
)
from assay.plugins.sandbox.container import _KILL_ALL
from assay.plugins.sandbox.launcher import (
    NONCE_MARK,
    Trailer,
    exit_status_for,
    launcher_argv,
    split_nonce,
)
from assay.plugins.sandbox.resident import KILL_ALL_SOURCE
from assay.plugins.sandbox.stream import flood_limit

NONCE = "0123456789abcdef"


def _trailer_line(nonce: str, **fields) -> bytes:
    data = {
        "exit_code": 0,
        "timed_out": False,
        "oom_killed": False,
        "duration_s": 0.1,
        "stdout_truncated": False,
        "stderr_truncated": False,
        "files": [],
        **fields,
    }
    return f"\x1eASSAY-{nonce}:{data!r}\n".encode()


class Scripted(ExecStream):
    def __init__(self, chunks, code):
        self.chunks, self.code = chunks, code

    def __iter__(self):
        return iter(self.chunks)

    def exit_code(self):
        return self.code


class Flood(ExecStream):
    """An engine stream that never stops: 1 MiB chunks on stdout until closed."""

    def __init__(self):
        self.read = 0
        self.closed = False

    def __iter__(self):
        block = b"x" * (1 << 20)
        while not self.closed and self.read < 1 << 34:
            self.read += len(block)
            yield 1, block

    def exit_code(self):
        return None

    def close(self):
        self.closed = True


class Fake(ContainerSession):
    def __init__(self, stream, *, kill_works=True, oom=(None, None)):
        spec = build_spec(SandboxConfig.from_env(), language="python", name="fake", labels={})
        super().__init__("fake", spec, "fake-id", host_grace=5.0)
        self.stream, self.kill_works, self.oom = stream, kill_works, list(oom)
        self.calls: list[str] = []

    def _exec(self, argv, *, user, workdir, env):
        kind = "kill" if argv[-1] in (_KILL_ALL, KILL_ALL_SOURCE) else "exec"
        self.calls.append(kind)
        if kind == "kill":
            if not self.kill_works:
                raise RuntimeError("no pids left")
            return Scripted([], 0)
        return self.stream

    def _oom_kills(self):
        return self.oom.pop(0) if len(self.oom) > 1 else self.oom[0]

    def _put_archive(self, directory, data):
        pass

    def _hard_reset(self):
        self.calls.append("reset")

    def _remove(self):
        pass


def _run(stream, **kw) -> tuple[Fake, object]:
    session = Fake(stream, **kw)
    return session, session.execute(ExecRequest(code="x", timeout_s=5))


def test_the_launchers_argv_carries_no_nonce():
    argv = launcher_argv(5.0, 100, 100, "/workspace", ["@python", "print(1)"])
    assert argv[argv.index("-c") + 2 : argv.index("--")] == [
        "5.000",
        "100",
        "100",
        "/workspace",
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    ]


def test_a_nonce_line_counts_only_at_the_very_start_of_stderr():
    line = NONCE_MARK + NONCE.encode() + b"\n"
    assert split_nonce(line + b"rest") == (b"rest", NONCE)
    assert split_nonce(b"x" + line) == (b"x" + line, None)
    assert split_nonce(NONCE_MARK + b"0123456789ABCDEF\n")[1] is None


def test_a_confirmed_trailer_is_used():
    header = NONCE_MARK + NONCE.encode() + b"\n"
    session, r = _run(
        Scripted([(1, b"hi\n"), (2, header + b"err\n" + _trailer_line(NONCE, exit_code=3))], 3)
    )
    assert (r.exit_code, r.stdout, r.stderr, r.warnings) == (3, "hi\n", "err\n", [])
    assert session.calls == ["exec"]


def test_a_trailer_the_engines_exit_status_does_not_confirm_is_not_used_and_the_leftovers_are_killed():
    # The code wrote a trailer in the launcher's name and killed the launcher: the engine says 137.
    header = NONCE_MARK + NONCE.encode() + b"\n"
    forged = _trailer_line(NONCE, files=[["/workspace/forged.csv", 1, 0.0]])
    session, r = _run(Scripted([(2, header + forged)], 137))
    assert r.exit_code == 137 and r.files == []
    assert any("did not match" in w for w in r.warnings), r.warnings
    assert session.calls == ["exec", "kill"]


def test_a_trailer_without_the_launchers_nonce_line_first_is_not_used():
    session, r = _run(
        Scripted([(2, b"noise" + NONCE_MARK + NONCE.encode() + b"\n" + _trailer_line(NONCE))], 0)
    )
    assert any("did not report" in w for w in r.warnings), r.warnings
    assert session.calls == ["exec", "kill"]


def test_reported_files_outside_the_working_directory_are_dropped():
    header = NONCE_MARK + NONCE.encode() + b"\n"
    files = [["/etc/shadow", 1, 0.0], ["/workspace/../etc/x", 1, 0.0], ["/workspace/a.csv", 2, 0.0]]
    _, r = _run(Scripted([(2, header + _trailer_line(NONCE, files=files))], 0))
    assert [f.path for f in r.files] == ["/workspace/a.csv"]


def test_exit_status_for_a_signal_is_what_the_launcher_exits_with():
    assert exit_status_for(Trailer(exit_code=137)) == 137
    assert (
        exit_status_for(Trailer(exit_code=-1)) == 1
        and exit_status_for(Trailer(exit_code=None)) == 1
    )


def test_a_stream_far_past_its_cap_is_not_drained():
    flood = Flood()
    started = time.monotonic()
    session, r = _run(flood)
    assert time.monotonic() - started < 5
    assert flood.read <= flood_limit(ExecRequest(code="x").stdout_limit) + (1 << 20)
    assert r.stdout_truncated and r.exit_code is None
    assert any("far past its cap" in w for w in r.warnings), r.warnings
    assert session.calls == ["exec", "kill"]


def test_without_a_trailer_the_oom_counter_says_memory_ran_out():
    header = NONCE_MARK + NONCE.encode() + b"\n"
    session, r = _run(Scripted([(2, header)], 137), oom=(4, 5))
    assert r.oom_killed and r.exit_code == 137
    assert any("ran out of memory" in w for w in r.warnings), r.warnings
    _, quiet = _run(Scripted([(2, header)], 137), oom=(4, 4))
    assert not quiet.oom_killed and any("did not report" in w for w in quiet.warnings)


def test_an_oom_whose_kill_cannot_run_restarts_the_sandbox_and_says_so():
    header = NONCE_MARK + NONCE.encode() + b"\n"
    session, r = _run(Scripted([(2, header)], 137), kill_works=False, oom=(0, 1))
    assert r.oom_killed and session.calls == ["exec", "kill", "reset"]
    assert "restarted" in r.warnings[0], r.warnings


def test_a_resident_whose_kill_cannot_run_is_ended_by_a_hard_reset():
    session = Fake(Scripted([], 0), kill_works=False)
    assert session.stop_resident() is True
    assert session.calls == ["kill", "reset"]
