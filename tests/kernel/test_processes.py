"""pid_alive: the liveness check behind stale-run and stale-upload cleanup, against real processes."""

import os
import subprocess
import sys

import pytest

from assay.kernel.processes import pid_alive


def test_a_running_process_is_alive():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert pid_alive(child.pid)
    finally:
        child.kill()
        child.wait()


def test_this_process_is_alive():
    assert pid_alive(os.getpid())


def test_a_process_that_ended_and_was_reaped_is_not_alive():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not pid_alive(child.pid)


@pytest.mark.parametrize(
    "pid", [None, 0, -1, -os.getpid()], ids=["None", "0", "-1", "minus-own-pid"]
)
def test_a_pid_that_names_no_single_process_is_not_alive(pid):
    # kill(0, 0) and kill(-n, 0) would signal a process group and report it as alive
    assert not pid_alive(pid)
