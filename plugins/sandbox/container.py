"""Shared behaviour of container sessions, on four small engine primitives.

An engine (podman, docker, nerdctl) implements :meth:`ContainerSession._exec`
(start a process in the running container and stream its output),
:meth:`ContainerSession._put_archive`, :meth:`ContainerSession._hard_reset`
and :meth:`ContainerSession._remove`. Everything else lives here, once:

* the code runs under the in-container launcher (its own kill timer and
  output caps, see :mod:`assay.plugins.sandbox.launcher`);
* the host caps stdout/stderr again while reading, and keeps its own
  deadline (timeout + ``SANDBOX_HOST_GRACE``): past it the container's
  processes are killed and the container restarted, so a launcher the code
  managed to kill or stop cannot keep the work alive;
* every host-side wait is bounded whatever the container does: streams are
  read on a worker thread that the caller waits for with a deadline, so an
  engine stream that never ends (or a helper the code stopped) cannot hold
  the caller; a kill helper that does not report success leads to a restart;
* the launcher's trailer counts only after its nonce line opened stderr and
  when the engine's exit status for the exec matches it; without one, the
  code's leftovers are killed (the sandbox reset if even that cannot run) and
  the container's OOM counter, read on the host (:mod:`.oom`), says whether
  memory ran out; a stream far past its cap is not drained (:mod:`.stream`);
* files go in as tar archives and come out through a checked helper that
  refuses symlinks, ``..`` and anything outside the working directory
  (:mod:`.container_files`).
"""

from __future__ import annotations

import json
import posixpath
import secrets
import threading
import time
from abc import abstractmethod
from typing import Any

from assay.kernel.log import get_logger
from assay.kernel.sandbox.errors import (
    SANDBOX_EXEC_FAILED,
    SANDBOX_TIMEOUT,
    SandboxError,
)
from assay.kernel.sandbox.results import ExecutionResult, FileInfo, OutputCapture, ProducedFile
from assay.kernel.sandbox.runtime import ExecRequest, RuntimeSession

from . import gvisor, oom
from .channel import Channel
from .container_files import file_archive, file_result, tar_one
from .launcher import (
    FILES_SOURCE,
    PYTHON_ISOLATED,
    exit_status_for,
    files_argv,
    helper_env,
    launcher_argv,
    split_nonce,
    split_trailer,
)
from .resident import kill_all_argv, starter_argv
from .spec import LANGUAGES, ContainerSpec, normalize_language
from .stream import ExecStream, Pump

log = get_logger("assay.sandbox")

# Code longer than this goes in as a file instead of an argument (Linux caps
# one argument at 128 KiB).
MAX_INLINE_CODE = 96 * 1024
# Room for the launcher's trailer (it lists produced files) beyond the stderr cap.
TRAILER_ROOM = 256 * 1024
HELPER_TIMEOUT_S = 30.0
# Seconds a stream may take to end once the host closed it; past them it is abandoned.
STREAM_CLOSE_GRACE_S = 5.0
# How long a hard reset may take before the call gives up on the container
# running again (it says so in its warnings; the next call then fails clearly).
RESET_DEADLINE_S = 30.0

__all__ = ["ContainerSession", "ExecStream", "FILES_SOURCE"]

# Run as the code's uid: kill(-1) reaches every process that uid owns except
# this one and the namespace's init; the keeper (another uid) is untouched.
_KILL_ALL = "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n"


class ContainerSession(RuntimeSession):
    """A long-lived hardened container; each execution is a fresh process in it."""

    spec: ContainerSpec

    def __init__(
        self, runtime: str, spec: ContainerSpec, container_id: str, *, host_grace: float = 5.0
    ) -> None:
        self.runtime = runtime
        self.host_grace = host_grace
        self.spec = spec
        self.id = container_id
        self._destroyed = False
        self._killing = threading.Event()
        self._reset_failed = False
        self._oom_file: str | None = (
            None  # the host path of the container's OOM counter ("": unknown)
        )

    # --- engine primitives -------------------------------------------------

    @abstractmethod
    def _exec(self, argv: list[str], *, user: str, workdir: str, env: dict[str, str]) -> ExecStream:
        """Start ``argv`` in the container (no TTY, no stdin) and stream its output."""

    @abstractmethod
    def _put_archive(self, directory: str, data: bytes) -> None:
        """Extract the tar ``data`` into ``directory`` inside the container."""

    @abstractmethod
    def _hard_reset(self) -> None:
        """Kill every process in the container and start it again (tmpfs contents are lost)."""

    @abstractmethod
    def _remove(self) -> None:
        """Force-remove the container."""

    # --- execution ---------------------------------------------------------

    def execute(self, request: ExecRequest) -> ExecutionResult:
        lang = normalize_language(request.language)
        program = self._program(lang, request.code)
        env = {**self.spec.environment, **request.env}
        argv = launcher_argv(
            request.timeout_s + request.grace_s,
            request.stdout_limit,
            request.stderr_limit,
            self.spec.workdir,
            program,
            code_path=env.get("PATH") or self.spec.environment.get("PATH", ""),
        )
        out = OutputCapture(request.stdout_limit)
        err = OutputCapture(request.stderr_limit + TRAILER_ROOM, tail=TRAILER_ROOM)
        host_deadline_hit = threading.Event()
        oom_before = self._oom_kills()
        started = time.perf_counter()
        try:
            stream = self._exec(
                argv, user=self.spec.exec_user, workdir=self.spec.workdir, env=helper_env(env)
            )
        except SandboxError:
            raise
        except Exception as exc:  # noqa: BLE001 - engine errors become one code
            raise SandboxError(
                SANDBOX_EXEC_FAILED,
                f"{self.runtime}: could not start the execution: {exc}",
                "The sandbox may have been removed; open a new session.",
            ) from None

        reset_done = threading.Event()
        pump = Pump(stream, out, err, flood_stop=True)
        pump.start()
        abandoned = False
        if not self._wait_or_stopped(pump, request.timeout_s + request.grace_s + self.host_grace):
            # The in-container timer should have fired long ago: the launcher was
            # killed, stopped or starved. Kill the code's processes from outside;
            # if even that cannot run, kill and restart the whole container.
            host_deadline_hit.set()
            log.warning("sandbox_host_deadline", runtime=self.runtime, container=self.id[:12])
            if not self._kill_code_processes():
                reset_done.set()
                self._kill_quietly()
            stream.close()
            if not pump.wait(STREAM_CLOSE_GRACE_S):
                # The engine did not end the stream: do not wait for it any longer.
                pump.abandoned = abandoned = True
                log.warning(
                    "sandbox_stream_abandoned", runtime=self.runtime, container=self.id[:12]
                )
                if not reset_done.is_set():
                    reset_done.set()
                    self._kill_quietly()
        elif pump.flooded:
            # Far more output than the launcher ever forwards: something writes into the engine's
            # stream past the caps. Stop reading (draining it costs the host's CPU, not the
            # sandbox's) and end the code's processes.
            log.warning(
                "sandbox_output_flood",
                runtime=self.runtime,
                container=self.id[:12],
                stdout=out.total,
                stderr=err.total,
            )
            stream.close()
            if not self._kill_code_processes():
                reset_done.set()
                self._kill_quietly()
        trailer = None
        mismatch = False
        stderr_bytes = b""
        engine_code = None
        oom_after = None
        try:
            if pump.error is not None and not pump.flooded:
                raise pump.error
            stderr_bytes, nonce = split_nonce(err.getvalue())
            if nonce is not None and not pump.flooded:
                stderr_bytes, trailer = split_trailer(stderr_bytes, nonce)
                if trailer is None and err.truncated:
                    _, trailer = split_trailer(err.tail(), nonce)
            if trailer is None:
                oom_after = (
                    self._oom_kills()
                )  # at once: under gVisor the stopped sandbox's cgroup goes soon
            # The engine's own exit status for the exec, checked against the trailer's: code that
            # killed its launcher after writing a trailer in its name leaves a status that does not match.
            if not host_deadline_hit.is_set() and not pump.flooded:
                engine_code = stream.exit_code()
                if engine_code is None and trailer is not None:
                    engine_code = (
                        stream.exit_code()
                    )  # not recorded yet (a busy engine): ask once more
        except Exception as exc:  # noqa: BLE001
            if not host_deadline_hit.is_set() and not self._destroyed:
                raise SandboxError(
                    SANDBOX_EXEC_FAILED, f"{self.runtime}: the execution stream failed: {exc}"
                ) from None
            stderr_bytes = err.getvalue()
        finally:
            stream.close()
        if abandoned:
            trailer = None  # whatever arrives late is not trusted
        if trailer is not None and engine_code != exit_status_for(trailer):
            log.warning(
                "sandbox_trailer_mismatch",
                runtime=self.runtime,
                container=self.id[:12],
                trailer=trailer.exit_code,
                engine=engine_code,
            )
            trailer, mismatch = None, True
            oom_after = self._oom_kills()
        oom_seen: bool | None = None
        if trailer is None:
            oom_seen = None if oom_before is None or oom_after is None else oom_after > oom_before
        exit_code = None if host_deadline_hit.is_set() or pump.flooded else engine_code
        duration_ms = (time.perf_counter() - started) * 1000
        warnings: list[str] = []
        lost_memory = False
        if host_deadline_hit.is_set():
            if reset_done.is_set() and self._reset_failed:
                warnings.append(
                    "the in-sandbox timer did not end the work; the host killed the sandbox but it did not "
                    f"run again within {RESET_DEADLINE_S:.0f} s (open a new session)"
                )
            elif reset_done.is_set():
                warnings.append(
                    "the in-sandbox timer did not end the work; the host killed and restarted the sandbox "
                    f"(its {self.spec.workdir} was reset)"
                )
            else:
                warnings.append("the in-sandbox timer did not end the work; the host killed it")
        elif pump.flooded:
            warnings.append(
                f"the execution's output went far past its cap ({out.total + err.total} bytes read); the host "
                "stopped reading it and killed the code's processes" + self._reset_note(reset_done)
            )
        elif trailer is None and self._destroyed:
            warnings.append("the sandbox was closed during the execution")
        elif trailer is None and self._stopped():
            # The whole sandbox stopped. Under gVisor the memory limit covers gVisor's own kernel,
            # and exceeding it gets that kernel killed, not one process: the engine then reports
            # 128 (podman) or 137 (Docker) for the exec. The cgroup's OOM counter says which it was;
            # when it could not be read, gVisor's sandbox SIGKILLed (137) is taken for it.
            stopped_by_memory = bool(oom_seen) or (
                oom_seen is None
                and gvisor.is_gvisor(self.spec.oci_runtime)
                and _exit_status(self) == 137
            )
            lost_memory = stopped_by_memory
            if stopped_by_memory:
                exit_code = 137  # SIGKILLed for memory, whatever status the engine gave the exec
            self._kill_quietly()
            warnings.append(
                (
                    "the sandbox exceeded its memory limit and was stopped (under gVisor the limit covers the "
                    "whole sandbox); "
                    if stopped_by_memory
                    else "the sandbox stopped during the execution; "
                )
                + (
                    f"it was restarted (its {self.spec.workdir} was reset)"
                    if not self._reset_failed
                    else "it did not run again (open a new session)"
                )
            )
        elif trailer is None:
            # The launcher died (or was bypassed, or its report did not hold): the code's processes may
            # live on. Kill them; if even that cannot run (a sandbox still out of memory), restart it.
            if not self._kill_code_processes():
                reset_done.set()
                self._kill_quietly()
            if oom_seen:
                lost_memory = True
                exit_code = 137
                warnings.append(
                    "the sandbox ran out of memory and its launcher was killed (memory the code held "
                    "without owning it, such as files in its tmpfs or kernel buffers); the code's "
                    "processes were killed" + self._reset_note(reset_done)
                )
            elif mismatch:
                warnings.append(
                    "the sandbox launcher's report did not match the engine's exit status "
                    f"({engine_code}), so it was not used; the code's processes were killed"
                    + self._reset_note(reset_done)
                )
            else:
                warnings.append(
                    "the sandbox launcher did not report (it was killed or bypassed); "
                    "the code's processes were killed"
                    + self._reset_note(reset_done)
                    + (
                        ""
                        if oom_seen is not None
                        else "; whether memory ran out is unknown (the host cannot read the sandbox's cgroup)"
                    )
                )
        workdir = self.spec.workdir.rstrip("/") + "/"
        result = ExecutionResult(
            exit_code=exit_code if trailer is None else trailer.exit_code,
            stdout=out.text(),
            stderr=stderr_bytes[: request.stderr_limit].decode("utf-8", errors="replace"),
            stdout_truncated=out.truncated or bool(trailer and trailer.stdout_truncated),
            stderr_truncated=len(stderr_bytes) > request.stderr_limit
            or bool(trailer and trailer.stderr_truncated)
            or (trailer is None and err.truncated),
            timed_out=host_deadline_hit.is_set() or bool(trailer and trailer.timed_out),
            oom_killed=bool(trailer and trailer.oom_killed) or lost_memory,
            duration_ms=round(duration_ms, 3),
            files=[
                ProducedFile(path=p, size=s, modified=m)
                for p, s, m in (trailer.files if trailer else [])
                if isinstance(p, str) and p.startswith(workdir) and posixpath.normpath(p) == p
            ],
            isolated=True,
            runtime=self.runtime,
            language=lang,
            warnings=warnings,
        )
        if result.timed_out:
            result.exit_code = None if host_deadline_hit.is_set() else result.exit_code
        return result

    def _reset_note(self, reset_done: threading.Event) -> str:
        """What a warning adds when the kill could not run and the sandbox was restarted instead."""
        if not reset_done.is_set():
            return ""
        if self._reset_failed:
            return "; that kill could not run, and the sandbox did not run again after a restart (open a new session)"
        return f"; that kill could not run, so the sandbox was restarted (its {self.spec.workdir} was reset)"

    def _oom_kills(self) -> int | None:
        """The container's OOM-kill count, read on the host (None when unknown; see oom.py)."""
        if self._oom_file is None:
            self._oom_file = oom.counter_file(self.inspect) or ""
        return oom.read_kills(self._oom_file)

    def _stopped(self) -> bool:
        """Whether the container itself is no longer running. Under gVisor the engine may still
        say "running" for a moment after the sandbox's kernel was killed: asked for up to 2 s there."""
        tries = 10 if gvisor.is_gvisor(self.spec.oci_runtime) else 1
        for attempt in range(tries):
            if not self.alive():
                return True
            if attempt + 1 < tries:
                time.sleep(0.2)
        return False

    def _wait_or_stopped(self, pump: Pump, total_s: float) -> bool:
        """Wait for the execution's stream; True when it ended (or the whole sandbox stopped).

        Under gVisor a sandbox that exceeds its memory limit stops as a whole, and the
        Docker Engine then leaves the exec's stream open: the engine's state is asked
        every half second there, so that is seen at once and not at the host deadline.
        """
        if not gvisor.is_gvisor(self.spec.oci_runtime):
            return pump.wait(total_s)
        end = time.monotonic() + total_s
        while time.monotonic() < end:
            if pump.wait(min(0.5, max(0.0, end - time.monotonic()))):
                return True
            if not self.alive():
                return True
        return pump.wait(0)

    def _program(self, lang: str, code: str) -> list[str]:
        # Python runs inside the launcher's forked child ("@python"): one interpreter
        # start per execution instead of two. Other languages are exec'd.
        inline = len(code.encode("utf-8")) <= MAX_INLINE_CODE
        if inline:
            return ["@python", code] if lang == "python" else [*LANGUAGES[lang], code]
        path = f"/tmp/.assay-code-{secrets.token_hex(8)}"
        self._put_archive(
            "/tmp",
            tar_one(posixpath.basename(path), code.encode("utf-8"), self.spec.exec_user, 0o444),
        )
        return ["@python-file", path] if lang == "python" else [LANGUAGES[lang][0], path]

    def _kill_quietly(self) -> None:
        if self._killing.is_set():
            return
        self._killing.set()
        try:
            self._reset_failed = not self._reset_and_wait()
        finally:
            self._killing.clear()

    def _reset_and_wait(self, deadline_s: float = RESET_DEADLINE_S) -> bool:
        """Hard-reset the container and return only once the engine says it runs again.

        Engines return from ``start`` (and docker's ``wait``) before the container
        is really back, so without this the next call could fail at once. A reset
        whose container does not come back in time is tried again, until ``deadline_s``.
        Only the engine's own state is asked (no exec): an engine whose exec streams
        never end must not hold the call past its deadlines.
        """
        deadline = time.monotonic() + deadline_s
        while not self._destroyed:
            try:
                self._hard_reset()
            except Exception as exc:  # noqa: BLE001
                log.warning(
                    "sandbox_reset_attempt_failed",
                    runtime=self.runtime,
                    container=self.id[:12],
                    error=repr(exc),
                )
            attempt_ends = min(deadline, time.monotonic() + 10.0)
            while time.monotonic() < attempt_ends and not self._destroyed:
                if self.alive():
                    return True
                time.sleep(0.05)
            if time.monotonic() >= deadline:
                break
        log.error(
            "sandbox_reset_failed",
            runtime=self.runtime,
            container=self.id[:12],
            error=f"not running again within {deadline_s:.0f} s",
        )
        return False

    def _kill_code_processes(self) -> bool:
        """SIGKILL every process of the code's uid (the keeper runs as another uid).

        Returns False when the kill could not be run (e.g. the engine is wedged).
        """
        try:
            code, _, _, _ = self._run_helper(
                [*PYTHON_ISOLATED, "-c", _KILL_ALL], 4096, timeout_s=10.0
            )
        except Exception as exc:  # noqa: BLE001
            log.warning(
                "sandbox_kill_failed", runtime=self.runtime, container=self.id[:12], error=repr(exc)
            )
            return False
        return code == 0

    # --- the resident process (see resident.py) ----------------------------------

    supports_resident = True

    def start_resident(self, program: str, env: dict[str, str], ready_timeout_s: float) -> str:
        """Start ``program`` as the session's resident (its own uid); its ready line, or raise."""
        merged = {**self.spec.environment, **env}
        code_path = merged.get("PATH") or self.spec.environment.get("PATH", "")
        code, out, err, _ = self._run_helper(
            starter_argv(program, ready_timeout_s, code_path),
            64 * 1024,
            timeout_s=ready_timeout_s + HELPER_TIMEOUT_S,
            user=self.spec.resident_user,
            env=merged,
        )
        line = out.decode("utf-8", "replace").strip()
        if code != 0 or not line:
            raise SandboxError(
                SANDBOX_EXEC_FAILED,
                "the resident process did not start "
                f"(exit {code}): {err.decode('utf-8', 'replace')[-500:]}",
            )
        return line

    def stop_resident(self) -> bool:
        """SIGKILL every process of the resident's uid (the resident and what it started).

        When that kill cannot run - the pids limit is exhausted by the resident's processes, so
        not even the helper starts - the container is hard-reset, as the launcher path does
        (every process ends; the working directory is reset). True when the resident is gone.
        """
        try:
            code, _, err, _ = self._run_helper(
                kill_all_argv(), 4096, timeout_s=10.0, user=self.spec.resident_user
            )
            problem = None if code == 0 else f"exit {code}: {err[-300:].decode('utf-8', 'replace')}"
        except Exception as exc:  # noqa: BLE001
            problem = repr(exc)
        if problem is None:
            return True
        log.warning(
            "sandbox_resident_kill_failed",
            runtime=self.runtime,
            container=self.id[:12],
            error=problem,
        )
        self._kill_quietly()
        return not self._reset_failed

    def _exec_attached(
        self, argv: list[str], *, user: str, workdir: str, env: dict[str, str]
    ) -> tuple[Any, bytes]:
        """Start ``argv`` with stdin attached: (raw socket, bytes already read). Optional primitive."""
        raise NotImplementedError

    def open_channel(self, program: str, args: list[str], on_use: Any = None) -> Channel:
        """Run ``program`` (Python, assay's own) as the keeper's uid with stdin attached (see channel.py)."""
        try:
            sock, prefix = self._exec_attached(
                [*PYTHON_ISOLATED, "-c", program, *args],
                user=self.spec.user,
                workdir=self.spec.workdir,
                env=helper_env(self.spec.environment),
            )
        except NotImplementedError:
            raise SandboxError(
                SANDBOX_EXEC_FAILED, f"{self.runtime}: no attached execs here"
            ) from None
        except SandboxError:
            raise
        except Exception as exc:  # noqa: BLE001 - engine errors become one code
            raise SandboxError(
                SANDBOX_EXEC_FAILED, f"{self.runtime}: could not open a channel: {exc}"
            ) from None
        return Channel(sock, prefix, on_use)

    # --- helpers that run without the launcher --------------------------------

    def _run_helper(
        self,
        argv: list[str],
        out_limit: int,
        *,
        timeout_s: float | None = None,
        user: str | None = None,
        env: dict[str, str] | None = None,
    ) -> tuple[int | None, bytes, bytes, bool]:
        timeout_s = HELPER_TIMEOUT_S if timeout_s is None else timeout_s
        out = OutputCapture(out_limit)
        err = OutputCapture(64 * 1024)
        stream = self._exec(
            argv,
            user=user or self.spec.exec_user,
            workdir=self.spec.workdir,
            env=helper_env(self.spec.environment if env is None else env),
        )
        pump = Pump(stream, out, err)
        pump.start()
        # The deadline holds whatever the container does: the caller waits for the
        # reading thread, never for the engine's stream itself.
        expired = not pump.wait(timeout_s)
        try:
            if expired:
                stream.close()
                pump.abandoned = not pump.wait(STREAM_CLOSE_GRACE_S)
                code = None
            elif pump.error is not None:
                raise pump.error
            else:
                code = stream.exit_code()
        finally:
            stream.close()
        if expired:
            raise SandboxError(
                SANDBOX_TIMEOUT,
                f"a sandbox file operation took longer than {timeout_s:.0f} s",
                "The sandbox may be overloaded; try again or open a new session.",
            )
        return code, out.getvalue(), err.getvalue(), out.truncated

    # --- files -----------------------------------------------------------------

    def put_file(self, path: str, data: bytes, *, read_only: bool = False) -> None:
        # Read-only files belong to the keeper's uid (podman chowns every copied file
        # to the container's user anyway): the code can read them but, in the sticky
        # working directory, can neither change nor replace them. Writable uploads
        # are mode 0666 so the code may change them whoever owns them.
        owner = self.spec.user if read_only else self.spec.exec_user
        archive = file_archive(self.spec.workdir, path, data, owner, self.spec.user, read_only)
        self._put_archive(self.spec.workdir, archive)

    def get_file(self, path: str, max_bytes: int) -> bytes:
        code, out, err, truncated = self._run_helper(
            files_argv("get", self.spec.workdir, path, str(max_bytes)), max_bytes + 1
        )
        return file_result(path, code, out, err, truncated, max_bytes)

    def list_files(self, path: str) -> list[FileInfo]:
        code, out, err, _ = self._run_helper(
            files_argv("list", self.spec.workdir, path), 8 * 1024**2
        )
        file_result(path, code, b"", err, False, 0)
        return [
            FileInfo(path=p, name=n, size=s, is_dir=d, modified=m)
            for p, n, s, d, m in json.loads(out or b"[]")
        ]

    # --- life cycle ---------------------------------------------------------------

    def destroy(self) -> None:
        if self._destroyed:
            return
        self._destroyed = True
        try:
            self._remove()
        except Exception as exc:  # noqa: BLE001 - destroy never raises; the reaper retries
            log.warning(
                "sandbox_remove_failed",
                runtime=self.runtime,
                container=self.id[:12],
                error=repr(exc),
            )


def _exit_status(session: ContainerSession) -> int | None:
    """The stopped container's exit code from the engine's inspect record (None when unknown)."""
    try:
        return (session.inspect().get("State") or {}).get("ExitCode")
    except Exception:  # noqa: BLE001
        return None
