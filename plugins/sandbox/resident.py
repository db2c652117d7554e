"""Resident processes: one long-lived process per session, outside the per-call kill.

Every execution ends with the launcher killing every process of the code's
uid, so nothing a call started lives on. A tool that keeps live state between
calls (the code interpreter's notebook) needs one process that does live on.
It is started here, explicitly, under a third uid (``resident_user``: neither
the keeper's nor the code's), so that:

* the launcher's end-of-call ``kill(-1)`` (the code's uid) never reaches it;
* code running as the resident uid cannot signal the launcher or the
  client of a call (other uids), so the launcher's own timer keeps working;
* the resident can clean up after its own children with ``kill(-1)`` (which
  spares the caller) without touching any other process.

It runs in the same hardened container (same seccomp profile, no network,
no new privileges, same cgroup limits). The starter below double-forks, so
the resident is reparented to the container's init, then waits for the
resident to write one line to an inherited pipe (the fd number is in
``ASSAY_RESIDENT_READY_FD``) and prints it: that line is what
:meth:`SandboxSession.start_resident` returns. A pipe closed without a line
(the program failed) makes the starter exit 1 with nothing on stdout.

The program runs isolated, like assay's other helpers: ``python3 -I -S -u``
(the starter's own interpreter, found on the helpers' fixed ``PATH``), so
nothing the code could have written - a module in the working directory, a
``usercustomize`` under ``$HOME``, ``PYTHON*`` variables - runs as it starts.
A program that needs site-packages adds them itself
(``site.addsitedir`` for each of ``site.getsitepackages()``).
"""

from __future__ import annotations

from .launcher import PYTHON_ISOLATED

READY_FD_VAR = "ASSAY_RESIDENT_READY_FD"
# A resident may keep one spare process of its own (the notebook holder forks the next cell's
# process ahead): the engine's pids limit adds it, so the code's own budget stays what was configured.
SPARE_PIDS = 1

STARTER_SOURCE = r"""
import os, select, sys, time
timeout, code_path, program = float(sys.argv[1]), sys.argv[2], sys.argv[3]
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0); os.dup2(null, 1); os.dup2(null, 2)
        os.closerange(3, r); os.closerange(r + 1, w); os.closerange(w + 1, 1 << 16)
        os.set_inheritable(w, True)
        os.environ["PATH"] = code_path
        os.environ["ASSAY_RESIDENT_READY_FD"] = str(w)
        os.execv(sys.executable, [sys.executable, "-I", "-S", "-u", "-c", program])
    finally:
        os._exit(127)
os.close(w)
os.waitpid(pid, 0)
deadline = time.monotonic() + timeout
buf = b""
while b"\n" not in buf:
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([r], [], [], left)[0]:
        break
    chunk = os.read(r, 65536)
    if not chunk:
        break
    buf += chunk
line = buf.split(b"\n", 1)[0]
sys.stdout.write(line.decode("utf-8", "replace") + "\n" if b"\n" in buf else "")
sys.exit(0 if b"\n" in buf else 1)
"""

# Run as the resident's uid: kill(-1) reaches every process of that uid (not this one). SIGKILL is
# delivered asynchronously, so it then waits (up to 2 s) until no process of the uid is left alive (a
# zombie waiting for the init to reap it holds nothing): a stop that returned while the resident still
# held its socket would let the next call connect to a dying process. Exit 1 if one is still alive.
KILL_ALL_SOURCE = """
import os, signal, time
me, uid = os.getpid(), os.getuid()
def alive():
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if os.stat("/proc/" + name).st_uid != uid:
                continue
            with open("/proc/" + name + "/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            return True
    return False
end = time.monotonic() + 2.0
while True:
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        break
    if not alive():
        break
    if time.monotonic() > end:
        raise SystemExit(1)
    time.sleep(0.005)
"""


def starter_argv(program: str, ready_timeout_s: float, code_path: str) -> list[str]:
    """The argv that starts ``program`` (Python source) as a resident and prints its ready line."""
    return [*PYTHON_ISOLATED, "-c", STARTER_SOURCE, f"{ready_timeout_s:.3f}", code_path, program]


def kill_all_argv() -> list[str]:
    return [*PYTHON_ISOLATED, "-c", KILL_ALL_SOURCE]
