"""One run's notebook on top of one sandbox session.

The sandbox session (a long-lived container, a fresh process per execution)
is the run's ``sandbox.python`` object. This module adds what a notebook
needs: the runner script uploaded once, the inputs already placed (so a warm
call with no new inputs is exactly one execution), the request sent to the
runner and the frame it prints back.
"""

from __future__ import annotations

import base64
import json
import secrets
import struct
import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from .frame import Frame, load_json, parse_frame
from .inputs import InputArtifact, meta_bytes
from .tokens import CallTokens

SESSION_KEY = "sandbox.python"
STATE_KEY = "code_interpreter.notebook"
RUNNER_NAME = "assay_ci_runner"
RUNNER_DIR = ".assay-runner"
RUNNER_MISSING = "ASSAY-RUNNER-MISSING"
DATA_MANIFEST = "files.json"  # read by load_file (sandbox_tables.py)


# Package module -> the name it is imported under inside the sandbox.
SANDBOX_MODULES = {
    "sandbox_runner.py": f"{RUNNER_NAME}.py",
    "sandbox_tables.py": "assay_ci_tables.py",
    "sandbox_charts.py": "assay_ci_charts.py",
    "sandbox_results.py": "assay_ci_results.py",
    "sandbox_holder.py": "assay_ci_holder.py",
    "sandbox_state.py": "assay_ci_state.py",
    "sandbox_capture.py": "assay_ci_capture.py",
    "sandbox_pages.py": "assay_ci_pages.py",
    "sandbox_calls.py": "assay_ci_calls.py",
    "sandbox_recorder.py": "assay_ci_recorder.py",
}
# The notebook holder compiles these from the uploaded files as it starts, and runs them in this
# order (each imports only earlier ones); see _holder_program.
HOLDER_MODULES = (
    "assay_ci_capture",
    "assay_ci_state",
    "assay_ci_results",
    "assay_ci_tables",
    "assay_ci_charts",
    "assay_ci_pages",
    "assay_ci_runner",
    "assay_ci_calls",
    "assay_ci_recorder",
    "assay_ci_holder",
)
HOLDER_MARK = "\x1eASSAY-HOLDER "
HOLDER_SOCKET = ".assay/holder.sock"
# Seconds the client waits past the cell's limit for the holder's report, and the launcher past that.
CLIENT_WAIT_S = 2.0
CLIENT_GRACE_S = 4.0
RESTARTED_WARNING = (
    "the notebook process did not answer and was restarted; the next call restores the "
    "variables of the last finished call's snapshot"
)
# When the notebook process could not be killed (e.g. its processes hold every pid), the sandbox is
# hard-reset instead (plugins/sandbox/container.py: stop_resident): then the snapshot is gone too.
RESET_WARNING = (
    "the notebook process did not answer and could not be stopped, so the sandbox was reset (restarted): "
    "its variables and files are gone, and the next call starts empty"
)
NOT_STOPPED_WARNING = (
    "the notebook process did not answer and could not be stopped, and the sandbox did not run "
    "again after a restart; pass reset=true"
)
# Seconds the host waits past the relay's own wait before it gives up on the channel.
CHANNEL_GRACE_S = 5.0


def module_source(name: str) -> bytes:
    return resources.files(__package__).joinpath(name).read_bytes()


@dataclass
class CallOutcome:
    """What one execution gave back: the sandbox's result and the runner's frame (or None)."""

    execution: Any  # kernel.sandbox.ExecutionResult
    frame: Frame | None
    problem: str | None = None  # why there is no frame
    state_lost: bool = False
    holder_note: str | None = None  # the notebook process was lost and restarted: what came back
    committed: bool = (
        False  # the notebook holder says the cell finished and its state was committed
    )


@dataclass
class Notebook:
    """Bookkeeping for one sandbox session: runner and inputs already inside it."""

    session: Any  # kernel.sandbox.SandboxSession
    runner_ready: bool = False
    uploaded: dict[str, str] = field(default_factory=dict)  # artifact id -> sha256
    state_saved: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    holder: bool | None = (
        None  # cells run in the notebook holder (container runtimes); None: not decided
    )
    holder_up: bool = False
    channel: Any = None  # kernel.sandbox.channel.Channel to the relay, when the runtime has them
    channel_supported: bool = True
    tokens: CallTokens | None = None  # the running holder's chain of call tokens (see tokens.py)
    data_manifest: bytes | None = None  # the registered files load_file reads (datafiles.py)

    def close(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None

    @property
    def workdir(self) -> str:
        return getattr(self.session, "workdir", "/workspace")

    def ensure_runner(self) -> None:
        if not self.runner_ready:
            # Its own directory, owned by the sandbox's keeper: the code can read it, not change it.
            for source, target in SANDBOX_MODULES.items():
                self.session.put_file(
                    f"{RUNNER_DIR}/{target}", module_source(source), read_only=True
                )
            if self.data_manifest is not None:
                self.session.put_file(
                    f"{RUNNER_DIR}/{DATA_MANIFEST}", self.data_manifest, read_only=True
                )
            self.runner_ready = True

    def place_inputs(self, inputs: list[InputArtifact]) -> None:
        """Upload the inputs not already in the sandbox (read-only)."""
        for item in inputs:
            if self.uploaded.get(item.artifact_id) == item.sha256:
                continue
            self.session.put_file(item.path, item.data, read_only=True)
            self.session.put_file(item.meta_path, meta_bytes(item), read_only=True)
            self.uploaded[item.artifact_id] = item.sha256

    def forget_input(self, artifact_id: str) -> None:
        self.uploaded.pop(artifact_id, None)

    def execute(
        self,
        code: str,
        inputs: list[InputArtifact],
        limits: dict[str, int],
        timeout_s: float | None,
        default_timeout_s: float = 30.0,
    ) -> CallOutcome:
        nonce = secrets.token_hex(8)
        request = {
            "nonce": nonce,
            "code": code,
            "workdir": self.workdir,
            "limits": limits,
            "inputs": [i.manifest() for i in inputs],
            "expect_state": self.state_saved,
        }
        if self.holder is None:
            self.holder = bool(self.session.supports_resident)
        if self.holder:
            return self._execute_in_holder(request, inputs, timeout_s, default_timeout_s)
        bootstrap = _bootstrap(request)
        execution = self.session.run_code(bootstrap, timeout_s=timeout_s)
        if RUNNER_MISSING in execution.stdout[:200]:
            # The sandbox's working directory was reset (for example after a host-side kill):
            # put the runner back and run once more; the notebook state is gone.
            lost = self._runner_lost(inputs)
            request["expect_state"] = False
            execution = self.session.run_code(_bootstrap(request), timeout_s=timeout_s)
            outcome = self._outcome(execution, nonce)
            outcome.state_lost = lost
            return outcome
        return self._outcome(execution, nonce)

    def _runner_lost(self, inputs: list[InputArtifact]) -> bool:
        """The working directory was reset: put the runner and the inputs back; whether state was lost."""
        lost = self.state_saved
        self.runner_ready, self.uploaded, self.state_saved = False, {}, False
        self.holder_up = False
        self.ensure_runner()
        self.place_inputs(inputs)
        return lost

    # --- the notebook holder (see sandbox_holder.py) ------------------------------------

    def _open_channel(self) -> None:
        from assay.plugins.sandbox import SandboxError

        try:
            self.channel = self.session.open_channel(
                RELAY_PROGRAM, [f"{self.workdir.rstrip('/')}/{HOLDER_SOCKET}"]
            )
        except SandboxError as exc:
            if exc.code in ("SANDBOX_SESSION_NOT_FOUND", "SANDBOX_SESSION_CLOSED"):
                raise
            self.channel, self.channel_supported = None, False  # none here: one execution per call

    def _call_over_channel(self, request: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """One cell through the open channel: no engine exec at all.

        The relay writes the holder's report after a marker line with a tag of this call's own,
        given to the relay alone (never to the holder, so never to the cell): a cell that writes
        a report line of its own on the channel cannot end the exchange.
        """
        from assay.plugins.sandbox import ExecutionResult, SandboxError

        mark = (HOLDER_MARK + secrets.token_hex(16)).encode("ascii")
        body = json.dumps(request, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        wait = request["timeout_s"] + CLIENT_WAIT_S
        message = struct.pack("!QQd", len(mark), len(body), wait) + mark + body
        limit = int(request["limits"].get("stream_bytes", 1024**2))
        started = time.perf_counter()
        warnings: list[str] = []
        try:
            out, err, truncated, complete = self.channel.exchange(
                message, mark + b"\n", wait + CHANNEL_GRACE_S, limit
            )
        except SandboxError as exc:
            if not getattr(exc, "delivered", True) or self._sandbox_was_reset():
                # Not sent, or sent to a relay whose container has restarted since: nothing of
                # the cell can be left there (its working directory is gone), so it goes again.
                raise _NotDelivered() from None
            # The relay is gone mid-call: the cell may have run. End the holder's line (its
            # state comes back from the snapshot) rather than guess.
            self.channel = None
            stopped = self._stop_holder()
            out, err, truncated, complete = b"", b"", False, False
            warnings.append(
                f"the channel to the notebook broke ({exc.message}); "
                + (
                    "the notebook process was restarted"
                    if stopped == RESTARTED_WARNING
                    else stopped
                )
            )
        if not complete and self.channel is not None:
            self.channel.close()
            self.channel = None
        execution = ExecutionResult(
            exit_code=0,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            stdout_truncated=truncated,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            isolated=self.session.isolated,
            runtime=self.session.runtime,
            session_id=self.session.id,
            warnings=warnings,
        )
        return _split_report(
            execution, mark.decode("ascii"), "unresponsive" if not warnings else "lost"
        )

    def _sandbox_was_reset(self) -> bool:
        """Whether the sandbox's working directory was reset (the runner is gone): a restart."""
        from assay.plugins.sandbox import SandboxError

        try:
            self.session.list_files(f"{self.workdir.rstrip('/')}/{RUNNER_DIR}")
        except SandboxError as exc:
            return exc.code == "SANDBOX_FILE_NOT_FOUND"
        return False

    def _execute_in_holder(
        self,
        request: dict[str, Any],
        inputs: list[InputArtifact],
        timeout_s: float | None,
        default_timeout_s: float,
    ) -> CallOutcome:
        limit = float(timeout_s if timeout_s is not None else default_timeout_s)
        if (
            not 0 < limit <= default_timeout_s
        ):  # the ceiling run_code applies (the channel bypasses it)
            from assay.plugins.sandbox import SANDBOX_OVERRIDE_REFUSED, SandboxError

            raise SandboxError(
                SANDBOX_OVERRIDE_REFUSED,
                f"timeout {timeout_s!r} s is outside (0, {default_timeout_s}] s",
                "Raise SANDBOX_TIMEOUT on the host if longer executions are really needed.",
            )
        request["timeout_s"] = limit
        why = "was lost and restarted"
        if self.holder_up and (self.tokens is None or not self.tokens.left):
            # Its chain of call tokens is used up: a new holder, with a new chain, from the snapshot.
            self.session.stop_resident()
            self.holder_up = False
            why = "was restarted (its call tokens were used up)"
        state_lost, note = self._ensure_holder(inputs, why)
        execution, report = self._call_holder(request, timeout_s)
        if report.get("outcome") == "no_holder":
            # The holder is gone (a cell killed it, or the sandbox was reset): start it again.
            self.holder_up = False
            lost, again = self._ensure_holder(inputs)
            state_lost, note = state_lost or lost, note or again
            execution, report = self._call_holder(request, timeout_s)
        outcome_name = report.get("outcome")
        update: dict[str, Any] = {}
        if outcome_name == "timeout":
            update["timed_out"] = True
        elif outcome_name == "oom":
            update["oom_killed"] = True
        elif outcome_name in ("crashed", "lost", "no_holder", "refused"):
            update["exit_code"] = report.get("exit_code")
            if outcome_name != "crashed":
                self.holder_up = False
        elif outcome_name == "unresponsive":
            # The holder did not answer in time (a cell stopped or killed it): end it and all it
            # started; the next call starts a new one from the snapshot.
            update["timed_out"] = True
            update["warnings"] = [*execution.warnings, self._stop_holder()]
        if update:
            execution = execution.model_copy(update=update)
        outcome = self._outcome(execution, request["nonce"])
        outcome.state_lost, outcome.holder_note = state_lost, note
        outcome.committed = outcome_name == "done"
        if outcome.committed:
            self.state_saved = True
        return outcome

    def _stop_holder(self) -> str:
        """End the holder and all it started; the warning that says what became of the notebook."""
        stopped = self.session.stop_resident()
        self.holder_up = False
        if not stopped:
            return NOT_STOPPED_WARNING
        return RESET_WARNING if self._sandbox_was_reset() else RESTARTED_WARNING

    def _ensure_holder(
        self, inputs: list[InputArtifact], why: str = "was lost and restarted"
    ) -> tuple[bool, str | None]:
        """Start the holder if it is not running: (state lost with the files, note on what came back).

        ``why``: what happened to the notebook's process, for the note.
        """
        if self.holder_up:
            return False, None
        if self.state_saved:  # a restart: end whatever is left of the old holder first
            self.session.stop_resident()
        lost = False
        self.tokens = CallTokens()
        program = _holder_program(self.session.caller_uids, self.tokens.anchor, self.workdir)
        line = self.session.start_resident(program)
        if RUNNER_MISSING in line:
            lost = self._runner_lost(inputs)
            line = self.session.start_resident(program)
        info, problem = (
            load_json(line[len("ready ") :]) if line.startswith("ready ") else (None, line[:300])
        )
        if not isinstance(info, dict):
            from assay.plugins.sandbox import SANDBOX_EXEC_FAILED, SandboxError

            raise SandboxError(
                SANDBOX_EXEC_FAILED, f"the notebook process did not start: {problem or line[:300]}"
            )
        self.holder_up = True
        note = None
        if self.state_saved and not lost:
            if info.get("restore_error"):
                note = f"the notebook's process {why}; {info['restore_error']}"
            elif info.get("state_found"):
                note = (
                    f"the notebook's process {why}: variables were restored from the "
                    "snapshot of the last finished call (values named as not in the snapshot are gone, "
                    "and imports run again when first used)"
                )
            else:
                note = f"the notebook's process {why}, and no snapshot was found: starting empty"
        return lost, note

    def _call_holder(
        self, request: dict[str, Any], timeout_s: float | None
    ) -> tuple[Any, dict[str, Any]]:
        request["token"] = (
            self.tokens.take() if self.tokens is not None and self.tokens.left else None
        )
        for _ in range(2):
            if (self.channel is None or self.channel.closed) and self.channel_supported:
                self._open_channel()
            if self.channel is None:
                break
            try:
                return self._call_over_channel(request)
            except _NotDelivered:
                self.channel = None  # closed before the request went out: open it again, once
        mark = HOLDER_MARK + secrets.token_hex(16)
        client = _client_program(request, request["timeout_s"] + CLIENT_WAIT_S, self.workdir, mark)
        execution = self.session.run_code(client, timeout_s=timeout_s, grace_s=CLIENT_GRACE_S)
        return _split_report(execution, mark, "lost")

    def _outcome(self, execution: Any, nonce: str) -> CallOutcome:
        frame, problem = parse_frame(execution.stdout, nonce)
        if frame is not None and frame.frame_file:
            try:
                raw = self.session.get_file(frame.frame_file)
                frame, problem = parse_frame(raw.decode("utf-8", "replace"), nonce, bare=True)
            except Exception as exc:  # noqa: BLE001 - reported as a protocol problem
                frame, problem = None, f"the runner's reply file could not be read: {exc}"
        if (
            frame is not None
            and frame.status in ("succeeded", "failed")
            and frame.state_error is None
        ):
            self.state_saved = True
        return CallOutcome(execution, frame, problem)

    def fetch(self, item: dict[str, Any], max_bytes: int) -> bytes:
        """A produced file's bytes: carried in the frame, or downloaded."""
        if item.get("data_b64"):
            return base64.b64decode(item["data_b64"])
        return self.session.get_file(item["path"], max_bytes=max_bytes)


def _bootstrap(request: dict[str, Any]) -> str:
    """The program each call runs: import the runner, hand it the request as a Python literal."""
    # The runner's directory is read-only; its bytecode is cached under .assay/pycache so
    # that warm calls do not compile it again.
    return (
        "import sys\n"
        "sys.dont_write_bytecode = False\n"
        "sys.pycache_prefix = '.assay/pycache'\n"
        f"sys.path.insert(0, {RUNNER_DIR!r})\n"
        "try:\n"
        f"    import {RUNNER_NAME} as _r\n"
        "except ImportError:\n"
        f"    print({RUNNER_MISSING!r}); raise SystemExit(3)\n"
        "sys.dont_write_bytecode = True\n"
        f"_r.main({request!r})\n"
    )


def _split_report(execution: Any, mark: str, missing: str) -> tuple[Any, dict[str, Any]]:
    """(the execution without the report, the report) from the line after the last ``mark``;
    ``{"outcome": missing}`` when there is none, ``lost`` when it cannot be read."""
    text = execution.stdout
    at = text.rfind(mark + "\n")
    if at < 0:
        return execution, {"outcome": missing}
    report, _ = load_json(text[at + len(mark) + 1 :].split("\n", 1)[0])
    execution = execution.model_copy(update={"stdout": text[:at].rstrip("\n")})
    return execution, report if isinstance(report, dict) else {"outcome": "lost"}


class _NotDelivered(Exception):
    """The channel was closed before the request went out (safe to send again)."""


def _holder_program(clients: tuple[int, ...], anchor: str, workdir: str) -> str:
    """The resident's program: load the runner and the holder, serve cells until killed.

    It runs isolated (``python3 -I -S``, see :mod:`assay.plugins.sandbox.resident`): nothing
    from the working directory, ``/tmp`` or the environment runs as it starts. Its path is
    set here: the standard library, the image's site-packages (their ``.pth`` files, no
    ``sitecustomize``/``usercustomize``), and the working directory *last*, so that a cell's
    own modules import but cannot shadow a library. The runner's modules are compiled from
    the read-only uploads, never read from a bytecode cache (a cell could plant one), and
    never imported through the path (the runner's directory is writable, sticky, by design).
    ``clients``: the uids of the host's callers; ``anchor``: the last link of the call tokens.
    """
    runner_dir = f"{workdir.rstrip('/')}/{RUNNER_DIR}"
    config = {"clients": list(clients), "anchor": anchor, "runner_dir": runner_dir}
    return (
        "import os, sys, types\n"
        "sys.dont_write_bytecode = True\n"
        "import site\n"
        "for _d in site.getsitepackages():\n"
        "    if os.path.isdir(_d):\n"
        "        site.addsitedir(_d)\n"
        f"sys.path.append({workdir.rstrip('/')!r})\n"
        "_code = {}\n"
        f"for _n in {HOLDER_MODULES!r}:\n"
        f"    _p = {runner_dir!r} + '/' + _n + '.py'\n"
        "    try:\n"
        "        with open(_p, 'rb') as _fh:\n"
        "            _code[_n] = compile(_fh.read(), _p, 'exec', dont_inherit=True)\n"
        "    except OSError:\n"
        f"        os.write(int(os.environ['ASSAY_RESIDENT_READY_FD']), b'{RUNNER_MISSING}\\n')\n"
        "        raise SystemExit(3)\n"
        "for _n, _c in _code.items():\n"
        "    _m = sys.modules[_n] = types.ModuleType(_n)\n"
        "    _m.__file__ = _c.co_filename\n"
        "    exec(_c, _m.__dict__)\n"
        f"sys.modules['assay_ci_holder'].serve({config!r}, _code)\n"
    )


def _client_program(request: dict[str, Any], wait_s: float, workdir: str, mark_text: str) -> str:
    """One call's client: hand the request and this process's stdout/stderr to the holder, print its report
    after ``mark_text``.

    It runs under the sandbox's launcher (the code's uid, the launcher's limits) and
    imports nothing but builtin modules.
    """
    body = json.dumps(request, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    mark = mark_text.encode("ascii")
    path = f"{workdir.rstrip('/')}/{HOLDER_SOCKET}"
    return (
        "import _socket, _struct, array, os\n"
        f"req = {body!r}\n"
        "s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)\n"
        "try:\n"
        f"    s.connect({path!r})\n"
        "except OSError:\n"
        '    reply = b\'{"outcome": "no_holder"}\'\n'
        "else:\n"
        "    fds = array.array('i', [1, 2]).tobytes()\n"
        "    reply = b''\n"
        "    try:\n"
        "        s.sendmsg([_struct.pack('!Q', len(req))], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])\n"
        "        s.sendall(req)\n"
        f"        s.settimeout({wait_s:.3f})\n"
        "        while not reply.endswith(b'\\n'):\n"
        "            chunk = s.recv(65536)\n"
        "            if not chunk:\n"
        "                break\n"
        "            reply += chunk\n"
        "    except TimeoutError:\n"
        '        reply = b\'{"outcome": "unresponsive"}\'\n'
        "    except OSError:\n"  # reset: the holder died with the request in hand; not a timeout
        '        reply = b\'{"outcome": "lost"}\'\n'
        '    reply = reply.strip() or b\'{"outcome": "lost"}\'\n'
        f"os.write(1, b'\\n' + {mark!r} + b'\\n' + reply + b'\\n')\n"
    )


# The relay: assay's own program at the far end of the channel (the keeper's uid, stdin
# attached). Per request it hands the holder the request and the channel's own stdout
# and stderr, and writes the holder's one-line report after what the cell wrote.
RELAY_PROGRAM = r"""
import _socket, _struct, array, os, sys
path = sys.argv[1]
fds = array.array("i", [1, 2]).tobytes()
def read_exact(n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(0, n - len(buf))
        if not chunk:
            os._exit(0)
        buf += chunk
    return buf
while True:
    nmark, nbody, wait = _struct.unpack("!QQd", read_exact(24))
    mark = read_exact(nmark)
    body = read_exact(nbody)
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        reply = b'{"outcome": "no_holder"}'
    else:
        reply = b""
        try:
            s.sendmsg([_struct.pack("!Q", len(body))], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            s.sendall(body)
            s.settimeout(wait)
            while not reply.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
        except TimeoutError:
            reply = b'{"outcome": "unresponsive"}'
        except OSError:  # reset: the holder died with the request in hand; not a timeout
            reply = b'{"outcome": "lost"}'
        reply = reply.strip() or b'{"outcome": "lost"}'
    s.close()
    os.write(1, b"\n" + mark + b"\n" + reply + b"\n")
"""
