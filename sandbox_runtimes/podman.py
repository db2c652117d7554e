"""The podman runtime: podman-py against a podman API socket.

``SANDBOX_PODMAN_SOCKET`` names a socket (``unix:///run/podman/podman.sock``
or a path). Without it, the runtime uses the system socket when it answers,
else starts ``podman system service`` itself on a socket in a private,
verified directory (``$XDG_RUNTIME_DIR/assay-podman``, else
``$TMPDIR/assay-podman-<uid>`` checked to be this uid's with mode 0700;
shared by assay processes, guarded by a file lock; the service exits by
itself after ``SERVICE_IDLE_S`` without clients, so nothing outlives a killed
owner for long, and is replaced when podman's version or configuration
changed since it started: :mod:`assay.sandbox_runtimes.podman_service`). That service runs with a short
exec exit delay (:mod:`assay.sandbox_runtimes.podman_conf`): podman's default
keeps two ``conmon`` processes per execution on the host for 300 s.

The container is created from the hardened spec by posting a libpod
SpecGenerator directly (podman-py's ``containers.create`` cannot express
nosuid/nodev tmpfs options); execution, timeouts and files come from
:class:`assay.plugins.sandbox.ContainerSession`.

An OCI runtime other than the default (``SANDBOX_OCI_RUNTIME=runsc``):
podman 4's API ignores the SpecGenerator's ``oci_runtime`` (the container
comes up under runc), so such a container is *created* through a second
service of the runtime's own, ``podman --runtime NAME system service``, on a
socket beside the first (shared the same way; it also exits when idle).
Everything after creation goes through the main socket: podman records the
runtime with the container. The inspect check still refuses a container
whose runtime is not the one asked for.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.kernel.log import get_logger
from assay.plugins.sandbox import (
    SANDBOX_IMAGE_MISSING,
    SANDBOX_RUNTIME_DIR_UNSAFE,
    SANDBOX_START_FAILED,
    ContainerSession,
    ContainerSpec,
    ExecStream,
    ProbeResult,
    SandboxError,
    SandboxRuntime,
    gvisor,
    labels as sandbox_labels,
    seccomp as seccomp_profile,
)
from assay.plugins.sandbox.channel import hijack
from assay.plugins.sandbox.spec import verify_inspect
from assay.plugins.sandbox.upload import put_by_exec

from . import podman_service
from .podman_service import pings as _pings

log = get_logger("assay.sandbox.podman")

SYSTEM_SOCKET = "/run/podman/podman.sock"
API_VERSION = "4.0.0"  # the oldest libpod API we speak; podman 4 and 5 both serve it


def _socket_url(value: str) -> str:
    if value.startswith(("unix://", "http+unix://", "tcp://", "http://")):
        return value
    return "unix://" + value


class PodmanRuntime(SandboxRuntime):
    """Containers through the podman API (podman-py)."""

    name = "podman"
    isolated = True
    description = "podman via its REST API (podman-py)"

    def __init__(self, config) -> None:
        super().__init__(config)
        self._client: Any = None
        self._url: str | None = None
        self._info: dict[str, Any] | None = None
        self._creators: dict[str, Any] = {}  # OCI runtime -> client of its own podman service
        self._own_service: str | None = None  # the main socket, when it is a service assay started

    # --- connection ----------------------------------------------------------------

    def _connect(self) -> Any:
        if self._client is not None:
            return self._client
        from podman import PodmanClient  # heavy import: only when the runtime is used

        url = self._find_socket()
        self._client = PodmanClient(base_url=url, version=API_VERSION, timeout=60, max_pool_size=32)
        self._url = url
        return self._client

    def _find_socket(self) -> str:
        if self.config.podman_socket:
            return _socket_url(self.config.podman_socket)
        if os.getuid() == 0 and _pings(SYSTEM_SOCKET, self.config.probe_timeout):
            return _socket_url(SYSTEM_SOCKET)
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        if xdg and _pings(f"{xdg}/podman/podman.sock", self.config.probe_timeout):
            return _socket_url(f"{xdg}/podman/podman.sock")
        self._own_service = str(self._start_service())
        return _socket_url(self._own_service)

    def _creator_api(self, oci_runtime: str | None) -> Any:
        """The API to create a container through: the main one, or for another OCI runtime
        a service whose default runtime it is (podman's API ignores ``oci_runtime``)."""
        if not oci_runtime:
            return self._connect().api
        if oci_runtime not in self._creators:
            from podman import PodmanClient

            try:
                sock = self._start_service(oci_runtime)
            except SandboxError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure: the container is not made
                raise SandboxError(
                    SANDBOX_START_FAILED,
                    f"podman could not serve OCI runtime {oci_runtime!r}: {exc}",
                    "Register it in containers.conf ([engine.runtimes]; for gVisor see "
                    "docs/sandbox_engines.md), or unset SANDBOX_OCI_RUNTIME.",
                ) from None
            self._creators[oci_runtime] = PodmanClient(
                base_url=_socket_url(str(sock)), version=API_VERSION, timeout=60, max_pool_size=4
            )
        return self._creators[oci_runtime].api

    def _start_service(self, oci_runtime: str | None = None) -> Path:
        """assay's own service (for ``oci_runtime``, or the default one), started or replaced as needed."""
        sock = (
            podman_service.runtime_socket(oci_runtime)
            if oci_runtime
            else podman_service.main_socket()
        )
        return podman_service.ensure_service(sock, oci_runtime, self.config.probe_timeout)

    def _refresh_services(self, oci_runtime: str | None) -> None:
        """Replace the services assay owns (the main one, and ``oci_runtime``'s) whose configuration changed
        since they started: each is checked before a sandbox is created through it."""
        if self._own_service and not podman_service.is_current(Path(self._own_service), None):
            self._start_service()
        if oci_runtime and oci_runtime in self._creators:
            if not podman_service.is_current(
                podman_service.runtime_socket(oci_runtime), oci_runtime
            ):
                self._start_service(oci_runtime)

    # --- SandboxRuntime ----------------------------------------------------------------

    def probe(self) -> ProbeResult:
        # A real ping over the API socket; the version comes from its headers
        # (podman's /version runs conmon and runc and can take seconds).
        try:
            client = self._connect()
            resp = client.api.get("/_ping", timeout=self.config.probe_timeout)
            resp.raise_for_status()
        except SandboxError as exc:
            if exc.code == SANDBOX_RUNTIME_DIR_UNSAFE:  # not "unavailable": refused, and said so
                raise
            return ProbeResult(
                runtime=self.name,
                available=False,
                detail=f"podman: {exc.message}",
                endpoint=self._url,
            )
        except Exception as exc:  # noqa: BLE001 - any failure is "not available"
            return ProbeResult(
                runtime=self.name,
                available=False,
                detail=f"podman API did not answer: {exc}",
                endpoint=self._url,
            )
        version = resp.headers.get("Libpod-Api-Version")
        return ProbeResult(
            runtime=self.name,
            available=True,
            version=version,
            detail=f"podman {version} answered on {self._url}",
            endpoint=self._url,
        )

    def doctor(self) -> ProbeResult:
        probe = self.probe()
        if not probe.available:
            return probe
        try:
            info = (
                self._connect()
                .api.get("/info", timeout=max(30.0, self.config.probe_timeout))
                .json()
            )
        except Exception as exc:  # noqa: BLE001
            probe.info["error"] = f"podman info failed: {exc}"
            return probe
        self._info = info
        host = info.get("host", {})
        security = host.get("security", {})
        probe.oci_runtime = (host.get("ociRuntime") or {}).get("name")
        probe.cgroup_version = host.get("cgroupVersion")
        probe.oci_runtimes = sorted(
            {probe.oci_runtime or "", *(["runsc"] if shutil.which("runsc") else [])} - {""}
        )
        probe.info = {
            "rootless": security.get("rootless"),
            "seccomp": security.get("seccompEnabled"),
            "cgroup_manager": host.get("cgroupManager"),
            "kernel": host.get("kernel"),
        }
        return probe

    def create_session(self, spec: ContainerSpec) -> PodmanSession:
        spec.check()
        api = self._connect().api
        self._refresh_services(spec.oci_runtime)
        body = spec_generator(spec)
        resp = self._creator_api(spec.oci_runtime).post(
            "/containers/create",
            data=json.dumps(body),
            headers={"Content-Type": "application/json"},
        )
        if resp.status_code >= 400:
            message = _error_text(resp)
            if (
                resp.status_code == 404
                or "image not known" in message
                or "no such image" in message.lower()
            ):
                raise SandboxError(
                    SANDBOX_IMAGE_MISSING,
                    f"podman has no image {spec.image!r}: {message}",
                    "Build it with `assay sandbox build-image` (no registry is needed) or set SANDBOX_IMAGE_PYTHON.",
                )
            raise SandboxError(
                SANDBOX_START_FAILED, f"podman could not create the sandbox: {message}"
            )
        cid = resp.json()["Id"]
        # Engines drop settings silently (podman ignores an unknown OCI runtime):
        # refuse a container that is not what the spec asked for.
        problems = verify_inspect(spec, api.get(f"/containers/{cid}/json").json())
        if problems:
            _quiet_remove(api, cid)
            raise SandboxError(
                SANDBOX_START_FAILED,
                "podman did not apply the hardened spec: " + "; ".join(problems),
                "Check the engine's version and settings (assay sandbox doctor).",
            )
        # The inspect field above is only a record of the request: initialise the
        # container (nothing runs yet) and check the filter the OCI runtime will load.
        problem = _oci_seccomp_problem(api, cid)
        if problem:
            _quiet_remove(api, cid)
            raise SandboxError(
                SANDBOX_START_FAILED,
                f"podman did not apply assay's seccomp profile: {problem}",
                "Check the engine's version and settings (assay sandbox doctor).",
            )
        start = api.post(f"/containers/{cid}/start")
        if start.status_code >= 400:
            message = _error_text(start)
            _quiet_remove(api, cid)
            raise SandboxError(
                SANDBOX_START_FAILED, f"podman could not start the sandbox: {message}"
            )
        return PodmanSession(self, spec, cid)

    def reap(self, *, only_mine: bool = False) -> list[str]:
        api = self._connect().api
        resp = api.get(
            "/containers/json",
            params={"all": "true", "filters": json.dumps({"label": [f"{sandbox_labels.LABEL}=1"]})},
        )
        resp.raise_for_status()
        removed = []
        for item in resp.json() or []:
            labels = item.get("Labels") or {}
            reason: str | None
            if only_mine:
                if not sandbox_labels.owned_by_me(labels):
                    continue
                reason = "owner exiting"
            else:
                reason = sandbox_labels.orphan_reason(labels)
                if reason is None:
                    continue
            cid = item.get("Id")
            _quiet_remove(api, cid)
            log.info("sandbox_container_reaped", container=cid[:12], reason=reason)
            removed.append(cid)
        return removed

    def uid_block_holders(self, block: str) -> list[str]:
        resp = self._connect().api.get(
            "/containers/json",
            params={
                "all": "true",
                "filters": json.dumps({"label": [f"{sandbox_labels.UID_BLOCK}={block}"]}),
            },
        )
        resp.raise_for_status()
        return [item.get("Id") or "" for item in resp.json() or []]

    def image_present(self, image: str) -> bool | None:
        try:
            return self._connect().api.get(f"/images/{image}/exists").status_code == 204
        except Exception:  # noqa: BLE001
            return None

    def enforced_limits(self) -> dict[str, bool | str]:
        info = self._info or {}
        host = info.get("host", {})
        cgroup = host.get("cgroupVersion")
        controllers = _cgroup_controllers(cgroup)
        return {
            "network none": True,
            "memory limit": "memory" in controllers,
            "swap = memory": "memory" in controllers and _swap_accounting(cgroup),
            "cpu quota": "cpu" in controllers,
            "pids limit": "pids" in controllers,
            "read-only rootfs, tmpfs sizes, cap-drop ALL, no-new-privileges, non-root, init": True,
            "file-size ulimit": True,
            "seccomp (assay profile)": gvisor.seccomp_status(
                self.config.oci_runtime, bool(host.get("security", {}).get("seccompEnabled"))
            ),
            "gVisor (runsc)": self._gvisor_status(),
        }

    def _gvisor_status(self) -> str:
        """Enforced only when requested and a real sandbox ran under runsc (podman's info does not
        list the runtimes its configuration registers, so the probe is the only proof)."""
        why = None if shutil.which("runsc") else "runsc is not installed"
        return gvisor.doctor_status(self, why)

    def close(self) -> None:
        for client in self._creators.values():
            try:
                client.close()
            except Exception:  # noqa: BLE001
                pass
        self._creators.clear()
        if self._client is not None:
            try:
                self._client.close()
            except Exception:  # noqa: BLE001
                pass
            self._client = None


class _PodmanExec(ExecStream):
    def __init__(self, api: Any, exec_id: str, response: Any) -> None:
        self._api = api
        self._exec_id = exec_id
        self._response = response
        self._closed = False

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        raw = self._response.raw
        while not self._closed:
            header = _read_exact(raw, 8)
            if len(header) < 8:
                return
            size = int.from_bytes(header[4:8], "big")
            if size == 0:
                continue
            data = _read_exact(raw, size)
            if not data:
                return
            yield (2 if header[0] == 2 else 1), data

    def exit_code(self) -> int | None:
        for _ in range(50):
            info = self._api.get(f"/exec/{self._exec_id}/json").json()
            if not info.get("Running"):
                return info.get("ExitCode")
            time.sleep(0.01)
        return None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            # Closing the response alone does not wake a thread blocked reading it:
            # shut the socket down first.
            sock = _response_socket(self._response)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            try:
                self._response.close()
            except Exception:  # noqa: BLE001
                pass


class PodmanSession(ContainerSession):
    """One hardened podman container."""

    def __init__(self, runtime: PodmanRuntime, spec: ContainerSpec, container_id: str) -> None:
        super().__init__("podman", spec, container_id, host_grace=runtime.config.host_grace)
        self._rt = runtime
        self._api = runtime._connect().api

    def _exec(self, argv: list[str], *, user: str, workdir: str, env: dict[str, str]) -> ExecStream:
        body = {
            "AttachStdout": True,
            "AttachStderr": True,
            "AttachStdin": False,
            "Tty": False,
            "Cmd": argv,
            "Env": [f"{k}={v}" for k, v in env.items()],
            "User": user,
            "WorkingDir": workdir,
            "Privileged": False,
        }
        resp = self._api.post(
            f"/containers/{self.id}/exec",
            data=json.dumps(body),
            headers={"Content-Type": "application/json"},
        )
        if resp.status_code >= 400:
            raise SandboxError(
                "SANDBOX_EXEC_FAILED",
                f"podman exec failed: {_error_text(resp)}",
                "The sandbox may have expired or been removed; open a new session.",
            )
        exec_id = resp.json()["Id"]
        # No read timeout on the stream: silent code may run for the whole execution
        # timeout, and the host deadline (ContainerSession) ends a stuck one.
        start = self._api.post(
            f"/exec/{exec_id}/start",
            data=json.dumps({"Detach": False, "Tty": False}),
            headers={"Content-Type": "application/json"},
            stream=True,
            timeout=(10, None),
        )
        if start.status_code >= 400:
            raise SandboxError(
                "SANDBOX_EXEC_FAILED", f"podman exec start failed: {_error_text(start)}"
            )
        return _PodmanExec(self._api, exec_id, start)

    def _exec_attached(
        self, argv: list[str], *, user: str, workdir: str, env: dict[str, str]
    ) -> tuple[socket.socket, bytes]:
        url = self._rt._url or ""
        if not url.startswith(("unix://", "http+unix://")):
            raise NotImplementedError("attached execs need the API's unix socket")
        body = {
            "AttachStdout": True,
            "AttachStderr": True,
            "AttachStdin": True,
            "Tty": False,
            "Cmd": argv,
            "Env": [f"{k}={v}" for k, v in env.items()],
            "User": user,
            "WorkingDir": workdir,
            "Privileged": False,
        }
        resp = self._api.post(
            f"/containers/{self.id}/exec",
            data=json.dumps(body),
            headers={"Content-Type": "application/json"},
        )
        if resp.status_code >= 400:
            raise SandboxError("SANDBOX_EXEC_FAILED", f"podman exec failed: {_error_text(resp)}")
        path = url.split("://", 1)[1].replace("%2F", "/")
        return hijack(
            path,
            f"/v{API_VERSION}/libpod/exec/{resp.json()['Id']}/start",
            {"Detach": False, "Tty": False},
        )

    def _put_archive(self, directory: str, data: bytes) -> None:
        if gvisor.is_gvisor(
            self.spec.oci_runtime
        ):  # its tmpfs is inside gVisor: podman's copier cannot reach it
            put_by_exec(self, directory, data)
            return
        resp = self._api.put(
            f"/containers/{self.id}/archive", params={"path": directory}, data=data
        )
        if resp.status_code >= 400:
            raise SandboxError(
                "SANDBOX_EXEC_FAILED",
                f"podman could not copy into the sandbox: {_error_text(resp)}",
            )

    def _hard_reset(self) -> None:
        # SIGKILL every process (the container's init included), then start it again.
        self._api.post(f"/containers/{self.id}/kill", params={"signal": "KILL"})
        for _ in range(100):
            state = self._api.get(f"/containers/{self.id}/json").json().get("State", {})
            if not state.get("Running"):
                break
            time.sleep(0.02)
        self._api.post(f"/containers/{self.id}/start")

    def _remove(self) -> None:
        _quiet_remove(self._api, self.id)

    def alive(self) -> bool:
        try:
            resp = self._api.get(f"/containers/{self.id}/json")
            return resp.status_code == 200 and bool(resp.json().get("State", {}).get("Running"))
        except Exception:  # noqa: BLE001
            return False

    def inspect(self) -> dict[str, Any]:
        resp = self._api.get(f"/containers/{self.id}/json")
        resp.raise_for_status()
        return resp.json()


def spec_generator(spec: ContainerSpec) -> dict[str, Any]:
    """The libpod SpecGenerator for ``spec`` (nothing weaker, nothing extra)."""
    body: dict[str, Any] = {
        "name": spec.name,
        "hostname": spec.hostname,
        "image": spec.image,
        "command": list(spec.command),
        "user": spec.user,
        "work_dir": spec.workdir,
        "env": dict(spec.environment),
        "labels": dict(spec.labels),
        "netns": {"nsmode": "none"},
        "resource_limits": {
            "memory": {"limit": spec.memory_bytes, "swap": spec.memory_swap_bytes},
            "cpu": {"quota": spec.cpu_quota_us, "period": spec.cpu_period_us},
            "pids": {"limit": spec.pids_limit},
        },
        "cap_drop": list(spec.cap_drop),
        "no_new_privileges": True,
        # assay's own profile, read by the engine from the installed package.
        "seccomp_policy": "default",
        "seccomp_profile_path": str(seccomp_profile.PROFILE_PATH),
        # What podman's CLI records for --security-opt seccomp=PATH (inspect shows it).
        "annotations": {"io.podman.annotations.seccomp": str(seccomp_profile.PROFILE_PATH)},
        "read_only_filesystem": True,
        "init": True,
        "privileged": False,
        "mounts": [
            {
                "destination": t.target,
                "type": "tmpfs",
                "source": "tmpfs",
                "options": t.options.split(","),
            }
            for t in spec.tmpfs
        ]
        + [
            # Registered data files only (datamounts.py): read-only, nosuid, nodev, noexec.
            {
                "destination": m.target,
                "type": "bind",
                "source": m.source,
                "options": list(m.options),
            }
            for m in spec.data_files
        ],
        "r_limits": [{"type": u.name, "soft": u.soft, "hard": u.hard} for u in spec.ulimits],
        "shm_size": spec.shm_bytes,
        "stop_timeout": 1,
        "remove": False,
    }
    if spec.oci_runtime:
        body["oci_runtime"] = spec.oci_runtime
    return body


def _oci_seccomp_problem(api: Any, cid: str) -> str | None:
    """Initialise ``cid`` and compare the OCI spec's seccomp filter with assay's (None when it matches)."""
    resp = api.post(f"/containers/{cid}/init")
    if resp.status_code >= 400:
        return f"the container could not be initialised: {_error_text(resp)}"
    path = (api.get(f"/containers/{cid}/json").json() or {}).get("OCIConfigPath")
    return seccomp_profile.oci_config_problem(path)


def _response_socket(response: Any) -> Any:
    """The socket under a streamed ``requests`` response (None when it cannot be found)."""
    raw = getattr(response, "raw", None)
    conn = getattr(raw, "_connection", None)
    sock = getattr(conn, "sock", None)
    if sock is not None:
        return sock
    fp = getattr(getattr(raw, "_fp", None), "fp", None)
    return getattr(getattr(fp, "raw", None), "_sock", None)


def _read_exact(raw: Any, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        try:
            piece = raw.read(n - len(buf))
        except Exception:  # noqa: BLE001 - a closed/killed stream ends the iteration
            return buf
        if not piece:
            return buf
        buf += piece
    return buf


def _error_text(resp: Any) -> str:
    try:
        data = resp.json()
        return str(data.get("message") or data.get("cause") or data)
    except Exception:  # noqa: BLE001
        return f"HTTP {resp.status_code}: {resp.text[:300]}"


def _quiet_remove(api: Any, cid: str) -> None:
    try:
        api.delete(f"/containers/{cid}", params={"force": "true", "timeout": "0", "v": "true"})
    except Exception as exc:  # noqa: BLE001
        log.warning("podman_remove_failed", container=cid[:12], error=repr(exc))


def _cgroup_controllers(version: str | None) -> set[str]:
    if version == "v2":
        try:
            return set(Path("/sys/fs/cgroup/cgroup.controllers").read_text().split())
        except OSError:
            return set()
    root = Path("/sys/fs/cgroup")
    return {c for c in ("memory", "cpu", "pids") if (root / c).exists()}


def _swap_accounting(version: str | None) -> bool:
    if version == "v2":
        return True
    return Path("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes").exists()
