"""ContainerSession's own logic against a fake engine: host deadline, helper timeouts, trailers."""

from __future__ import annotations

import threading

import pytest

from assay.kernel.sandbox import SANDBOX_TIMEOUT, ContainerSession, ExecRequest, ExecStream, SandboxConfig, SandboxError
from assay.kernel.sandbox import build_spec
from assay.kernel.sandbox.container import _KILL_ALL


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


def test_file_helpers_time_out_with_a_code():
    s = FakeSession(kill_works=True)
    with pytest.raises(SandboxError) as err:
        s._run_helper(["python3", "-S", "-c", "pass"], 100, timeout_s=0.2)
    assert err.value.code == SANDBOX_TIMEOUT
