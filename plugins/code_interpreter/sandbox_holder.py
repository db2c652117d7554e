"""The notebook holder: executed INSIDE the sandbox, as the session's resident process.

One process per session keeps the notebook's variables and imported modules
in memory. Each cell runs in a fork of it, so a warm cell costs what its code
costs (no re-import, no unpickling), while a killed cell still cannot touch
the notebook:

* the holder listens on a unix socket in the working directory; a call's
  client (the channel's relay, as the keeper's uid, or a client run by the
  sandbox's launcher, as the code's uid) connects, sends the request and its
  own stdout/stderr descriptors (``SCM_RIGHTS``), and waits for one report
  line. A call without a valid token of the host's is refused
  (``assay_ci_calls``): a call a cell or raw code queued would change the
  notebook with no execution recorded;
* the cell's process is a fork of the holder (its own process group,
  ``oom_score_adj`` 1000 so the OOM killer takes it first), made ahead while
  the notebook is idle (the *spare*: it copies the pages the last cell wrote,
  see ``assay_ci_pages``, then accepts the next call on the inherited socket
  itself and tells the holder on a socket pair - the call's connection, its
  deadline, the OOM count before it - so the call reaches the cell's process
  with no hop through the holder), or at once when none is ready (calls back
  to back: the holder accepts and forks). It runs
  the cell exactly as a one-shot call does (``assay_ci_runner.run``, a fresh
  copy for each cell: ``assay_ci_recorder``), on the passed descriptors, and
  saves a snapshot candidate (``state.pkl.next``). The caller's connection is
  the watching holder's alone: the cell's process keeps no copy of it;
* the holder watches the child with the cell's time limit. When the child
  says it is done (it has killed whatever the cell left running and written
  its frame), the holder commits - the candidate becomes the snapshot
  (``state.pkl``) - and answers, and the child becomes the next holder: it
  lists the pages it wrote (when the notebook is idle) while the old holder
  still shares the rest, lets the old one end, then serves the socket, which
  it inherited. A child that still runs threads of the cell hands back
  instead: it exits, and the old holder reloads the committed snapshot.
  A child that times out, is OOM-killed or crashes is killed with everything
  it started; the holder drops the candidate and keeps its own state, as it
  was before the cell;
* the report line says which: ``done``, ``timeout``, ``oom``, ``crashed``.

If the holder itself is lost (a cell killed it), the host starts a new one,
which restores the last committed snapshot and says so.
"""

import gc
import json
import os
import select
import signal
import socket
import sys
import time

from assay_ci_calls import (  # uploaded beside this file, loaded before it
    HEADER,
    Anchor,
    accept_call as _accept_call,
    receive as _receive,
    report as _report,
)
from assay_ci_recorder import Recorder

SOCKET_NAME = "holder.sock"
# After a cell, how long the holder waits for the next call before it uses the idle time (forks
# the next cell's process and copies the pages the last one wrote).
IDLE_S = 0.05
OOM_ADJ = "/proc/self/oom_score_adj"


def _oom_kills() -> int | None:
    """The cgroup's OOM-kill count (v2 or v1), None when it cannot be read."""
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as fh:
                for line in fh:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return None


def _set_oom_adj(value: str) -> None:
    try:
        with open(OOM_ADJ, "w") as fh:
            fh.write(value)
    except OSError:
        pass


def _read_oom_adj() -> str:
    try:
        with open(OOM_ADJ) as fh:
            return fh.read().strip()
    except OSError:
        return "0"


def _kill_the_rest() -> None:
    """SIGKILL every other process of this uid: what a cell left running (and an old holder)."""
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass


class Holder:
    def __init__(
        self, runner, listener: socket.socket, clients: frozenset, anchor, recorder
    ) -> None:
        self.runner = runner
        self.listener = listener
        self.clients = clients
        self.anchor = anchor  # the calls' tokens (assay_ci_calls.Anchor)
        self.recorder = recorder  # the runner, fresh for each cell (assay_ci_recorder)
        self.base_adj = _read_oom_adj()
        self.nb = runner.Namespace()
        self.nb.restore()
        self.cells = 0
        self.spare: Spare | None = None
        self.working_set: list = []  # pages the last finished cell wrote: the spare copies them ahead
        self.predecessor: int | None = None  # the holder this process took over from

    def serve(self) -> None:
        while True:
            if self.spare is None and not _readable(self.listener):
                # While idle: the next cell's process, ready. Not before the old holder is gone:
                # the pids limit counts both, and a host exec needs room meanwhile.
                # A call already waiting (calls back to back) is not kept waiting for that.
                _wait_gone(self.predecessor)
                self.spare = self._fork_spare()
                if self.spare is None:
                    continue  # this process ran that cell and is the holder now: it forks its own
            if self.spare is not None:
                # The spare takes the next call itself; this process learns when, and watches it.
                spare, self.spare = self.spare, None
                taken = spare.taken()
                if taken is None:  # it died while idle: end it, and copy nothing ahead next time
                    spare.discard(_reap())
                    self.working_set = []
                    continue
                conn, deadline, oom_before, token = taken
                self.anchor.admit(token)  # the spare checked it; this process learns it was used
                self._watched(conn, deadline, spare, oom_before)
                continue  # reached only when the cell did not take over (this process holds on)
            got = _accept_call(self.listener, self.clients, self.anchor)
            if got is not None:
                self.cell(*got)  # returns in the holder of the next cell (this one or its child)

    def cell(self, conn: socket.socket, req: dict, fds: list) -> None:
        """Run a call with no spare ready (calls back to back): fork its process now."""
        _reap()  # what the last cell started and the holder killed: no zombies (they hold pids)
        oom_before = _oom_kills()
        deadline = time.monotonic() + req["timeout_s"]
        spare = self._fork_spare(conn, req, fds)
        if spare is None:
            return  # this process ran the cell and is the holder now
        for fd in fds:
            os.close(fd)
        self._watched(conn, deadline, spare, oom_before)

    def _fork_spare(self, conn=None, req=None, fds=None):
        """Fork the process of the next cell: it takes the next call itself (or runs ``req`` at once).

        Returns the parent's handle; in the child, returns None once the child has
        run its cell and become the holder.
        """
        c2p_r, c2p_w = os.pipe()
        p2c_r, p2c_w = os.pipe()
        taken_parent, taken_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ahead = self.working_set if req is None else []
        # The child's collector must not walk the holder's objects: writing their GC headers
        # would copy every page holding them (copy-on-write) on each cell.
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(c2p_r)
                os.close(p2c_w)
                taken_parent.close()
                os.setpgid(0, 0)
                _set_oom_adj("1000")  # under memory pressure the cell goes, never the holder
                # This cell's own runner (made ahead in a spare): the recorder's code as uploaded,
                # whatever earlier cells changed in this process (assay_ci_recorder).
                runner = self.recorder.fresh(self.runner.WORKDIR)
                if req is None:
                    _pages().populate(ahead, stop=lambda: _readable(self.listener))
                    got = self._take_call(taken_child)
                    if got is None:
                        os._exit(0)  # the holder went away before any call came
                    req, fds = got
                else:
                    conn.close()  # the holder's: only the watching holder answers the caller
                taken_child.close()
                self._child(runner, req, fds, c2p_w, p2c_r)
            except BaseException:  # noqa: BLE001 - never a second holder: a child that failed ends here
                os._exit(70)
            return None  # this process is the holder now
        for fd in (c2p_w, p2c_r):
            os.close(fd)
        taken_child.close()
        return Spare(pid, c2p_r, p2c_w, taken_parent)

    def _take_call(self, holder: socket.socket):
        """In a spare: accept the next call and hand it to the holder (the connection, the deadline,
        the OOM count before it, the token it used); (req, fds), or None when the holder is gone.

        The connection is the holder's alone from then on: the cell's process keeps no copy, so
        nothing the cell does can answer the caller.
        """
        while True:
            try:
                ready = select.select([self.listener, holder], [], [])[0]
            except InterruptedError:
                continue
            if holder in ready:
                return None  # its end closed: the holder went away
            got = _accept_call(self.listener, self.clients, self.anchor)
            if got is None:
                continue
            conn, req, fds = got
            told = json.dumps(
                {
                    "deadline": time.monotonic() + req["timeout_s"],
                    "oom_before": _oom_kills(),
                    "token": req["token"],
                }
            )
            try:
                holder.sendmsg(
                    [HEADER.pack(len(told)) + told.encode("ascii")],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _fd_bytes([conn.fileno()]))],
                )
            except OSError:
                _report(conn, outcome="no_holder")
                return None
            conn.close()
            return req, fds

    def _watched(self, conn, deadline, spare, oom_before) -> None:
        try:
            self._watch(conn, deadline, spare, oom_before)
        finally:
            spare.close()

    # --- in the holder ---------------------------------------------------------------

    def _watch(self, conn, deadline, spare, oom_before) -> None:
        pid, c2p_r, p2c_w = spare.pid, spare.c2p_r, spare.p2c_w
        said = b""
        status = None
        while b"\n" not in said:
            left = deadline - time.monotonic()
            if left <= 0:
                return self._ended(conn, pid, "timeout", oom_before)
            ready = select.select([c2p_r], [], [], min(left, 0.5))[0]
            if ready:
                chunk = os.read(c2p_r, 256)
                if not chunk:
                    break  # the child is gone (or closed the pipe): see below
                said += chunk
                continue
            got, code = os.waitpid(pid, os.WNOHANG)
            if got == pid:
                status = code
                break
        if b"\n" not in said:
            return self._ended(conn, pid, None, oom_before, status)
        # The child finished the cell: commit its snapshot candidate and let it go on.
        state = self.runner.STATE_PATH
        committed = os.path.exists(state + ".next")
        if committed:
            os.replace(state + ".next", state)
        handback = said.startswith(b"handback")
        os.write(p2c_w, b"go\n")
        if not handback:
            # The child has written its frame and killed what the cell left running: this process,
            # which alone holds the caller's connection, answers. The child is the holder now. Stay
            # until it has listed the pages it wrote (they count as its own only while this process
            # still shares the rest), then end.
            _report(conn, outcome="done")
            _wait_closed(c2p_r)
            os._exit(0)
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            status = 0
        _kill_the_rest()
        if committed:
            self.nb.restore()
            self.nb.take_report()
        if status == 0:
            _report(conn, outcome="done", handback=True)
        else:  # it died before its frame was out: say how, as for a cell that never finished
            self._ended(conn, pid, None, oom_before, status)

    def _ended(self, conn, pid, outcome, oom_before, status=None) -> None:
        """The cell did not finish: kill it and all it started; the state stays as it was."""
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        if status is None:
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:
                status = None
        _kill_the_rest()
        try:
            os.unlink(self.runner.STATE_PATH + ".next")
        except OSError:
            pass
        signum = os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None
        exit_code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
        if outcome is None:
            oom_after = _oom_kills()
            killed = signum == signal.SIGKILL
            oom = killed and (oom_before is None or oom_after is None or oom_after > oom_before)
            outcome = "oom" if oom else "crashed"
        _report(
            conn,
            outcome=outcome,
            exit_code=exit_code if signum is None else 128 + signum,
            signal=signum,
        )

    # --- in the cell's process -------------------------------------------------------

    def _child(self, runner, req, fds, c2p_w, p2c_r) -> None:
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in fds:
            os.close(fd)
        real_fd = os.dup(1)  # the frame's channel (not inherited by the cell's subprocesses)
        runner.SNAPSHOT_PENDING = True
        frame = runner.run_safely(req, real_fd, self.nb)
        runner.SNAPSHOT_PENDING = False
        takeover = _alone() and frame.get("status") != "runner_failed"
        frame["kept_live"] = takeover
        old = os.getppid()
        if takeover:
            self._finish_takeover(runner, frame, real_fd, req, old)
        os.write(c2p_w, b"takeover\n" if takeover else b"handback\n")
        answer = b""
        while b"\n" not in answer:
            chunk = os.read(p2c_r, 16)
            if not chunk:
                break
            answer += chunk
        os.close(p2c_r)
        if not takeover:
            if answer:
                os.close(c2p_w)
                runner.emit_frame(frame, real_fd, req)
                os._exit(0)
            # The holder is gone: this process is all that is left (no one answers this call).
            frame["kept_live"] = True
            self._finish_takeover(runner, frame, real_fd, req, old)
        gc.unfreeze()  # this process is the holder now: its objects are ordinary again until the next fork
        _set_oom_adj(self.base_adj)
        self.cells += 1
        # After the answer: the old holder waits (still sharing its pages) until this process has
        # listed the ones it wrote - only when the notebook turns out idle (no next call within
        # IDLE_S: calls back to back leave no moment to use it) - then ends by itself.
        idle = not _readable(self.listener, IDLE_S)
        self.working_set = _pages().written_ranges(_pages().budget()) if idle else []
        self.predecessor = old
        os.close(c2p_w)

    def _finish_takeover(self, runner, frame: dict, real_fd: int, req: dict, old: int) -> None:
        """Before the holder answers: end whatever the cell left running (the old holder is spared:
        it still shares its pages and ends by itself once this process lets it go), write the frame,
        and let go of the caller's descriptors."""
        _kill_leftovers(keep=old)
        _reap(wait_s=0.1)
        try:
            runner.emit_frame(frame, real_fd, req)
        except OSError:  # the caller went away: the notebook carries on
            pass
        os.close(real_fd)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)


class Spare:
    """The holder's end of a cell's process: its report pipe, its go-ahead pipe, and the socket on
    which a spare says it took a call."""

    def __init__(self, pid: int, c2p_r: int, p2c_w: int, taken: socket.socket) -> None:
        self.pid, self.c2p_r, self.p2c_w, self.taken_sock = pid, c2p_r, p2c_w, taken

    def taken(self):
        """Wait until the spare takes a call: (its connection, the deadline, the OOM count before, the
        call's token), or None if it is gone (died while idle)."""
        try:
            told, fds = _receive(self.taken_sock, 1)
            return (
                socket.socket(fileno=fds[0]),
                float(told["deadline"]),
                told["oom_before"],
                told["token"],
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def discard(self, reaped: list) -> None:
        """A spare that cannot take the cell: end it, unless it is gone and reaped already."""
        if self.pid not in reaped:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
        self.close()

    def close(self) -> None:
        for fd in (self.c2p_r, self.p2c_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self.taken_sock.close()


def _fd_bytes(fds: list) -> bytes:
    return b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)


def _wait_closed(fd: int) -> None:
    """Block until the other end of the pipe ``fd`` is closed (or the wait is cut short)."""
    try:
        while os.read(fd, 256):
            pass
    except OSError:
        pass


def _readable(sock: socket.socket, wait_s: float = 0.0) -> bool:
    """Whether ``sock`` has something waiting (a connection, a spare's word) now or within ``wait_s``."""
    try:
        return bool(select.select([sock], [], [], wait_s)[0])
    except (OSError, ValueError):
        return False


def _wait_gone(pid: int | None, wait_s: float = 0.25) -> None:
    """Wait (a bounded moment) until process ``pid`` has ended and been reaped."""
    if pid is None or pid <= 1:
        return
    deadline = time.monotonic() + wait_s
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.002)


def _pages():
    return sys.modules.get("assay_ci_pages") or __import__("assay_ci_pages")


def _reap(wait_s: float = 0.0) -> list:
    """Collect exited children (processes a cell started, killed since); their pids.

    With ``wait_s``, wait that long at most for children still ending (just killed).
    """
    reaped: list[int] = []
    deadline = time.monotonic() + wait_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            if time.monotonic() >= deadline:
                return reaped
            time.sleep(0.001)
            continue
        reaped.append(pid)


def _kill_leftovers(keep: int) -> None:
    """SIGKILL every other process of this uid but ``keep``, until none is left (bounded rounds).

    Unlike ``kill(-1)`` it spares one process. Processes forked meanwhile are found in the
    next round; the pids limit bounds how many there can be.
    """
    me, uid = os.getpid(), os.getuid()
    for _ in range(20):
        found = False
        try:
            names = os.listdir("/proc")
        except OSError:
            return _kill_the_rest() if keep <= 1 else None
        for name in names:
            if not name.isdigit() or int(name) in (me, keep):
                continue
            try:
                if os.stat(f"/proc/{name}").st_uid != uid:
                    continue
                with open(f"/proc/{name}/stat", "rb") as fh:
                    if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                        continue  # ended already, not yet reaped
                os.kill(int(name), signal.SIGKILL)
                found = True
            except OSError:
                continue
        if not found:
            return


def _alone() -> bool:
    """Whether this process runs one thread only (after a moment for the capture thread to end)."""
    for _ in range(20):
        try:
            if len(os.listdir("/proc/self/task")) == 1:
                return True
        except OSError:
            return False
        time.sleep(0.01)
    return False


def serve(config: dict, code: dict) -> None:
    """Start the holder: restore the snapshot, listen, say ready, serve calls until killed.

    ``config``: ``clients``, the uids of the host's callers (the relay's and the client's);
    ``anchor``, the last link of the host's token chain (``assay_ci_calls``); ``runner_dir``.
    ``code``: the runner's modules, compiled from the uploaded files as this process started.
    """
    runner = sys.modules["assay_ci_runner"]
    runner.set_workdir(os.getcwd())
    # Before any snapshot is restored (unpickling runs code of the notebook's) or any cell runs.
    recorder = Recorder(code, config["runner_dir"])
    ready_fd = int(os.environ.pop("ASSAY_RESIDENT_READY_FD"))
    os.makedirs(runner.ASSAY_DIR, exist_ok=True)
    path = os.path.join(runner.ASSAY_DIR, SOCKET_NAME)
    try:
        os.unlink(path)
    except OSError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o666)  # the callers run as other uids; each call's token is checked
    os.chmod(runner.ASSAY_DIR, 0o755)
    listener.listen(8)
    _pages()  # imported once here, not in each cell's process
    import resource  # noqa: F401 - the runner counts each cell's page faults with it

    holder = Holder(
        runner,
        listener,
        frozenset(int(uid) for uid in config["clients"]),
        Anchor(config["anchor"]),
        recorder,
    )
    info = {
        "pid": os.getpid(),
        "state_found": holder.nb.state_found,
        "restore_error": holder.nb.restore_error,
    }
    os.write(ready_fd, ("ready " + json.dumps(info) + "\n").encode("ascii"))
    os.close(ready_fd)
    holder.serve()
