"""The docker sandbox runtime: the Docker Engine API through the Docker SDK.

The engine is found at ``SANDBOX_DOCKER_HOST``, else ``DOCKER_HOST``, else
the SDK's default socket. The probe is real: ``/_ping`` then ``/version``
over that endpoint, within ``SANDBOX_PROBE_TIMEOUT``; ``doctor`` adds
``/info`` (OCI runtimes, cgroup version, which limits the engine supports).

Every container is created from the kernel's hardened
:class:`~kernel.sandbox.ContainerSpec` and nothing weaker: no network,
memory with swap equal to it, a CPU quota, a pids limit, all capabilities
dropped, no-new-privileges, a read-only root with size-limited tmpfs, a
file-size ulimit, non-root users, an init process, no host mounts, only the
spec's environment, assay's own seccomp profile (its text for Docker, its
path for podman's compatible API, which reads it from a file). Podman's
Docker-compatible API is supported as an engine (it is how this runtime is
tested): there, the extra writable tmpfs podman adds to read-only containers
(``/run``, ``/var/tmp``) are covered with empty read-only ones.

The ``docker`` package is imported only when the runtime is probed or used.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
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
    gvisor,
    seccomp as seccomp_profile,
)
from assay.plugins.sandbox.labels import LABEL, RUNTIME, UID_BLOCK, orphan_reason, owned_by_me
from assay.plugins.sandbox.spec import verify_inspect
from assay.plugins.sandbox.upload import put_by_exec

log = get_logger("assay.sandbox.docker")

# Timeout (s) of ordinary API calls (create, start, inspect...); an exec's
# output stream has no read timeout: the session's deadline closes it.
API_TIMEOUT_S = 120
API_VERSION = "1.41"
# Podman refuses to start a container whose RLIMIT_NPROC it cannot set when
# the API call brings its own ulimits (its configured defaults then do not
# apply); this value is what podman's documented defaults use.
DEFAULT_NPROC = 1024
# Writable tmpfs podman adds to every read-only container unless told not to;
# the Docker API cannot say "no", so they are covered with read-only ones.
PODMAN_READ_ONLY_TMPFS = ("/run", "/var/tmp")
IMAGE_HINT = (
    "Build the image without a registry: `assay sandbox build-image` "
    "(scripts/build-sandbox-image.sh), or set SANDBOX_IMAGE_PYTHON to an image the engine has."
)


def _short(exc: BaseException) -> str:
    text = str(getattr(exc, "explanation", None) or exc)
    return " ".join(text.split())[:500]


class _DockerExecStream(ExecStream):
    """One exec's multiplexed output read straight off the API socket."""

    def __init__(self, api: Any, exec_id: str, sock: Any) -> None:
        self._api = api
        self._exec_id = exec_id
        self._sock = sock
        # SocketIO wraps the real socket; shutting that down unblocks a reader.
        self._raw = getattr(sock, "_sock", sock)
        self._closed = threading.Event()
        try:
            self._raw.settimeout(None)
        except OSError:
            pass

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        from docker.utils.socket import frames_iter

        try:
            for fd, chunk in frames_iter(self._sock, False):
                if fd in (1, 2) and chunk:
                    yield fd, chunk
        except (OSError, ValueError):
            if not self._closed.is_set():
                raise

    def exit_code(self) -> int | None:
        # The stream ends a moment before the engine records the exit code.
        for _ in range(100):
            try:
                info = self._api.exec_inspect(self._exec_id)
            except Exception:  # noqa: BLE001 - the container may be gone already
                return None
            if not info.get("Running"):
                return info.get("ExitCode")
            time.sleep(0.01)
        return None

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            self._raw.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self._sock.close()
        except OSError:
            pass


class DockerSession(ContainerSession):
    """A hardened container on a Docker API engine."""

    def __init__(self, runtime: DockerRuntime, spec: ContainerSpec, container_id: str) -> None:
        super().__init__(runtime.name, spec, container_id, host_grace=runtime.config.host_grace)
        self._runtime = runtime

    @property
    def _api(self) -> Any:
        return self._runtime.api()

    def _exec(self, argv: list[str], *, user: str, workdir: str, env: dict[str, str]) -> ExecStream:
        created = self._api.exec_create(
            self.id,
            argv,
            stdout=True,
            stderr=True,
            stdin=False,
            tty=False,
            user=user,
            workdir=workdir,
            environment=dict(env),
        )
        sock = self._api.exec_start(created["Id"], socket=True)
        return _DockerExecStream(self._api, created["Id"], sock)

    def _exec_attached(
        self, argv: list[str], *, user: str, workdir: str, env: dict[str, str]
    ) -> tuple[Any, bytes]:
        created = self._api.exec_create(
            self.id,
            argv,
            stdout=True,
            stderr=True,
            stdin=True,
            tty=False,
            user=user,
            workdir=workdir,
            environment=dict(env),
        )
        sock = self._api.exec_start(created["Id"], socket=True)
        raw = getattr(sock, "_sock", sock)
        raw.settimeout(None)
        return raw, b""

    def _put_archive(self, directory: str, data: bytes) -> None:
        # The Docker Engine refuses archives into a read-only root (tmpfs targets too), and
        # under gVisor the tmpfs is out of any engine's reach: there the tar goes through an exec.
        if self._runtime.engine() != "podman" or gvisor.is_gvisor(self.spec.oci_runtime):
            put_by_exec(self, directory, data)
            return
        if not self._api.put_archive(self.id, directory, data):
            raise SandboxError(SANDBOX_EXEC_FAILED, f"docker: could not copy into {directory}")

    def _hard_reset(self) -> None:
        # SIGKILL every process (the init goes, and with it the whole pid
        # namespace), then start the container again with fresh tmpfs.
        try:
            self._api.kill(self.id, signal="SIGKILL")
        except Exception as exc:  # noqa: BLE001 - already stopped is fine
            log.info("sandbox_kill_ignored", container=self.id[:12], error=_short(exc))
        self._api.wait(self.id, timeout=30)
        self._api.start(self.id)

    def _remove(self) -> None:
        self._api.remove_container(self.id, force=True, v=True)

    def alive(self) -> bool:
        try:
            return bool(self._api.inspect_container(self.id)["State"]["Running"])
        except Exception:  # noqa: BLE001
            return False

    def inspect(self) -> dict[str, Any]:
        return self._api.inspect_container(self.id)


class DockerRuntime(SandboxRuntime):
    """Containers through the Docker Engine API (docker, or podman's compatible socket)."""

    name = "docker"
    isolated = True
    description = "Docker Engine API via the Docker SDK (SANDBOX_DOCKER_HOST / DOCKER_HOST)"

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config)
        self._api: Any = None
        self._lock = threading.Lock()
        self._engine: str | None = None  # "docker" or "podman", from /version

    # --- connection -------------------------------------------------------

    @property
    def endpoint(self) -> str:
        return (
            self.config.docker_host
            or os.environ.get("DOCKER_HOST")
            or "default (unix:///var/run/docker.sock)"
        )

    def api(self) -> Any:
        """The SDK's low-level client, created on first use (imports ``docker`` then)."""
        with self._lock:
            if self._api is None:
                import docker

                # A fixed API version spares a /version round trip per client;
                # 1.41 (Docker 20.10, podman 4) has everything used here.
                if self.config.docker_host:
                    client = docker.DockerClient(
                        base_url=self.config.docker_host, timeout=API_TIMEOUT_S, version=API_VERSION
                    )
                else:
                    client = docker.from_env(timeout=API_TIMEOUT_S, version=API_VERSION)
                self._api = client.api
            return self._api

    def engine(self) -> str:
        """``"podman"`` when the API is podman's compatibility layer, else ``"docker"``."""
        if self._engine is None:
            components = self.api().version().get("Components") or []
            names = " ".join(str(c.get("Name", "")) for c in components).lower()
            self._engine = "podman" if "podman" in names else "docker"
        return self._engine

    def probe(self) -> ProbeResult:
        """``/_ping`` then ``/version`` over the endpoint (``/info`` is left to :meth:`doctor`: slow on podman)."""
        base: dict[str, Any] = dict(runtime=self.name, isolated=True, endpoint=self.endpoint)
        try:
            import docker  # noqa: F401
        except ImportError:
            return ProbeResult(
                **base,
                available=False,
                detail="the Docker SDK is not installed (pip install 'assay[docker]')",
            )
        try:
            api = self.api()
            saved, api.timeout = api.timeout, self.config.probe_timeout
            try:
                if not api.ping():
                    return ProbeResult(
                        **base, available=False, detail=f"{self.endpoint}: ping did not answer OK"
                    )
                version = api.version()
            finally:
                api.timeout = saved
        except Exception as exc:  # noqa: BLE001 - any failure is "not available", with the reason
            self.close()
            return ProbeResult(
                **base,
                available=False,
                detail=f"docker API at {self.endpoint} did not answer: {_short(exc)}",
            )
        components = version.get("Components") or []
        self._engine = (
            "podman"
            if any("podman" in str(c.get("Name", "")).lower() for c in components)
            else "docker"
        )
        return ProbeResult(
            **base,
            available=True,
            version=str(version.get("Version")),
            detail=f"{self._engine} engine {version.get('Version')} (API {version.get('ApiVersion')})",
            info={"engine": self._engine},
        )

    def doctor(self) -> ProbeResult:
        probe = self.probe()
        if not probe.available:
            return probe
        try:
            info = self.api().info()
        except Exception as exc:  # noqa: BLE001
            probe.info["error"] = f"docker info failed: {_short(exc)}"
            return probe
        probe.oci_runtime = info.get("DefaultRuntime")
        # Only runtimes that exist: podman lists every one its configuration names, installed or not.
        probe.oci_runtimes = sorted(
            name
            for name, entry in (info.get("Runtimes") or {}).items()
            if self._runtime_missing(entry) is None
        )
        probe.cgroup_version = str(info.get("CgroupVersion")) if info.get("CgroupVersion") else None
        probe.info.update(
            {
                "os": info.get("OperatingSystem"),
                "security_options": info.get("SecurityOptions") or [],
                "memory_limit": info.get("MemoryLimit"),
                "swap_limit": info.get("SwapLimit"),
                "pids_limit": info.get("PidsLimit"),
                "cpu_cfs_quota": info.get("CpuCfsQuota"),
            }
        )
        return probe

    # --- sessions -----------------------------------------------------------

    def host_config_kwargs(self, spec: ContainerSpec) -> dict[str, Any]:
        """The spec in the SDK's ``create_host_config`` terms (public for tests)."""
        import docker

        ulimits = [docker.types.Ulimit(name=u.name, soft=u.soft, hard=u.hard) for u in spec.ulimits]
        if not any(u.name == "nproc" for u in spec.ulimits):
            ulimits.append(
                docker.types.Ulimit(name="nproc", soft=DEFAULT_NPROC, hard=DEFAULT_NPROC)
            )
        tmpfs = spec.tmpfs_map()
        if self.engine() == "podman":
            for target in PODMAN_READ_ONLY_TMPFS:
                tmpfs.setdefault(target, "ro,nosuid,nodev,noexec,size=4k,mode=755")
        kwargs: dict[str, Any] = dict(
            network_mode="none",
            mem_limit=spec.memory_bytes,
            memswap_limit=spec.memory_swap_bytes,
            cpu_period=spec.cpu_period_us,
            cpu_quota=spec.cpu_quota_us,
            pids_limit=spec.pids_limit,
            cap_drop=["ALL"],
            security_opt=[
                "no-new-privileges",
                seccomp_profile.security_opt(as_text=self.engine() != "podman"),
            ],
            read_only=True,
            privileged=False,
            tmpfs=tmpfs,
            shm_size=spec.shm_bytes,
            ulimits=ulimits,
            init=True,
            binds=[],
            auto_remove=False,
        )
        # Registered data files only (plugins/sandbox/datamounts.py), read-only. podman's API takes
        # nosuid,nodev,noexec in a bind's options; the Docker Engine's bind mounts take ReadOnly only.
        if spec.data_files and self.engine() == "podman":
            kwargs["binds"] = [
                f"{m.source}:{m.target}:{','.join(m.options)}"
                for m in datamounts.checked_for_binds(spec.data_files)
            ]
        elif spec.data_files:
            kwargs["mounts"] = [
                docker.types.Mount(
                    m.target, m.source, type="bind", read_only=True, propagation="rprivate"
                )
                for m in spec.data_files
            ]
        if spec.oci_runtime:
            kwargs["runtime"] = spec.oci_runtime
        return kwargs

    def create_session(self, spec: ContainerSpec) -> DockerSession:
        import docker

        spec.check()
        api = self.api()
        try:
            host_config = api.create_host_config(**self.host_config_kwargs(spec))
            created = api.create_container(
                spec.image,
                command=list(spec.command),
                name=spec.name,
                hostname=spec.hostname,
                user=spec.user,
                working_dir=spec.workdir,
                environment=dict(spec.environment),
                labels=dict(spec.labels),
                host_config=host_config,
                network_disabled=True,
                stdin_open=False,
                tty=False,
            )
        except docker.errors.ImageNotFound as exc:
            raise SandboxError(
                SANDBOX_IMAGE_MISSING,
                f"docker: image {spec.image!r} is not present: {_short(exc)}",
                IMAGE_HINT,
            ) from None
        except Exception as exc:  # noqa: BLE001
            self._remove_quietly(spec.name)
            raise SandboxError(
                SANDBOX_START_FAILED,
                f"docker: could not create the sandbox: {_short(exc)}",
                "Run `assay sandbox doctor` to check the engine.",
            ) from None
        container_id = created["Id"]
        self._require_spec_applied(container_id, spec)
        try:
            api.start(container_id)
        except Exception as exc:  # noqa: BLE001
            self._remove_quietly(container_id)
            raise SandboxError(
                SANDBOX_START_FAILED,
                f"docker: could not start the sandbox: {_short(exc)}",
                "Run `assay sandbox doctor` to check the engine.",
            ) from None
        log.debug("sandbox_container_started", runtime=self.name, container=container_id[:12])
        return DockerSession(self, spec, container_id)

    def _require_spec_applied(self, container_id: str, spec: ContainerSpec) -> None:
        """Refuse to start a container the engine did not create as ``spec`` asked (before any code runs).

        Engines drop settings silently: podman's Docker-compatible API accepts
        ``HostConfig.Runtime`` (e.g. gVisor) and ignores it; starting anyway
        would run the code without the isolation the operator opted into.
        """
        try:
            problems = verify_inspect(spec, self.api().inspect_container(container_id))
            if not problems and self.engine() == "podman":
                problems = [p for p in [self._podman_oci_seccomp_problem(container_id)] if p]
        except Exception as exc:  # noqa: BLE001 - a container we cannot check is not started
            problems = [f"it could not be inspected ({_short(exc)})"]
        if not problems:
            return
        self._remove_quietly(container_id)
        hint = "Check the engine's version and settings (assay sandbox doctor)."
        if any("OCI runtime" in p for p in problems):
            hint = (
                "This engine cannot select an OCI runtime through the Docker API (podman's compatible "
                "API ignores it); use SANDBOX_RUNTIME=podman, or unset SANDBOX_OCI_RUNTIME."
            )
        raise SandboxError(
            SANDBOX_START_FAILED,
            "docker: the engine did not apply the hardened spec: " + "; ".join(problems),
            hint,
        )

    def _podman_oci_seccomp_problem(self, container_id: str) -> str | None:
        """On podman, inspect only records the requested profile: initialise the container
        (nothing runs yet) through libpod's endpoint and check the OCI spec's filter."""
        api = self.api()
        api._raise_for_status(api._post(api._url("/libpod/containers/{0}/init", container_id)))
        info = api._result(
            api._get(api._url("/libpod/containers/{0}/json", container_id)), json=True
        )
        problem = seccomp_profile.oci_config_problem(info.get("OCIConfigPath"))
        return f"assay's seccomp profile is not in the OCI spec: {problem}" if problem else None

    def _remove_quietly(self, ref: str) -> None:
        try:
            self.api().remove_container(ref, force=True, v=True)
        except Exception:  # noqa: BLE001 - nothing to remove is fine
            pass

    # --- housekeeping ---------------------------------------------------------

    def uid_block_holders(self, block: str) -> list[str]:
        found = self.api().containers(all=True, filters={"label": f"{UID_BLOCK}={block}"})
        return [item.get("Id") or "" for item in found]

    def reap(self, *, only_mine: bool = False) -> list[str]:
        try:
            found = self.api().containers(all=True, filters={"label": f"{LABEL}=1"})
        except Exception as exc:  # noqa: BLE001 - the reaper retries later
            log.warning("sandbox_reap_failed", runtime=self.name, error=_short(exc))
            return []
        removed = []
        for item in found:
            labels = item.get("Labels") or {}
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
                self.api().remove_container(item["Id"], force=True, v=True)
            except Exception as exc:  # noqa: BLE001
                log.warning(
                    "sandbox_reap_remove_failed", container=item["Id"][:12], error=_short(exc)
                )
                continue
            log.info("sandbox_reaped", runtime=self.name, container=item["Id"][:12], reason=reason)
            removed.append(item["Id"])
        return removed

    def image_present(self, image: str) -> bool | None:
        import docker

        try:
            self.api().inspect_image(image)
            return True
        except docker.errors.ImageNotFound:
            return False
        except Exception:  # noqa: BLE001
            return None

    def enforced_limits(self) -> dict[str, bool | str]:
        try:
            info = self.api().info()
        except Exception as exc:  # noqa: BLE001
            return {"error": _short(exc)}
        security = " ".join(info.get("SecurityOptions") or [])
        runtimes = info.get("Runtimes") or {}
        return {
            "network none": True,
            "memory (swap = memory)": bool(info.get("MemoryLimit")) and bool(info.get("SwapLimit")),
            "cpu quota": bool(info.get("CpuCfsQuota")),
            "pids limit": bool(info.get("PidsLimit")),
            "capabilities dropped": True,
            "no-new-privileges": True,
            "read-only root + sized tmpfs": True,
            "file-size ulimit": True,
            "seccomp (assay profile)": gvisor.seccomp_status(
                self.config.oci_runtime, "seccomp" in security
            ),
            "gVisor (runsc)": self._gvisor_status(runtimes),
        }

    def _endpoint_is_local(self) -> bool:
        endpoint = self.config.docker_host or os.environ.get("DOCKER_HOST") or ""
        return endpoint == "" or endpoint.startswith(("unix://", "/"))

    def _runtime_missing(self, entry: Any) -> str | None:
        """Why an OCI runtime the engine lists cannot run (None when it can, or cannot be checked from here)."""
        path = (entry or {}).get("path") if isinstance(entry, dict) else None
        if path and self._endpoint_is_local() and shutil.which(path) is None:
            return f"{path} is not installed"
        return None

    def _gvisor_status(self, runtimes: dict[str, Any]) -> str:
        """What doctor says about gVisor: enforced only when requested and a real probe ran under it."""
        if "runsc" not in runtimes:
            why: str | None = "the engine has no runsc runtime"
        elif self.engine() == "podman":
            why = "podman's Docker-compatible API ignores the OCI runtime (use SANDBOX_RUNTIME=podman)"
        else:
            why = self._runtime_missing(runtimes["runsc"])
        return gvisor.doctor_status(self, why)

    def close(self) -> None:
        with self._lock:
            if self._api is not None:
                try:
                    self._api.close()
                except Exception:  # noqa: BLE001
                    pass
                self._api = None
