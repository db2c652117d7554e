"""The nerdctl sandbox runtime: containerd through the nerdctl command line.

Every call is an argv list run without a shell (``subprocess`` with
``shell=False``), so no value from a spec or from code can be interpreted
by one. The binary is ``SANDBOX_NERDCTL_BINARY`` (default ``nerdctl``); a
namespace is passed with ``--namespace`` only when ``SANDBOX_NERDCTL_NAMESPACE``
is set. The CLI follows docker's flags, so the same driver also runs
against podman's or docker's CLI (that is how it is tested here, with
``SANDBOX_NERDCTL_BINARY=podman``); the few flags that differ between those
CLIs are chosen from the binary's ``--version`` line.

The probe is real: ``version`` must answer, and for nerdctl include
containerd's part (the server), not merely the binary exist; ``doctor`` adds
``info`` (OCI runtime, cgroup version).

Timeouts: the in-container launcher kills the code at its limit; if the
client is still attached past the host deadline the session kills the
client process *and* hard-resets the container (``kill -s KILL`` then
``start``), so the work is gone, not merely unawaited.
"""

from __future__ import annotations

import io
import json
import os
import selectors
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from assay.kernel.log import get_logger
from assay.kernel.sandbox.errors import (
    SANDBOX_EXEC_FAILED,
    SANDBOX_IMAGE_MISSING,
    SANDBOX_START_FAILED,
)
from assay.plugins.sandbox import (
    ContainerSession,
    ContainerSpec,
    ExecStream,
    ProbeResult,
    SandboxConfig,
    SandboxError,
    SandboxRuntime,
    datamounts,
    seccomp as seccomp_profile,
)
from assay.plugins.sandbox.labels import LABEL, RUNTIME, UID_BLOCK, orphan_reason, owned_by_me

log = get_logger("assay.sandbox.nerdctl")

# The engine's helpers (conmon under podman) may drop marker files such as an empty
# "oom" into the CLI's working directory; never let that be the user's project.
_CLI_CWD = tempfile.gettempdir()

# Seconds for management commands (run, rm, inspect, cp...).
CLI_TIMEOUT_S = 120.0
IMAGE_MISSING_MARKERS = (
    "image not known",
    "no such image",
    "not found",
    "failed to resolve",
    "pull access denied",
)
IMAGE_HINT = (
    "Build the image without a registry: `assay sandbox build-image` "
    "(scripts/build-sandbox-image.sh), or set SANDBOX_IMAGE_PYTHON to an image the engine has."
)


class CliError(Exception):
    def __init__(self, argv: list[str], returncode: int | None, stderr: str) -> None:
        self.returncode = returncode
        self.stderr = stderr
        shown = " ".join(argv[:3]) + (" ..." if len(argv) > 3 else "")
        super().__init__(f"`{shown}` failed ({returncode}): {' '.join(stderr.split())[:500]}")


class Cli:
    """The engine's command line: argv lists in, bytes out, never a shell."""

    def __init__(self, binary: str, namespace: str | None = None) -> None:
        self.binary = binary
        self.namespace = namespace
        self._dialect: str | None = None
        self.version_line = ""

    def argv(self, *args: str) -> list[str]:
        prefix = [self.binary]
        if self.namespace:
            prefix += ["--namespace", self.namespace]
        return [*prefix, *args]

    def run(self, *args: str, input: bytes | None = None, timeout: float = CLI_TIMEOUT_S) -> bytes:
        argv = self.argv(*args)
        try:
            done = subprocess.run(
                argv,
                input=input,
                capture_output=True,
                timeout=timeout,
                check=False,
                stdin=None if input is not None else subprocess.DEVNULL,
                cwd=_CLI_CWD,
            )
        except subprocess.TimeoutExpired as exc:
            raise CliError(argv, None, f"timed out after {timeout}s") from exc
        except OSError as exc:
            raise CliError(argv, None, str(exc)) from exc
        if done.returncode != 0:
            raise CliError(argv, done.returncode, done.stderr.decode(errors="replace"))
        return done.stdout

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            self.argv(*args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            cwd=_CLI_CWD,
        )

    def dialect(self, timeout: float = CLI_TIMEOUT_S) -> str:
        """``nerdctl``, ``podman`` or ``docker``, from ``BINARY --version`` (client only, cached)."""
        if self._dialect is None:
            try:
                done = subprocess.run(
                    [self.binary, "--version"],
                    capture_output=True,
                    timeout=timeout,
                    stdin=subprocess.DEVNULL,
                    check=False,
                )
                line = (
                    done.stdout.decode(errors="replace").strip().splitlines()[0]
                    if done.stdout
                    else ""
                )
            except (OSError, subprocess.TimeoutExpired, IndexError):
                line = ""
            self.version_line = line
            low = line.lower()
            self._dialect = (
                "podman"
                if low.startswith("podman")
                else "docker"
                if low.startswith("docker")
                else "nerdctl"
            )
        return self._dialect


class _CliExecStream(ExecStream):
    """``exec``'s stdout/stderr pipes, read as they come."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self._proc = proc
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        sel = selectors.DefaultSelector()
        assert self._proc.stdout is not None and self._proc.stderr is not None
        sel.register(self._proc.stdout.fileno(), selectors.EVENT_READ, 1)
        sel.register(self._proc.stderr.fileno(), selectors.EVENT_READ, 2)
        try:
            while sel.get_map():
                for key, _ in sel.select(timeout=0.5):
                    try:
                        chunk = os.read(key.fd, 65536)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        sel.unregister(key.fd)
                        continue
                    yield key.data, chunk
                if self._closed.is_set() and self._proc.poll() is not None:
                    break
        finally:
            sel.close()

    def exit_code(self) -> int | None:
        try:
            return self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.close()
            return None

    def close(self) -> None:
        # Ends the client only; the session's hard reset ends the work itself.
        self._closed.set()
        if self._proc.poll() is None:
            try:
                self._proc.kill()
            except OSError:
                pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass


class NerdctlSession(ContainerSession):
    """A hardened container driven through the CLI."""

    def __init__(self, runtime: NerdctlRuntime, spec: ContainerSpec, container_id: str) -> None:
        super().__init__(runtime.name, spec, container_id, host_grace=runtime.config.host_grace)
        self._cli = runtime.cli

    def _exec(self, argv: list[str], *, user: str, workdir: str, env: dict[str, str]) -> ExecStream:
        args = ["exec", "--user", user, "--workdir", workdir]
        for key, value in env.items():
            args += ["--env", f"{key}={value}"]
        try:
            proc = self._cli.popen(*args, self.id, *argv)
        except OSError as exc:
            raise SandboxError(
                SANDBOX_EXEC_FAILED, f"nerdctl: cannot run {self._cli.binary}: {exc}"
            ) from None
        return _CliExecStream(proc)

    def _put_archive(self, directory: str, data: bytes) -> None:
        dialect = self._cli.dialect()
        # Keep the owners written in the archive: podman would otherwise chown
        # to the container's user, docker to root.
        flags = {"podman": ["--archive=false"], "docker": ["--archive"]}.get(dialect, [])
        try:
            self._cli.run("cp", *flags, "-", f"{self.id}:{directory}", input=data)
            return
        except CliError as exc:
            if dialect != "nerdctl":
                raise SandboxError(
                    SANDBOX_EXEC_FAILED, f"nerdctl: copy into {directory} failed: {exc}"
                ) from None
            first_error = exc
        # nerdctl before 2.2 cannot read an archive from stdin: unpack it in a
        # private host directory and copy that (nerdctl cp keeps owners).
        with tempfile.TemporaryDirectory(prefix="assay-cp-") as tmp:
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(tmp, numeric_owner=True, filter="tar")
            try:
                self._cli.run("cp", f"{tmp}/.", f"{self.id}:{directory}")
            except CliError as exc:
                raise SandboxError(
                    SANDBOX_EXEC_FAILED,
                    f"nerdctl: copy into {directory} failed: {first_error}; then {exc}",
                ) from None

    def _hard_reset(self) -> None:
        try:
            self._cli.run("kill", "-s", "KILL", self.id, timeout=30)
        except CliError as exc:  # already stopped is fine
            log.info("sandbox_kill_ignored", container=self.id[:12], error=str(exc))
        self._cli.run("start", self.id, timeout=60)

    def _remove(self) -> None:
        self._cli.run("rm", "-f", self.id, timeout=60)

    def alive(self) -> bool:
        try:
            return bool(self.inspect().get("State", {}).get("Running"))
        except Exception:  # noqa: BLE001
            return False

    def inspect(self) -> dict[str, Any]:
        data = json.loads(self._cli.run("container", "inspect", self.id) or b"[]")
        return data[0] if data else {}


class NerdctlRuntime(SandboxRuntime):
    """Containers through the nerdctl CLI (or another docker-compatible CLI)."""

    name = "nerdctl"
    isolated = True
    description = (
        "containerd via the nerdctl CLI (SANDBOX_NERDCTL_BINARY, SANDBOX_NERDCTL_NAMESPACE)"
    )

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config)
        self.cli = Cli(config.nerdctl_binary, config.nerdctl_namespace)

    def probe(self) -> ProbeResult:
        """``version`` must answer; for nerdctl that includes containerd's (the server's) part."""
        base: dict[str, Any] = dict(runtime=self.name, isolated=True, endpoint=self.cli.binary)
        if shutil.which(self.cli.binary) is None:
            return ProbeResult(
                **base, available=False, detail=f"{self.cli.binary!r} was not found on PATH"
            )
        timeout = self.config.probe_timeout
        try:
            dialect = self.cli.dialect(timeout)
            version = _json_object(
                self.cli.run("version", "--format", "{{json .}}", timeout=timeout)
            )
        except (CliError, ValueError) as exc:
            return ProbeResult(
                **base, available=False, detail=f"{self.cli.binary} version did not answer: {exc}"
            )
        if dialect == "nerdctl" and not version.get("Server"):
            return ProbeResult(
                **base,
                available=False,
                detail=f"{self.cli.binary} answered but containerd did not (no server version)",
            )
        return ProbeResult(
            **base,
            available=True,
            version=self.cli.version_line.split()[-1] if self.cli.version_line else None,
            detail=f"{self.cli.version_line or self.cli.binary} ({dialect} CLI)",
            info={"dialect": dialect, "namespace": self.cli.namespace},
        )

    def doctor(self) -> ProbeResult:
        probe = self.probe()
        if not probe.available:
            return probe
        try:
            parsed = _parse_info(_json_object(self.cli.run("info", "--format", "{{json .}}")))
        except (CliError, ValueError) as exc:
            probe.info["error"] = f"{self.cli.binary} info failed: {exc}"
            return probe
        probe.oci_runtime = parsed["oci_runtime"]
        probe.oci_runtimes = parsed["oci_runtimes"]
        probe.cgroup_version = parsed["cgroup_version"]
        probe.info.update(parsed["extra"])
        return probe

    def run_args(self, spec: ContainerSpec) -> list[str]:
        """The full ``run`` argv after the binary (public for tests)."""
        args = ["run", "--detach", "--pull", "never", *spec.cli_run_args()]
        if self.cli.dialect() == "podman":
            # podman mounts writable tmpfs on /run and /var/tmp in read-only
            # containers by default; the spec allows none beyond its own.
            args.insert(1, "--read-only-tmpfs=false")
        return [*args, spec.image, *spec.command]

    def create_session(self, spec: ContainerSpec) -> NerdctlSession:
        spec.check()
        try:
            out = self.cli.run(*self.run_args(spec))
        except CliError as exc:
            self._remove_quietly(spec.name)
            low = exc.stderr.lower()
            if any(
                marker in low for marker in IMAGE_MISSING_MARKERS
            ) and spec.image.lower() in low.replace('"', ""):
                raise SandboxError(
                    SANDBOX_IMAGE_MISSING,
                    f"nerdctl: image {spec.image!r} is not present: {exc}",
                    IMAGE_HINT,
                ) from None
            raise SandboxError(
                SANDBOX_START_FAILED,
                f"nerdctl: could not start the sandbox: {exc}",
                "Run `assay sandbox doctor` to check the engine.",
            ) from None
        container_id = out.decode().strip().splitlines()[-1] if out.strip() else spec.name
        self._require_seccomp(container_id, spec)
        log.debug("sandbox_container_started", runtime=self.name, container=container_id[:12])
        return NerdctlSession(self, spec, container_id)

    def _require_seccomp(self, container_id: str, spec: ContainerSpec) -> None:
        """Refuse (remove) a container that does not carry assay's seccomp profile, or that has any
        mount but the spec's read-only data files, before any code runs.

        The keeper is the only process so far. nerdctl's own inspect does not
        show security options; there the profile is passed but cannot be read back.
        """
        try:
            info = json.loads(self.cli.run("container", "inspect", container_id) or b"[]")
            mounts = datamounts.inspect_problems(spec.data_files, info[0] if info else {})
            if mounts:
                self._remove_quietly(container_id)
                raise SandboxError(
                    SANDBOX_START_FAILED,
                    "nerdctl: the sandbox's mounts are not the spec's: " + "; ".join(mounts),
                    "Check the engine's version and settings (assay sandbox doctor).",
                )
            opts = ((info[0] if info else {}).get("HostConfig") or {}).get("SecurityOpt")
        except (CliError, ValueError) as exc:
            self._remove_quietly(container_id)
            raise SandboxError(
                SANDBOX_START_FAILED, f"nerdctl: the sandbox could not be inspected: {exc}"
            ) from None
        if opts is None and self.cli.dialect() == "nerdctl":
            return
        if not seccomp_profile.applied(opts):
            self._remove_quietly(container_id)
            raise SandboxError(
                SANDBOX_START_FAILED,
                "nerdctl: the engine did not apply assay's seccomp profile",
                "Check the engine's version and settings (assay sandbox doctor).",
            )

    def _remove_quietly(self, ref: str) -> None:
        try:
            self.cli.run("rm", "-f", ref, timeout=60)
        except CliError:
            pass

    def _labelled(self) -> list[tuple[str, dict[str, str]]]:
        ids = (
            self.cli.run("ps", "-a", "-q", "--no-trunc", "--filter", f"label={LABEL}=1")
            .decode()
            .split()
        )
        if not ids:
            return []
        try:
            data = json.loads(self.cli.run("container", "inspect", *ids) or b"[]")
        except CliError:
            # One of them vanished between ps and inspect: ask one by one.
            data = []
            for cid in ids:
                try:
                    data += json.loads(self.cli.run("container", "inspect", cid) or b"[]")
                except CliError:
                    continue
        return [(d.get("Id", ""), (d.get("Config") or {}).get("Labels") or {}) for d in data]

    def uid_block_holders(self, block: str) -> list[str]:
        return (
            self.cli.run("ps", "-a", "-q", "--no-trunc", "--filter", f"label={UID_BLOCK}={block}")
            .decode()
            .split()
        )

    def reap(self, *, only_mine: bool = False) -> list[str]:
        try:
            found = self._labelled()
        except CliError as exc:
            log.warning("sandbox_reap_failed", runtime=self.name, error=str(exc))
            return []
        removed = []
        for container_id, labels in found:
            if only_mine:
                reason = (
                    "owner exiting"
                    if owned_by_me(labels) and labels.get(RUNTIME) == self.name
                    else None
                )
            else:
                reason = orphan_reason(labels)
            if not reason:
                continue
            try:
                self.cli.run("rm", "-f", container_id, timeout=60)
            except CliError as exc:
                log.warning(
                    "sandbox_reap_remove_failed", container=container_id[:12], error=str(exc)
                )
                continue
            log.info(
                "sandbox_reaped", runtime=self.name, container=container_id[:12], reason=reason
            )
            removed.append(container_id)
        return removed

    def image_present(self, image: str) -> bool | None:
        try:
            self.cli.run("image", "inspect", image, timeout=30)
            return True
        except CliError as exc:
            # A CLI that answered "no" has no such image; one that never answered cannot tell.
            return False if exc.returncode is not None else None

    def enforced_limits(self) -> dict[str, bool | str]:
        try:
            info = _parse_info(_json_object(self.cli.run("info", "--format", "{{json .}}")))
        except (CliError, ValueError, IndexError) as exc:
            return {"error": str(exc)}
        extra = info["extra"]
        return {
            "network none": True,
            "memory (swap = memory)": extra.get("memory_limit", "unknown"),
            "cpu quota": extra.get("cpu_cfs_quota", "unknown"),
            "pids limit": extra.get("pids_limit", "unknown"),
            "capabilities dropped": True,
            "no-new-privileges": True,
            "read-only root + sized tmpfs": True,
            "file-size ulimit": True,
            "seccomp (assay profile)": extra.get("seccomp", "unknown"),
            "gVisor (runsc)": "configured (opt-in: SANDBOX_OCI_RUNTIME=runsc)"
            if "runsc" in info["oci_runtimes"]
            else False,
        }


def _json_object(raw: bytes) -> dict[str, Any]:
    """One JSON object from a CLI (podman pretty-prints it over many lines)."""
    data = json.loads(raw.decode(errors="replace").strip() or "{}")
    if not isinstance(data, dict):
        raise ValueError("info is not a JSON object")
    return data


def _parse_info(info: dict[str, Any]) -> dict[str, Any]:
    """Docker-style ``info`` (nerdctl, docker) or podman's own shape, to common fields."""
    if "host" in info:  # podman
        host = info.get("host") or {}
        security = host.get("security") or {}
        oci = (host.get("ociRuntime") or {}).get("name")
        cgroup = host.get("cgroupVersion")
        return {
            "oci_runtime": oci,
            "oci_runtimes": [oci] if oci else [],
            "cgroup_version": {"v1": "1", "v2": "2"}.get(
                str(cgroup), str(cgroup) if cgroup else None
            ),
            "extra": {
                "engine": "podman",
                "seccomp": bool(security.get("seccompEnabled")),
                "cgroup_manager": host.get("cgroupManager"),
            },
        }
    security = " ".join(info.get("SecurityOptions") or [])
    return {
        "oci_runtime": info.get("DefaultRuntime"),
        "oci_runtimes": sorted((info.get("Runtimes") or {}).keys()),
        "cgroup_version": str(info["CgroupVersion"]) if info.get("CgroupVersion") else None,
        "extra": {
            "engine": "containerd"
            if "containerd" in json.dumps(info.get("Plugins", {})).lower()
            else "docker",
            "seccomp": "seccomp" in security,
            "memory_limit": bool(info.get("MemoryLimit")) and bool(info.get("SwapLimit")),
            "cpu_cfs_quota": bool(info.get("CpuCfsQuota")),
            "pids_limit": bool(info.get("PidsLimit")),
            "cgroup_driver": info.get("CgroupDriver"),
        },
    }
