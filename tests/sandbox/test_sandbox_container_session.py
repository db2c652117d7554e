"""ContainerSession's own logic against a fake engine: host deadline, helper timeouts, trailers."""

from __future__ import annotations

import threading
import time

import pytest

from assay.plugins.sandbox import (
    SANDBOX_TIMEOUT,
    ContainerSession,
    ExecRequest,
    ExecStream,
    SandboxConfig,
    SandboxError,
    build_spec,
)
from assay.plugins.sandbox.container import _KILL_ALL


class HangingStream(ExecStream):
    """An exec that never produces output until it is closed (a wedged launcher)."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def __iter__(self):
        self.closed.wait(30)
        return iter(())

    def exit_code(self):
        return None

    def close(self) -> None:
        self.closed.set()


class FakeSession(ContainerSession):
    def __init__(self, *, kill_works: bool) -> None:
        spec = build_spec(SandboxConfig.from_env(), language="python", name="fake", labels={})
        super().__init__("fake", spec, "fake-id", host_grace=0.3)
        self.kill_works = kill_works
        self.calls: list[str] = []

    def _exec(self, argv, *, user, workdir, env):
        self.calls.append("kill" if argv[-1] == _KILL_ALL else "exec")
        if self.calls[-1] == "kill" and not self.kill_works:
            raise RuntimeError("engine wedged")
        if self.calls[-1] == "kill":
            return _Done()
        return HangingStream()

    def _put_archive(self, directory, data):
        pass

    def _hard_reset(self):
        self.calls.append("reset")

    def _remove(self):
        self.calls.append("remove")


class _Done(ExecStream):
    def __iter__(self):
        return iter(())

    def exit_code(self):
        return 0


def test_host_deadline_kills_the_codes_processes_when_the_launcher_hangs():
    s = FakeSession(kill_works=True)
    r = s.execute(ExecRequest(code="x", timeout_s=0.2))
    assert r.timed_out and r.exit_code is None
    assert s.calls == ["exec", "kill"] and "host killed it" in r.warnings[0]


def test_host_deadline_resets_the_container_when_even_the_kill_cannot_run():
    s = FakeSession(kill_works=False)
    r = s.execute(ExecRequest(code="x", timeout_s=0.2))
    assert r.timed_out and s.calls == ["exec", "kill", "reset"]
    assert "restarted" in r.warnings[0]


class _NeverBack(FakeSession):
    def alive(self):
        return False


def test_a_reset_whose_container_never_runs_again_is_retried_until_its_deadline_and_said():
    s = _NeverBack(kill_works=False)
    started = time.monotonic()
    assert s._reset_and_wait(deadline_s=1.0) is False
    assert time.monotonic() - started < 3
    assert s.calls.count("reset") >= 1


def test_file_helpers_time_out_with_a_code():
    s = FakeSession(kill_works=True)
    with pytest.raises(SandboxError) as err:
        s._run_helper(["python3", "-S", "-c", "pass"], 100, timeout_s=0.2)
    assert err.value.code == SANDBOX_TIMEOUT


class DeafStream(ExecStream):
    """A stream whose close does not wake its reader (an engine stream that never ends)."""

    def __init__(self) -> None:
        self.released = threading.Event()

    def __iter__(self):
        self.released.wait(60)
        return iter(())

    def exit_code(self):
        return None

    def close(self) -> None:
        pass


class DeafSession(FakeSession):
    def __init__(self, *, kill_exit: int) -> None:
        super().__init__(kill_works=True)
        self.kill_exit = kill_exit
        self.streams: list[DeafStream] = []

    def _exec(self, argv, *, user, workdir, env):
        self.calls.append("kill" if argv[-1] == _KILL_ALL else "exec")
        self.envs = getattr(self, "envs", []) + [env]
        self.argvs = getattr(self, "argvs", []) + [argv]
        if self.calls[-1] == "kill":
            done = _Done()
            done.exit_code = lambda: self.kill_exit  # type: ignore[method-assign]
            return done
        self.streams.append(DeafStream())
        return self.streams[-1]


def test_host_waits_end_even_when_the_engine_stream_never_does(monkeypatch):
    # Issue 13, item 1: list_files and a cell blocked past their own limits.
    import time

    from assay.plugins.sandbox import container

    monkeypatch.setattr(container, "STREAM_CLOSE_GRACE_S", 0.3)
    monkeypatch.setattr(container, "HELPER_TIMEOUT_S", 0.5)
    s = DeafSession(kill_exit=0)
    started = time.monotonic()
    r = s.execute(ExecRequest(code="x", timeout_s=0.2))
    assert time.monotonic() - started < 0.2 + 0.3 + 0.3 + 1.0
    assert r.timed_out and r.exit_code is None
    assert s.calls == ["exec", "kill", "reset"], (
        s.calls
    )  # a stream that never ends: restart the container
    started = time.monotonic()
    with pytest.raises(SandboxError) as err:
        s.list_files("/workspace")
    assert err.value.code == SANDBOX_TIMEOUT
    with pytest.raises(SandboxError):
        s._run_helper(["true"], 100, timeout_s=0.2)
    assert (
        time.monotonic() - started < 0.5 + 0.3 + 0.2 + 0.3 + 1.0
    )  # each at its own limit, not more
    for stream in s.streams:
        stream.released.set()


def test_a_kill_helper_that_does_not_report_success_leads_to_a_restart():
    s = FakeSession(kill_works=True)
    s._exec_orig = s._exec

    def exec_(argv, *, user, workdir, env):
        stream = s._exec_orig(argv, user=user, workdir=workdir, env=env)
        if s.calls[-1] == "kill":
            stream.exit_code = lambda: 137  # the code killed or stopped its killer
        return stream

    s._exec = exec_
    r = s.execute(ExecRequest(code="x", timeout_s=0.2))
    assert r.timed_out and s.calls == ["exec", "kill", "reset"]


def test_launcher_and_helpers_run_isolated_on_a_fixed_path_whatever_path_the_session_asks_for():
    from assay.plugins.sandbox.launcher import HELPER_PATH

    s = DeafSession(kill_exit=0)
    s._exec = lambda argv, *, user, workdir, env: (
        s.argvs.append(argv),
        s.envs.append(env),
        _Done(),
    )[-1]
    s.argvs, s.envs = [], []
    s.execute(
        ExecRequest(
            code="print(1)", timeout_s=1, env={"PATH": "/workspace:/usr/bin", "LD_AUDIT": "/x"}
        )
    )
    s._run_helper(["python3"], 100, timeout_s=1)
    launcher = s.argvs[0]
    assert launcher[:4] == ["python3", "-I", "-S", "-u"]
    assert (
        "/workspace:/usr/bin" in launcher
    )  # the code's own PATH, handed to the launcher as an argument
    for env in s.envs:
        assert env["PATH"] == HELPER_PATH and not any(k.startswith("LD_") for k in env)


def test_a_tmpfs_over_the_launchers_interpreter_is_refused():
    import dataclasses

    from assay.plugins.sandbox import SANDBOX_OVERRIDE_REFUSED
    from assay.plugins.sandbox.spec import TmpfsMount

    spec = build_spec(SandboxConfig.from_env(), language="python", name="fake", labels={})
    for target in ("/usr", "/usr/local/bin", "/bin"):
        weakened = dataclasses.replace(spec, tmpfs=(*spec.tmpfs, TmpfsMount(target, 1024)))
        with pytest.raises(SandboxError) as err:
            weakened.check()
        assert err.value.code == SANDBOX_OVERRIDE_REFUSED
