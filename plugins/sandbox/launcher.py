"""The in-container launcher: the kill timer and the output caps, inside.

Container runtimes exec ``python3 -I -S -u -c LAUNCHER_SOURCE ...`` instead of
the code itself. Isolated mode (``-I``) keeps the working directory (and any
other path the code can write) out of ``sys.path`` and ignores ``PYTHON*``
variables, so a planted ``/workspace/signal.py`` cannot run inside the
launcher or the host's helpers; ``python3`` is looked up on a fixed ``PATH``
of read-only root directories (:data:`HELPER_PATH`), whatever ``PATH`` the
session asked for (the code gets that one). Only the code's own process
sees what ``python3 -c`` would give it (``''`` and ``PYTHONPATH`` on
``sys.path``, site-packages). The launcher runs the code in its own process group, forwards
at most ``limit`` bytes of stdout and of stderr (draining and dropping the
rest), and when the code ends, or at the deadline, SIGKILLs every process
of the code's uid (the container's idle keeper runs as another uid, so it
survives): nothing a call started, not even a ``setsid`` daemon, lives on
into the next call. It then scans
the working directory for produced files and appends one trailer line,
tagged with a per-execution nonce, to stderr: exit code, timed_out,
oom_killed, truncation and files. The host strips the trailer.

The launcher makes itself not dumpable (``PR_SET_DUMPABLE 0``) before anything
else, so the code - which runs as the same uid - can neither open
``/proc/<launcher>/mem`` nor reach the engine's pipes through
``/proc/<launcher>/fd``. Its nonce is made after the fork (never in the code's
memory, never in argv or the environment) and is the first line it writes
on stderr; the host accepts a trailer only with that nonce and only when the
engine's own exit status for the exec matches the trailer's exit code.

The host never trusts the launcher alone: it caps both streams again while
reading and keeps its own deadline (see :mod:`assay.plugins.sandbox.container`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

LAUNCHER_SOURCE = r"""
import ctypes, os, selectors, signal, sys, time
# Not dumpable, before anything else: the code runs as this uid, and could otherwise open
# /proc/<launcher>/mem (read or change this process) or /proc/<launcher>/fd/2 (write into the
# engine's own stream, past every cap). Without it nothing runs.
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
    os.write(2, b"assay launcher: PR_SET_DUMPABLE failed; nothing was run\n")
    os._exit(125)
timeout, out_lim, err_lim, workdir = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
code_path = sys.argv[5]
argv = sys.argv[7:]
def oom_count():
    for p in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(p) as fh:
                for line in fh:
                    k, _, v = line.partition(" ")
                    if k == "oom_kill":
                        return int(v)
        except (OSError, ValueError):
            pass
    return None
def write_all(fd, data):
    while data:
        try:
            n = os.write(fd, data)
        except InterruptedError:
            continue
        data = data[n:]
def scan():
    found = {}
    stack = [workdir]
    while stack and len(found) < 5000:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    found[e.path] = (st.st_mtime_ns, st.st_size)
    return found
before = scan()
oom0 = oom_count()
start = time.monotonic()
deadline = start + timeout
r_out, w_out = os.pipe()
r_err, w_err = os.pipe()
r_sig, w_sig = os.pipe()
r_go, w_go = os.pipe()  # the code starts only once the nonce line is out
os.set_blocking(w_sig, False)
signal.set_wakeup_fd(w_sig)
signal.signal(signal.SIGCHLD, lambda *a: None)
pid = os.fork()
def run_python_here(source, filename):
    # Python code runs in this forked process: no second interpreter start-up.
    # It gets what `python3 -c` would give it: site-packages, a fresh __main__,
    # sys.argv, and a traceback without the launcher's frame.
    import site, types
    # The launcher is isolated (-I); the code gets what `python3 -c` gives it.
    env = os.environ
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    enc = env.get("PYTHONIOENCODING")
    if enc:
        name, _, errors = enc.partition(":")
        for stream in (sys.stdout, sys.stderr):
            stream.reconfigure(encoding=name or None, errors=errors or stream.errors)
    # Two differences, both for code an earlier call planted: no user site (HOME is /tmp, the
    # code's: a usercustomize there would run in every later call), and the working directory
    # goes on the path after site has run, as `python3 -c` puts it, so that a sitecustomize.py
    # written there is never imported.
    site.ENABLE_USER_SITE = False
    sys.path[0:0] = [p for p in env.get("PYTHONPATH", "").split(":") if p]
    site.main()
    sys.path.insert(0, "")
    sys.argv = ["-c"] if filename == "<string>" else [filename]
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    try:
        code = compile(source, filename, "exec")
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        import traceback
        tb = exc.__traceback__
        if tb is not None and tb.tb_frame.f_code is run_python_here.__code__:
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb)
        raise SystemExit(1)
    raise SystemExit(0)
if pid == 0:
    try:
        # The engine's stream is the launcher's alone: its first bytes are the launcher's nonce line.
        os.dup2(w_err, 2); os.dup2(w_out, 1)
        # Nothing of the code runs before the launcher's nonce line is on the engine's stream (under
        # gVisor the code can open the launcher's stdio for writing and could otherwise write first).
        os.close(w_go)
        if os.read(r_go, 1) != b"g":
            os._exit(125)  # the launcher died before its nonce line: run nothing
        os.setpgid(0, 0)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.closerange(3, 1 << 16)
        libc.prctl(4, 1, 0, 0, 0)  # the code's own process is dumpable again, as under `python3 -c`
        os.environ["PATH"] = code_path
        if argv[0] == "@python":
            source, filename = argv[1], "<string>"
        elif argv[0] == "@python-file":
            with open(argv[1]) as fh:
                source, filename = fh.read(), argv[1]
        else:
            os.execvp(argv[0], argv)
    except BaseException as exc:
        try:
            os.write(2, ("cannot start %s: %s\n" % (argv[0], exc)).encode())
        finally:
            os._exit(127)
    run_python_here(source, filename)  # raises SystemExit: the child never reaches the code below
os.close(w_out); os.close(w_err)
# The nonce is made here, after the fork, so the code's process never had it in its memory; the
# launcher is not dumpable, so the code cannot read it from this one either. It is the first line
# on the engine's stderr (nothing else writes there: the code's output is forwarded after it), and
# the host accepts only a trailer tagged with it.
nonce = os.urandom(8).hex()
write_all(2, ("\x1eASSAY-NONCE:%s\n" % nonce).encode())
os.write(w_go, b"g"); os.close(w_go); os.close(r_go)
sel = selectors.DefaultSelector()
sel.register(r_out, selectors.EVENT_READ, (1, out_lim))
sel.register(r_err, selectors.EVENT_READ, (2, err_lim))
sel.register(r_sig, selectors.EVENT_READ, None)
sent = {1: 0, 2: 0}
total = {1: 0, 2: 0}
status = None
timed_out = False
exited_at = None
def reap():
    global status
    if status is None:
        try:
            got, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            got, st = pid, 0
        if got == pid:
            status = st
def kill_group():
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
def others_left():
    # Whether a live (not zombie) process of this uid other than this one is running.
    me, uid = os.getpid(), os.getuid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return True  # cannot tell: kill as if something were left
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if os.stat("/proc/" + name).st_uid != uid:
                continue
            with open("/proc/%s/stat" % name, "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                    return True
        except OSError:
            continue
    return False
def kill_all():
    # Every process of the code's uid but this one (the keeper runs as another uid).
    # kill(-1) succeeds whenever the namespace holds any other process (the keeper's too), even
    # one it may not signal, so its answer cannot say when none of the code's is left: that is
    # looked up in /proc first. With none running (the code ended and left nothing), one round
    # is all it takes - nothing is left that could fork. Otherwise tight rounds, then spaced
    # ones for forks still in flight (a process forked while one kill(-1) walked the process
    # table escaped it, seen under gVisor with a fork bomb); the code's own process is reaped
    # meanwhile.
    for n in range(240 if others_left() else 1):
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            break
        if n >= 200:
            reap()
            time.sleep(0.01)
    kill_group()
while True:
    now = time.monotonic()
    if status is None and now >= deadline:
        timed_out = True
        kill_all()
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            status = 9
        break
    if status is not None:
        if exited_at is None:
            exited_at = now
            kill_all()  # what the call started ends with it, setsid daemons included
        if len(sel.get_map()) <= 1 or now - exited_at > 0.5:
            break
    wait = deadline - now if status is None else 0.05
    for key, _ in sel.select(max(0.0, min(wait, 1.0))):
        if key.data is None:
            try:
                os.read(r_sig, 4096)
            except OSError:
                pass
            continue
        fd_out, lim = key.data
        try:
            data = os.read(key.fd, 65536)
        except InterruptedError:
            continue
        if not data:
            sel.unregister(key.fd)
            continue
        total[fd_out] += len(data)
        room = lim - sent[fd_out]
        if room > 0:
            piece = data[:room]
            write_all(fd_out, piece)
            sent[fd_out] += len(piece)
    reap()
duration = time.monotonic() - start
code = os.waitstatus_to_exitcode(status) if status is not None else None
signum = -code if code is not None and code < 0 else None
exit_code = 128 + signum if signum else code
oom1 = oom_count()
oom = bool(signum == 9 and not timed_out and (oom0 is None or oom1 is None or oom1 > oom0))
after = scan()
files = [[p, v[1], v[0] / 1e9] for p, v in after.items() if before.get(p) != v][:500]
trailer = {"exit_code": exit_code, "timed_out": timed_out, "oom_killed": oom, "duration_s": duration,
           "stdout_truncated": total[1] > out_lim, "stderr_truncated": total[2] > err_lim, "files": files}
# repr, not json: importing json (and re with it) would cost every execution ~20 ms of CPU.
write_all(2, ("\x1eASSAY-%s:%r\n" % (nonce, trailer)).encode("utf-8", "backslashreplace"))
sys.exit(exit_code if exit_code is not None and 0 <= exit_code < 256 else 1)
"""

# A helper for file operations, run the same way (python3 -I -S -c FILES_SOURCE op path ...).
# Exit codes: 0 ok, 2 not found, 3 too large, 4 escapes the root or is a symlink, 5 not a file.
FILES_SOURCE = r"""
import json, os, stat, sys
op, root, path = sys.argv[1], sys.argv[2], sys.argv[3]
real = os.path.realpath(path)
if real != path or not (real == root or real.startswith(root + "/")):
    sys.stderr.write("path resolves outside %s or through a symlink\n" % root); sys.exit(4)
try:
    st = os.lstat(path)
except FileNotFoundError:
    sys.exit(2)
if op == "get":
    limit = int(sys.argv[4])
    if not stat.S_ISREG(st.st_mode):
        sys.exit(5)
    if st.st_size > limit:
        sys.stderr.write(str(st.st_size)); sys.exit(3)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        sys.exit(3)
    sys.stdout.buffer.write(data)
elif op == "list":
    out = []
    if stat.S_ISDIR(st.st_mode):
        for e in sorted(os.scandir(path), key=lambda e: e.name)[:10000]:
            try:
                s = e.stat(follow_symlinks=False)
            except OSError:
                continue
            out.append([e.path, e.name, s.st_size, stat.S_ISDIR(s.st_mode), s.st_mtime])
    else:
        out.append([path, os.path.basename(path), st.st_size, False, st.st_mtime])
    sys.stdout.write(json.dumps(out))
"""


@dataclass
class Trailer:
    exit_code: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    duration_s: float | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    files: list[list[Any]] = field(default_factory=list)


# Where the engine looks up ``python3`` for the launcher and the helpers: the
# image's read-only root only (ContainerSpec.check keeps every tmpfs off it).
HELPER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Isolated (no cwd, no user site, no PYTHON* variables), no site, unbuffered.
PYTHON_ISOLATED = ("python3", "-I", "-S", "-u")


def helper_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for an exec of assay's own code: the fixed PATH, no loader variables."""
    out = {k: v for k, v in env.items() if not k.upper().startswith("LD_")}
    out["PATH"] = HELPER_PATH
    return out


def launcher_argv(
    timeout_s: float,
    out_limit: int,
    err_limit: int,
    workdir: str,
    program: list[str],
    *,
    code_path: str = HELPER_PATH,
) -> list[str]:
    """The argv that runs ``program`` under the launcher (``code_path`` becomes the code's PATH).

    No nonce in it: argv is readable by every process (``/proc/<pid>/cmdline``). The launcher
    makes its own and writes it first on its stderr (:func:`split_nonce`).
    """
    return [
        *PYTHON_ISOLATED,
        "-c",
        LAUNCHER_SOURCE,
        f"{timeout_s:.3f}",
        str(out_limit),
        str(err_limit),
        workdir,
        code_path,
        "--",
        *program,
    ]


def files_argv(op: str, root: str, path: str, *extra: str) -> list[str]:
    return [*PYTHON_ISOLATED, "-c", FILES_SOURCE, op, root, path, *extra]


NONCE_MARK = b"\x1eASSAY-NONCE:"
NONCE_LEN = 16


def split_nonce(stderr: bytes) -> tuple[bytes, str | None]:
    """Remove the launcher's nonce line, which must open its stderr; (the rest, nonce or None).

    Only the launcher writes to the engine's stream before that line: the code's process starts
    only once it is out, its output is forwarded after it, and on runc it cannot reach the stream
    itself (the launcher is not dumpable). A nonce line anywhere else is not the launcher's.
    """
    if not stderr.startswith(NONCE_MARK):
        return stderr, None
    end = len(NONCE_MARK) + NONCE_LEN
    nonce = stderr[len(NONCE_MARK) : end]
    if stderr[end : end + 1] != b"\n" or nonce.strip(b"0123456789abcdef"):
        return stderr, None
    return stderr[end + 1 :], nonce.decode("ascii")


def exit_status_for(trailer: Trailer) -> int:
    """The status the launcher exits with after writing ``trailer`` (what the engine must report)."""
    code = trailer.exit_code
    return code if code is not None and 0 <= code < 256 else 1


def split_trailer(stderr: bytes, nonce: str) -> tuple[bytes, Trailer | None]:
    """Remove the launcher's trailer from ``stderr``; return it parsed (None if absent)."""
    marker = f"\x1eASSAY-{nonce}:".encode()
    at = stderr.rfind(marker)
    if at < 0:
        return stderr, None
    line_end = stderr.find(b"\n", at)
    raw = stderr[at + len(marker) : line_end if line_end >= 0 else len(stderr)]
    try:
        data = ast.literal_eval(raw.decode("utf-8", "replace"))
        trailer = Trailer(**{k: data[k] for k in Trailer.__dataclass_fields__ if k in data})
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return stderr[:at], None
    return stderr[:at], trailer
