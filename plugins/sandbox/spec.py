"""The hardened container spec that every container runtime translates.

:func:`build_spec` turns a :class:`SandboxConfig` into a :class:`ContainerSpec`;
runtimes (podman, docker, nerdctl, ...) translate that one object into their
API's terms and must not add anything weaker. :meth:`ContainerSpec.check`
re-verifies the invariants right before a container is created, so a spec
that was tampered with after construction is refused too.

What every container gets: no network; a memory limit with swap equal to it;
a CPU quota (never a cpuset); a pids limit; all capabilities dropped;
no-new-privileges; a read-only root filesystem; size-limited tmpfs for the
working directory and ``/tmp``; a file-size ulimit; non-root users; an init
process; no host mounts but the registered data files, read-only (datamounts.py); only allow-listed environment variables;
assay's own seccomp profile (:mod:`assay.plugins.sandbox.seccomp`); gVisor (``runsc``) only when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.kernel.sandbox import uids
from assay.kernel.sandbox.config import SandboxConfig
from assay.kernel.sandbox.errors import (
    SANDBOX_LANGUAGE_UNSUPPORTED,
    SANDBOX_OVERRIDE_REFUSED,
    SandboxError,
)
from assay.kernel.sandbox.uids import UidBlock

from . import datamounts, gvisor, seccomp as seccomp_profile
from .datamounts import DataMount
from .labels import UID_BLOCK
from .launcher import HELPER_PATH

CPU_PERIOD_US = 100_000
NPROC_BACKSTOP = 1024
# RLIMIT_MSGQUEUE: bytes of POSIX message queues (/dev/mqueue) the code's uid may hold; the
# kernel's default, made explicit (engines otherwise pass on whatever the engine process has).
MSGQUEUE_BYTES = 819_200

# Overrides that would weaken the sandbox. Asking for any of them is refused,
# whatever the value, so a caller cannot probe for a loophole.
REFUSED_OVERRIDES = frozenset(
    {
        "privileged",
        "cap_add",
        "capabilities",
        "network",
        "network_mode",
        "net",
        "host_network",
        "volumes",
        "binds",
        "mounts",
        "bind",
        "data_files",
        "devices",
        "pid_mode",
        "ipc_mode",
        "uts_mode",
        "userns_mode",
        "security_opt",
        "seccomp",
        "apparmor",
        "read_only",
        "read_write",
        "no_new_privileges",
        "user",
        "root",
        "cpuset_cpus",
        "init",
        "env_host",
        "host_env",
        "sysctls",
        "cgroup_parent",
        "oom_kill_disable",
        "extra_hosts",
        "ports",
    }
)
# Overrides that may only tighten a limit (the configured value is the ceiling).
TIGHTEN_ONLY = (
    "memory_limit",
    "cpu_limit",
    "max_processes",
    "max_file_size",
    "workspace_size",
    "tmp_size",
    "shm_size",
    "timeout",
)
OTHER_OVERRIDES = ("env", "oci_runtime", "image")

LANGUAGES: dict[str, tuple[str, ...]] = {
    # language -> argv prefix; the code is passed as the last argument.
    "python": ("python3", "-c"),
    "shell": ("sh", "-c"),
}
LANGUAGE_ALIASES = {"py": "python", "python3": "python", "sh": "shell", "bash": "shell"}


# Variables every sandbox gets; nothing else from the host unless allow-listed.
def base_environment(config: SandboxConfig) -> dict[str, str]:
    threads = str(config.cpu_threads)
    return {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/.matplotlib",
        "OMP_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "NUMEXPR_NUM_THREADS": threads,
        "VECLIB_MAXIMUM_THREADS": threads,
    }


def normalize_language(language: str) -> str:
    lang = LANGUAGE_ALIASES.get(language.lower().strip(), language.lower().strip())
    if lang not in LANGUAGES:
        raise SandboxError(
            SANDBOX_LANGUAGE_UNSUPPORTED,
            f"language {language!r} is not supported",
            f"Use one of: {', '.join(sorted(LANGUAGES))}.",
        )
    return lang


@dataclass(frozen=True)
class TmpfsMount:
    """A size-limited, nosuid, nodev tmpfs (the only mounts a sandbox has)."""

    target: str
    size_bytes: int
    mode: str = "1777"
    noexec: bool = True

    @property
    def options(self) -> str:
        """Docker/podman ``--tmpfs`` option string."""
        opts = ["rw", "nosuid", "nodev", f"size={self.size_bytes}", f"mode={self.mode}"]
        if self.noexec:
            opts.append("noexec")
        return ",".join(opts)


@dataclass(frozen=True)
class Ulimit:
    name: str
    soft: int
    hard: int


@dataclass(frozen=True)
class ContainerSpec:
    """Everything a runtime needs to create one hardened sandbox container."""

    image: str
    name: str
    language: str
    command: tuple[str, ...]  # the idle keeper; code runs through exec
    user: str  # uid:gid of the keeper (container's main user)
    exec_user: str  # uid:gid that runs the code
    workdir: str
    environment: dict[str, str]
    labels: dict[str, str]
    memory_bytes: int
    memory_swap_bytes: int
    cpu_period_us: int
    cpu_quota_us: int
    pids_limit: int
    tmpfs: tuple[TmpfsMount, ...]
    ulimits: tuple[Ulimit, ...]
    max_file_size: int
    timeout_s: float
    oci_runtime: str | None = None
    shm_bytes: int = 16 * 1024**2  # /dev/shm: the engine's own tmpfs, sized explicitly
    hostname: str = "sandbox"
    # uid:gid of the session's resident process and the cells it forks (see resident.py):
    # a third user, so the launcher's end-of-call kill (the code's uid) spares it.
    resident_user: str = "65532:65532"  # build_spec always sets the session's own (uids.py)
    # Fixed hardening: not constructor knobs in practice; check() refuses other values.
    network_disabled: bool = True
    cap_drop: tuple[str, ...] = ("ALL",)
    cap_add: tuple[str, ...] = ()
    no_new_privileges: bool = True
    read_only_rootfs: bool = True
    init: bool = True
    privileged: bool = False
    seccomp: str = "assay"  # assay's own profile (seccomp.json), never the engine's looser default
    host_mounts: tuple[str, ...] = ()
    # Registered data files, read-only under /data (datamounts.py): given by the host, never an override.
    data_files: tuple[DataMount, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def check(self) -> ContainerSpec:
        """Refuse a spec that is weaker than the hardened baseline."""
        problems = []
        if not self.network_disabled:
            problems.append("network must be disabled")
        if tuple(c.upper() for c in self.cap_drop) != ("ALL",) or self.cap_add:
            problems.append("all capabilities must be dropped and none added")
        if not self.no_new_privileges:
            problems.append("no-new-privileges must be set")
        if not self.read_only_rootfs:
            problems.append("the root filesystem must be read-only")
        if not self.init:
            problems.append("an init process is required")
        if self.privileged:
            problems.append("privileged containers are never created")
        if self.seccomp != "assay":
            problems.append("assay's seccomp profile must be applied")
        if self.host_mounts:
            problems.append("host mounts are never allowed")
        problems.extend(datamounts.problems(self.data_files))
        if self.extra:
            problems.append(f"unknown extra settings {sorted(self.extra)}")
        for uid_gid in (self.user, self.exec_user, self.resident_user):
            uid, _, gid = uid_gid.partition(":")
            if not uid.isdigit() or not gid.isdigit() or int(uid) == 0 or int(gid) == 0:
                problems.append(f"user {uid_gid!r} must be a numeric non-root uid:gid")
        if self.user == self.exec_user:
            problems.append("the keeper and the code must run as different users")
        if self.resident_user in (self.user, self.exec_user):
            problems.append("the resident process must run as a user of its own")
        if self.memory_swap_bytes != self.memory_bytes or self.memory_bytes <= 0:
            problems.append("memory must be limited, with swap equal to memory")
        if self.cpu_quota_us <= 0 or self.cpu_period_us <= 0:
            problems.append("a CPU quota is required")
        if self.pids_limit <= 0:
            problems.append("a pids limit is required")
        if not self.tmpfs or any(t.size_bytes <= 0 for t in self.tmpfs) or self.shm_bytes <= 0:
            problems.append("tmpfs mounts (and /dev/shm) must be size-limited")
        for mount in self.tmpfs:
            # assay's launcher and helpers find python3 on HELPER_PATH: it must stay read-only.
            if any(
                d == mount.target or d.startswith(mount.target.rstrip("/") + "/")
                for d in HELPER_PATH.split(":")
            ):
                problems.append(
                    f"a writable mount on {mount.target} would cover the launcher's interpreter"
                )
        if not any(u.name == "fsize" for u in self.ulimits):
            problems.append("a file-size ulimit is required")
        if any(k.upper() in {"LD_PRELOAD", "LD_LIBRARY_PATH"} for k in self.environment):
            problems.append("loader variables are not allowed in the environment")
        if problems:
            raise SandboxError(
                SANDBOX_OVERRIDE_REFUSED,
                "the container spec is weaker than the hardened baseline: " + "; ".join(problems),
                "Sandbox hardening cannot be switched off; remove the weakening setting.",
                details={"problems": problems},
            )
        return self

    def tmpfs_map(self) -> dict[str, str]:
        """``{target: options}`` as Docker's ``tmpfs=`` and ``--tmpfs`` take it."""
        return {t.target: t.options for t in self.tmpfs}

    def cli_run_args(self) -> list[str]:
        """Flags for a docker-compatible ``run``/``create`` CLI (podman, nerdctl, docker).

        The image and command are *not* included; append ``[image, *command]``.
        """
        args = [
            "--name",
            self.name,
            "--hostname",
            self.hostname,
            "--network",
            "none",
            "--memory",
            str(self.memory_bytes),
            "--memory-swap",
            str(self.memory_swap_bytes),
            "--cpu-period",
            str(self.cpu_period_us),
            "--cpu-quota",
            str(self.cpu_quota_us),
            "--pids-limit",
            str(self.pids_limit),
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--security-opt",
            seccomp_profile.security_opt(),
            "--read-only",
            "--user",
            self.user,
            "--workdir",
            self.workdir,
            "--init",
            "--shm-size",
            str(self.shm_bytes),
        ]
        for mount in self.tmpfs:
            args += ["--tmpfs", f"{mount.target}:{mount.options}"]
        for limit in self.ulimits:
            args += ["--ulimit", f"{limit.name}={limit.soft}:{limit.hard}"]
        args += datamounts.cli_args(self.data_files)
        for key, value in self.environment.items():
            args += ["--env", f"{key}={value}"]
        for key, value in self.labels.items():
            args += ["--label", f"{key}={value}"]
        if self.oci_runtime:
            args += ["--runtime", self.oci_runtime]
        return args


def check_overrides(config: SandboxConfig, overrides: dict[str, Any]) -> dict[str, Any]:
    """Validate per-session overrides: weakening keys are refused, limits only tighten."""
    refused = sorted(k for k in overrides if k in REFUSED_OVERRIDES)
    if refused:
        raise SandboxError(
            SANDBOX_OVERRIDE_REFUSED,
            f"overrides that would weaken the sandbox are refused: {', '.join(refused)}",
            "Privileged mode, capabilities, host networking, host mounts and the like cannot be enabled.",
            details={"refused": refused},
        )
    unknown = sorted(k for k in overrides if k not in TIGHTEN_ONLY and k not in OTHER_OVERRIDES)
    if unknown:
        raise SandboxError(
            SANDBOX_OVERRIDE_REFUSED,
            f"unknown sandbox overrides: {', '.join(unknown)}",
            f"Allowed: {', '.join(TIGHTEN_ONLY + OTHER_OVERRIDES)}.",
        )
    out: dict[str, Any] = {}
    for key in TIGHTEN_ONLY:
        if key not in overrides or overrides[key] is None:
            continue
        ceiling = getattr(config, key)
        try:
            value = getattr(SandboxConfig(**{key: overrides[key]}), key)
        except Exception as exc:  # noqa: BLE001 - any validation failure is a refusal
            raise SandboxError(
                SANDBOX_OVERRIDE_REFUSED, f"override {key}={overrides[key]!r} is invalid: {exc}"
            ) from None
        if value > ceiling:
            raise SandboxError(
                SANDBOX_OVERRIDE_REFUSED,
                f"override {key}={overrides[key]!r} exceeds the configured limit {ceiling!r}",
                f"Raise SANDBOX_{key.upper()} on the host if more is really needed.",
            )
        out[key] = value
    env = overrides.get("env")
    if env is not None:
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise SandboxError(
                SANDBOX_OVERRIDE_REFUSED, "env must be a mapping of strings to strings"
            )
        bad = [k for k in env if not k.replace("_", "a").isalnum() or k.upper().startswith("LD_")]
        if bad:
            raise SandboxError(
                SANDBOX_OVERRIDE_REFUSED, f"environment names refused: {', '.join(bad)}"
            )
        out["env"] = dict(env)
    if overrides.get("oci_runtime"):
        out["oci_runtime"] = SandboxConfig._oci_runtime(overrides["oci_runtime"])
    if overrides.get("image"):
        out["image"] = str(overrides["image"])
    return out


def build_spec(
    config: SandboxConfig,
    *,
    language: str,
    name: str,
    labels: dict[str, str],
    overrides: dict[str, Any] | None = None,
    users: UidBlock | None = None,
    data_files: tuple[DataMount, ...] = (),
) -> ContainerSpec:
    """The hardened spec for one session's container.

    ``users``: the session's uid block (:mod:`assay.kernel.sandbox.uids`); without one a block of
    ``SANDBOX_UID_RANGE`` is picked at random. Either way it is recorded in the labels;
    :class:`SandboxManager` also makes sure no other container of the engine holds it.
    """
    lang = normalize_language(language)
    users = users or uids.pick(config.uid_range)
    ov = check_overrides(config, overrides or {})
    cfg = config.model_copy(update={k: v for k, v in ov.items() if k in TIGHTEN_ONLY})
    env = base_environment(cfg)
    env.update(config.allowed_host_env())
    env.update(ov.get("env", {}))
    memory = cfg.memory_limit
    oci_runtime = ov.get("oci_runtime") or config.oci_runtime
    # Under gVisor the engine's pids limit covers gVisor's own processes too, and
    # RLIMIT_NPROC is per sandbox: see gvisor.py.
    nproc = cfg.max_processes if gvisor.is_gvisor(oci_runtime) else NPROC_BACKSTOP
    # The keeper sleeps a little past the lifetime, so even an orphan whose reaper
    # never runs stops by itself; the reaper removes it afterwards.
    keeper = ("sleep", str(int(config.max_lifetime) + 60))
    spec = ContainerSpec(
        image=ov.get("image") or config.image_for(lang),
        name=name,
        language=lang,
        command=keeper,
        user=users.keeper,
        exec_user=users.code,
        resident_user=users.resident,
        workdir=config.workdir,
        environment=env,
        labels={**labels, UID_BLOCK: users.label},
        memory_bytes=memory,
        memory_swap_bytes=memory,
        cpu_period_us=CPU_PERIOD_US,
        cpu_quota_us=max(1000, int(cfg.cpu_limit * CPU_PERIOD_US)),
        pids_limit=gvisor.host_pids_limit(oci_runtime, cfg.max_processes),
        tmpfs=(
            TmpfsMount(config.workdir, cfg.workspace_size, noexec=False),
            TmpfsMount("/tmp", cfg.tmp_size),
        ),
        ulimits=(
            Ulimit("fsize", cfg.max_file_size, cfg.max_file_size),
            Ulimit("nofile", config.open_files, config.open_files),
            # Per-uid, host-wide under runc: a backstop only; the pids cgroup is the real
            # limit (under gVisor it is per uid inside the sandbox: the real limit). Engines
            # replace all default ulimits once one is given, so nproc must be explicit.
            Ulimit("nproc", nproc, nproc),
            Ulimit("core", 0, 0),
            Ulimit("msgqueue", MSGQUEUE_BYTES, MSGQUEUE_BYTES),
        ),
        max_file_size=cfg.max_file_size,
        timeout_s=cfg.timeout,
        oci_runtime=oci_runtime,
        shm_bytes=cfg.shm_size,
        data_files=tuple(data_files),
    )
    return spec.check()


def verify_inspect(spec: ContainerSpec, info: dict[str, Any]) -> list[str]:
    """Compare an engine's Docker-compatible inspect output with ``spec``.

    Engines have been known to drop settings silently (podman's API ignores an
    unknown OCI runtime, for one); a runtime calls this right after creating a
    container and refuses the container when anything is missing.
    """
    hc = info.get("HostConfig") or {}
    cfg = info.get("Config") or {}
    problems = []
    if hc.get("NetworkMode") not in ("none",):
        problems.append(f"network mode is {hc.get('NetworkMode')!r}, not 'none'")
    if hc.get("Memory") != spec.memory_bytes or hc.get("MemorySwap") != spec.memory_swap_bytes:
        problems.append(
            f"memory {hc.get('Memory')}/{hc.get('MemorySwap')} is not {spec.memory_bytes}/{spec.memory_swap_bytes}"
        )
    if hc.get("CpuQuota") != spec.cpu_quota_us or hc.get("CpusetCpus"):
        problems.append("the CPU quota is missing (or a cpuset was set)")
    if hc.get("PidsLimit") != spec.pids_limit:
        problems.append(f"pids limit is {hc.get('PidsLimit')}, not {spec.pids_limit}")
    if hc.get("CapAdd") or hc.get("Privileged"):
        problems.append("capabilities were added or the container is privileged")
    if not any("no-new-privileges" in str(o) for o in hc.get("SecurityOpt") or []):
        problems.append("no-new-privileges is not set")
    if any("unconfined" in str(o) for o in hc.get("SecurityOpt") or []):
        problems.append("a security profile is unconfined")
    if not seccomp_profile.applied(hc.get("SecurityOpt")):
        problems.append("assay's seccomp profile is not applied")
    if hc.get("ReadonlyRootfs") is not True:
        problems.append("the root filesystem is writable")
    if hc.get("Init") is not True:
        problems.append("there is no init process")
    if not spec.data_files and (
        hc.get("Binds")
        or any(m.get("Type") in ("bind", "volume") for m in info.get("Mounts") or [])
    ):
        problems.append("the container has host mounts")
    elif spec.data_files:
        problems.extend(datamounts.inspect_problems(spec.data_files, info))
    if hc.get("ShmSize") != spec.shm_bytes:
        problems.append(f"/dev/shm is {hc.get('ShmSize')} bytes, not {spec.shm_bytes}")
    if str(cfg.get("User")) != spec.user:
        problems.append(f"user is {cfg.get('User')!r}, not {spec.user!r}")
    if spec.oci_runtime:
        actual = info.get("OCIRuntime") or hc.get("Runtime")
        if actual != spec.oci_runtime:
            problems.append(f"OCI runtime is {actual!r}, not the requested {spec.oci_runtime!r}")
    return problems
