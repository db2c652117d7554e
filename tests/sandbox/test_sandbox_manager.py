"""The control layer: connect/configure/execute/disconnect/status/list, locks, TTLs, reaper."""

from __future__ import annotations

import threading
import time

import pytest

from assay.plugins.sandbox import (
    SANDBOX_OVERRIDE_REFUSED,
    SANDBOX_SESSION_LIMIT,
    SANDBOX_SESSION_NOT_FOUND,
    OutputCapture,
    SandboxConfig,
    SandboxError,
    SandboxManager,
)
from assay.sandbox_runtimes.local import LocalRuntime


def _manager(**config) -> SandboxManager:
    cfg = SandboxConfig.from_env(runtime="local", allow_local_runtime=True, **config)
    return SandboxManager(cfg, {"local": LocalRuntime})


def test_connect_execute_status_list_configure_disconnect():
    with _manager() as m:
        sid = m.connect("python")
        assert [s.id for s in m.list()] == [sid]
        st = m.status(sid)
        assert (
            st.state == "idle"
            and st.runtime == "local"
            and st.isolated is False
            and st.executions == 0
        )
        assert (st.expires_at - st.created_at).total_seconds() == pytest.approx(3600, abs=1)
        m.configure(sid, timeout_s=2, env={"GREETING": "hello"})
        r = m.execute(sid, "import os; print(os.environ['GREETING'])")
        assert r.stdout.strip() == "hello" and r.session_id == sid
        assert m.status(sid).executions == 1
        m.disconnect(sid)
        assert m.list() == []
        with pytest.raises(SandboxError) as err:
            m.execute(sid, "print(1)")
        assert err.value.code == SANDBOX_SESSION_NOT_FOUND


def test_configure_cannot_raise_limits_or_add_loader_variables():
    with _manager(timeout=5) as m:
        sid = m.connect()
        for kwargs in ({"timeout_s": 60}, {"env": {"LD_PRELOAD": "/x.so"}}):
            with pytest.raises(SandboxError) as err:
                m.configure(sid, **kwargs)
            assert err.value.code == SANDBOX_OVERRIDE_REFUSED
        with pytest.raises(SandboxError):
            m.execute(sid, "print(1)", timeout_s=60)


def test_executions_in_one_session_are_serialised_and_sessions_run_in_parallel():
    code = "import time; time.sleep(1.0)"
    with _manager() as m:
        one = m.connect()
        two = m.connect()

        def timed(pairs):
            threads = [threading.Thread(target=m.execute, args=(sid, code)) for sid in pairs]
            started = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return time.monotonic() - started

        assert timed([one, one]) >= 2.0
        assert timed([one, two]) < 1.9  # generous: interpreter start-up on a loaded machine


def test_idle_sessions_are_reaped_in_the_background_without_the_caller():
    with _manager(idle_ttl=0.5, reap_interval=0.2) as m:
        sb = m.open_session()
        root = sb.status().container
        import os

        deadline = time.monotonic() + 5
        while (m.list() or os.path.exists(root)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert m.list() == []
        assert not os.path.exists(root)
        with pytest.raises(SandboxError) as err:
            sb.run_code("print(1)")
        assert err.value.code == SANDBOX_SESSION_NOT_FOUND


def test_sessions_past_their_maximum_lifetime_are_reaped_even_when_busy():
    with _manager(max_lifetime=1.0, reap_interval=0.2, idle_ttl=100) as m:
        sid = m.connect()
        started = time.monotonic()
        r = m.execute(sid, "import time; time.sleep(10)", timeout_s=10)
        assert time.monotonic() - started < 5, "the reaper did not end the over-age session"
        assert not r.ok
        assert m.list() == []


def test_session_limit():
    with _manager(max_sessions=2) as m:
        m.connect()
        m.connect()
        with pytest.raises(SandboxError) as err:
            m.connect()
        assert err.value.code == SANDBOX_SESSION_LIMIT


def test_session_limit_holds_for_connects_at_once_while_sessions_are_being_made():
    class SlowToCreate(
        LocalRuntime
    ):  # the real local runtime, slow to start a session (as a container is)
        def create_session(self, spec):
            time.sleep(0.3)
            return super().create_session(spec)

    cfg = SandboxConfig.from_env(runtime="local", allow_local_runtime=True, max_sessions=3)
    outcomes: list[str] = []

    def connect(m: SandboxManager) -> None:
        try:
            m.connect()
            outcomes.append("open")
        except SandboxError as exc:
            outcomes.append(exc.code)

    with SandboxManager(cfg, {"local": SlowToCreate}) as m:
        threads = [threading.Thread(target=connect, args=(m,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == sorted(["open", "open", "open", SANDBOX_SESSION_LIMIT])
        assert len(m.list()) == 3


def test_close_removes_every_session():
    m = _manager()
    sessions = [m.open_session() for _ in range(3)]
    roots = [s.status().container for s in sessions]
    m.close()
    import os

    assert not any(os.path.exists(r) for r in roots)


def test_output_capture_keeps_the_head_and_counts_the_rest():
    cap = OutputCapture(10, tail=4)
    for chunk in (b"0123456", b"789abc", b"defg"):
        cap.write(chunk)
    assert (
        cap.getvalue() == b"0123456789"
        and cap.truncated
        and cap.total == 17
        and cap.tail() == b"defg"
    )
