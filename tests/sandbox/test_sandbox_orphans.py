"""No leaks: a SIGKILLed owner's containers are reaped at the next start-up; SIGTERM cleans up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import sigint_default
from tests.sandbox.conftest import podman_container_exists

pytestmark = pytest.mark.podman

HOLDER = Path(__file__).with_name("holder.py")
ROOT = Path(__file__).resolve().parents[2]


def _start_holder(count: int = 2, *extra: str) -> tuple[subprocess.Popen, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, str(HOLDER), str(count), *extra],
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=ROOT,
        preexec_fn=sigint_default,
    )
    line = proc.stdout.readline()
    ids = line.split()
    assert len(ids) == count, f"holder did not start its sessions: {line!r}"
    return proc, ids


def test_sigkilled_owner_leaves_no_orphans_after_the_next_start(podman_runtime):
    from assay.plugins.sandbox import SandboxConfig, SandboxManager

    proc, ids = _start_holder(2)
    assert all(podman_container_exists(c) for c in ids)
    proc.kill()
    proc.wait()
    assert all(podman_container_exists(c) for c in ids), "SIGKILL cannot clean up; the reaper must"
    manager = SandboxManager(SandboxConfig.from_env(runtime="podman"), runtime=podman_runtime)
    try:
        manager.runtime  # start-up: selection + the orphan sweep
        assert not any(podman_container_exists(c) for c in ids), (
            "orphans survived the start-up reaper"
        )
    finally:
        manager.close()


def test_sigterm_removes_the_owners_containers(podman_runtime):
    proc, ids = _start_holder(1)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGTERM
    assert not any(podman_container_exists(c) for c in ids)


def test_normal_exit_without_closing_removes_the_owners_containers(podman_runtime):
    proc, ids = _start_holder(1, "exit")
    assert all(podman_container_exists(c) for c in ids)
    proc.communicate("go\n", timeout=30)
    assert proc.returncode == 0
    assert not any(podman_container_exists(c) for c in ids)


def test_sigint_removes_the_owners_containers(podman_runtime):
    proc, ids = _start_holder(1)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    assert not any(podman_container_exists(c) for c in ids)


def test_reaper_spares_live_owners_and_removes_expired_containers(podman_manager, podman_runtime):
    from assay.plugins.sandbox.labels import EXPIRES, orphan_reason

    live = podman_manager.open_session()
    cid = live.status().container
    try:
        labels = podman_manager.inspect(live.id)["Config"]["Labels"]
        assert orphan_reason(labels) is None
        assert orphan_reason({**labels, EXPIRES: str(time.time() - 1)}) == "expired"
        assert (
            orphan_reason({**labels, "assay.sandbox.owner-start": "1"}) == "owner gone (pid reused)"
        )
        podman_runtime.reap()
        assert podman_container_exists(cid)
    finally:
        live.close()
    assert not podman_container_exists(cid)


def test_closing_a_session_removes_its_container(podman_manager):
    sb = podman_manager.open_session()
    cid = sb.status().container
    assert podman_container_exists(cid)
    sb.close()
    assert not podman_container_exists(cid)


def test_warm_pool_hands_each_container_out_once(podman_runtime):
    from assay.plugins.sandbox import SandboxConfig, SandboxManager

    manager = SandboxManager(
        SandboxConfig.from_env(runtime="podman", pool_size=1), runtime=podman_runtime
    )
    try:
        manager.runtime
        deadline = time.monotonic() + 20
        while not manager._pool and time.monotonic() < deadline:
            time.sleep(0.1)
        pooled = manager._pool[0].id
        first = manager.open_session()
        assert first.status().container == pooled
        assert first.run_code("print(1)").stdout == "1\n"
        second = manager.open_session()
        assert second.status().container != pooled
        first.close()
        assert not podman_container_exists(pooled), (
            "a used pooled container must be destroyed, not reused"
        )
        third = manager.open_session()
        assert third.status().container != pooled
    finally:
        manager.close()
    assert manager._pool == []


def test_closing_one_manager_leaves_another_managers_sandboxes_alone(podman_runtime):
    from assay.plugins.sandbox import SandboxConfig, SandboxManager
    from assay.sandbox_runtimes.podman import PodmanRuntime

    config = SandboxConfig.from_env(runtime="podman")
    first = SandboxManager(config, {"podman": PodmanRuntime})
    second = SandboxManager(config, {"podman": PodmanRuntime})
    try:
        a, b = first.open_session(), second.open_session()
        ca, cb = a.status().container, b.status().container
        first.close()
        assert not podman_container_exists(ca)
        assert podman_container_exists(cb) and b.run_code("print(1)").stdout == "1\n"
    finally:
        first.close()
        second.close()
    assert not podman_container_exists(cb)


def test_a_session_with_data_files_is_created_fresh_never_taken_from_the_pool(
    podman_runtime, tmp_path
):
    import os

    from assay.plugins.sandbox import SandboxConfig, SandboxManager
    from assay.plugins.sandbox.datamounts import DataMount

    path = tmp_path / "sales.csv"
    path.write_text("region,amount\nnorth,1\n")
    st = os.stat(path)
    mount = DataMount(str(path), "/data/sales.csv", st.st_size, st.st_mtime_ns)
    manager = SandboxManager(
        SandboxConfig.from_env(runtime="podman", pool_size=1), runtime=podman_runtime
    )
    try:
        manager.runtime
        deadline = time.monotonic() + 20
        while not manager._pool and time.monotonic() < deadline:
            time.sleep(0.1)
        pooled = manager._pool[0].id
        session = manager.open_session(data_files=(mount,))
        assert session.status().container != pooled and manager._pool[0].id == pooled
        assert session.run_code("print(open('/data/sales.csv').read())").stdout.startswith(
            "region,amount"
        )
        plain = manager.open_session()  # the warm one has no mounts
        assert plain.status().container == pooled
        assert "No such file" in plain.run_code("open('/data/sales.csv')").stderr
    finally:
        manager.close()
