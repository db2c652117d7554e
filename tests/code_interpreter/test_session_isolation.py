"""One run's notebook cannot use up the kernel's per-uid quotas of every other run (issue 31 item 6).

The kernel caps descriptors in flight over unix sockets (``SCM_RIGHTS``) per
uid, host-wide, at the sender's ``RLIMIT_NOFILE``. When every notebook ran as
one uid, a cell that kept 500 descriptors in flight made every other run's
code_interpreter fail until its own notebook ended. Each run's sandbox now has
uids of its own.
"""

from __future__ import annotations

# Keeps socket descriptors in flight (sent, never received) in live notebook variables,
# until the sender's uid is over its quota: the next send fails with ETOOMANYREFS.
FLOOD = """
import array, errno, socket
held_a, held_b = socket.socketpair()
held_c, held_d = socket.socketpair()
refs = array.array("i", [held_c.fileno()] * 250)
sent, refused = 0, None
try:
    for _ in range(8):
        held_a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, refs)])
        sent += len(refs)
except OSError as exc:
    refused = errno.errorcode.get(exc.errno, exc.errno)
REPORT_RESULT = {"sent": sent, "refused": refused}
"""


def test_descriptors_held_in_flight_by_one_run_leave_another_runs_code_interpreter_working(
    container_kernel,
):
    attacker, victim = container_kernel.new_run(), container_kernel.new_run()
    try:
        flood = container_kernel.call_tool("code_interpreter", {"code": FLOOD}, run=attacker)
        assert flood.success, flood.content
        assert (
            flood.data["result"]["refused"] == "ETOOMANYREFS"
        )  # the attacker's own uid is over its quota
        assert flood.data["result"]["sent"] >= 250
        # The attacker's notebook is alive, holding them: the victim's calls come while they are in flight.
        for _ in range(
            2
        ):  # the first call starts the victim's notebook, the second uses the running one
            result = container_kernel.call_tool(
                "code_interpreter", {"code": "REPORT_RESULT = 6 * 7"}, run=victim
            )
            assert result.success, result.content
            assert result.data["result"] == 42
    finally:
        attacker.close()
        victim.close()
