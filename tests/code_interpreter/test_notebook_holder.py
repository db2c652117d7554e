"""The notebook holder: warm cells run in a fork of the process that keeps the variables.

What the fresh-process design gave must hold: a timed-out or OOM-killed cell
leaves the last finished cell's variables intact (here: in the holder's
memory, so even unpicklable values survive), the holder plus one cell fit in
the sandbox's memory limit, and a lost holder comes back from the snapshot,
saying so. Each test runs on podman and on the docker runtime.
"""

from __future__ import annotations

LIVE = (
    "import threading\nlock = threading.Lock()\nkept = 'yes'\n"  # a lock never reaches the snapshot
)


def test_variables_survive_a_timed_out_cell_in_the_live_holder(call):
    assert call(LIVE).success
    result = call("kept = 'overwritten'\nwhile True:\n    pass", timeout_s=2)
    assert result.error_code == "PYTHON_TIMEOUT", result.for_model()
    after = call("REPORT_RESULT = [kept, 'lock' in globals()]")
    assert after.data["result"] == ["yes", True]  # the live holder, not a snapshot restore


def test_variables_survive_an_oom_killed_cell_in_the_live_holder(call):
    assert call(LIVE + "import numpy as np\nframe = np.ones(8_000_000)").success  # 64 MB held
    result = call("blocks = []\nwhile True:\n    blocks.append(bytearray(32 * 1024 * 1024))")
    assert result.error_code == "PYTHON_OUT_OF_MEMORY", result.for_model()
    after = call("REPORT_RESULT = [kept, 'lock' in globals(), float(frame.sum())]")
    assert after.success, after.for_model()
    assert after.data["result"] == ["yes", True, 8_000_000.0]


def test_holder_and_one_cell_fit_within_the_memory_limit(call):
    # 256 MiB limit: the holder keeps 96 MB; the cell adds 96 MB of its own and reads the held array.
    assert call("import numpy as np\nheld = np.ones(12_000_000)").success
    result = call("extra = np.ones(12_000_000)\nREPORT_RESULT = float(held.sum() + extra.sum())")
    assert result.success, result.for_model()
    assert result.data["result"] == 24_000_000.0


def test_crashed_cell_keeps_the_holder_and_its_state(call):
    assert call(LIVE).success
    result = call("import os, signal\nkept = 'changed'\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert result.error_code == "PYTHON_EXECUTION_FAILED", result.for_model()
    assert call("REPORT_RESULT = [kept, 'lock' in globals()]").data["result"] == ["yes", True]


def test_lost_holder_is_restarted_from_the_snapshot_and_says_so(call, run):
    assert call(LIVE + "import pandas as pd\nframe = pd.DataFrame({'a': [1, 2, 3]})").success
    assert run.peek("sandbox.python").stop_resident()  # what a cell that killed the holder leaves
    result = call("REPORT_RESULT = [kept, int(frame.a.sum()), 'lock' in globals()]")
    assert result.success, result.for_model()
    assert result.data["result"] == ["yes", 6, False]  # the snapshot has no lock
    assert "process was lost and restarted" in result.content
    assert call("REPORT_RESULT = kept").data["result"] == "yes"  # and the new holder serves on


FORGED_CALL = r"""
import array, json, os, socket, struct
req = {"nonce": "f" * 16, "code": "x = 666", "workdir": "/workspace", "inputs": [], "expect_state": True,
       "timeout_s": 5.0, "limits": {"capture_chars": 1000, "tail_chars": 100, "tee_chars": 0, "frame_chars": 65536,
                                    "inline_bytes": 0, "max_state_bytes": 9000000, "stream_bytes": 100000}}
body = json.dumps(req).encode()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("/workspace/.assay/holder.sock")  # the holder is busy with this cell: the call waits in line
null = os.open(os.devnull, os.O_WRONLY)
s.sendmsg([struct.pack("!Q", len(body))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [null, null]))])
s.sendall(body)
"""


def test_a_call_queued_by_a_cell_is_refused(call):
    import time

    assert call("x = 1").success
    assert call(FORGED_CALL).success
    time.sleep(0.5)  # the holder takes the waiting connection once the cell is over
    result = call("REPORT_RESULT = x")
    assert result.success, result.for_model()
    assert (
        result.data["result"] == 1
    )  # the queued call never ran: nothing changed the notebook unrecorded


def test_cell_leftover_processes_end_with_the_cell(call):
    assert call("import subprocess\np = subprocess.Popen(['sleep', '300'])\npid = p.pid").success
    result = call("import os\nREPORT_RESULT = os.path.exists(f'/proc/{pid}')")
    assert result.success, result.for_model()
    assert result.data["result"] is False


def test_warm_cell_goes_over_the_channel_without_an_engine_exec(container_kernel, call, run):
    assert call("x = 1").success
    session = run.peek("sandbox.python")
    before = session.status().executions
    for _ in range(3):
        assert call("x += 1").success
    assert session.status().executions == before  # no run_code: the open channel carried them
    assert call("REPORT_RESULT = x").data["result"] == 4


def test_closed_channel_is_reopened_and_the_notebook_carries_on(call, run):
    assert call(LIVE).success
    run.peek("code_interpreter.notebook").channel.close()  # as a broken engine stream would
    result = call("REPORT_RESULT = [kept, 'lock' in globals()]")
    assert result.success, result.for_model()
    assert result.data["result"] == ["yes", True]  # the holder was never touched


AGE = (
    "import os\nwith open('/proc/uptime') as fh:\n    up = float(fh.read().split()[0])\n"
    "with open('/proc/self/stat') as fh:\n    start = int(fh.read().rsplit(')', 1)[1].split()[19])\n"
    "REPORT_RESULT = up - start / os.sysconf('SC_CLK_TCK')\n"
)


def test_the_next_cells_process_is_forked_while_the_notebook_is_idle(call):
    import time

    assert call("x = 1").success
    time.sleep(1.0)
    age = call(AGE).data["result"]
    assert age >= 0.5  # forked ahead, after the last cell, not when this call came


WRITE_PAGES = (
    "import resource\nbefore = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
    "buf[:4_000_000:4096] = b'y' * len(buf[:4_000_000:4096])\n"
    "REPORT_RESULT = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before\n"
)


def test_pages_the_last_cell_wrote_are_copied_ahead_for_the_next(call):
    import time

    # 20 MB made in one run: more than is ever copied ahead, so its pages stay shared until written.
    assert call("buf = bytearray(b'x' * 20_000_000)").success
    time.sleep(0.5)
    cold = call(WRITE_PAGES).data[
        "result"
    ]  # ~980 pages shared with the holder: copy-on-write faults
    time.sleep(0.5)
    warm = call(WRITE_PAGES).data[
        "result"
    ]  # the same pages, copied by the spare while the notebook was idle
    assert cold >= 900, cold
    assert warm <= cold // 4, (cold, warm)
