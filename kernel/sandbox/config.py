"""Sandbox settings: the ``[sandbox]`` section of the kernel's settings.

Each field reads ``SANDBOX_<FIELD>`` (the names the sandbox always had) and,
under that, the ``[sandbox]`` table of the ``ASSAY_CONFIG`` file, like every
other section (:meth:`Settings.section`); ``assay config`` shows it.

The defaults are the seed's: 256 MB of memory, 50% of one core, 30 s per
execution, 10 MB per file, 10 processes, ``/workspace``, one slim image per
language (``python:3.11-slim`` for Python, overridable with
``SANDBOX_IMAGE_PYTHON``). Everything here can only make the sandbox
*tighter* than the hardened spec; weakening switches do not exist.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .errors import SANDBOX_CONFIG_INVALID, SandboxError
from .uids import DEFAULT_RANGE as DEFAULT_UID_RANGE, parse_range as parse_uid_range

if TYPE_CHECKING:
    from ..settings import Settings

SECTION = "sandbox"

RUNTIME_NAMES = ("docker", "podman", "nerdctl", "local")
DETECTION_ORDER = ("docker", "podman", "nerdctl")

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(value: Any) -> int:
    """``"256m"``, ``"10MB"``, ``"1g"`` or a plain byte count -> bytes."""
    if isinstance(value, bool):
        raise ValueError("a size cannot be a boolean")
    if isinstance(value, (int, float)):
        return int(value)
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"not a size: {value!r} (use e.g. 256m, 10MB, 1g)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


class SandboxConfig(BaseSettings):
    """Sandbox settings; each field reads ``SANDBOX_<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix="SANDBOX_", extra="ignore", validate_default=True)

    runtime: str | None = Field(
        default=None, description="docker, podman, nerdctl or local; unset detects."
    )
    allow_local_runtime: bool = Field(
        default=False,
        description="Allow the unisolated local runtime (explicitly, or as the last resort).",
    )
    memory_limit: int = Field(
        default=256 * 1024**2, description="Memory per sandbox (swap equals it)."
    )
    cpu_limit: float = Field(
        default=0.5, gt=0, le=64, description="CPU quota in cores (0.5 = 50% of one)."
    )
    timeout: float = Field(default=30.0, gt=0, le=3600, description="Seconds per execution.")
    max_file_size: int = Field(
        default=10 * 1024**2, description="Largest file written, uploaded or downloaded."
    )
    max_processes: int = Field(default=10, ge=1, le=4096, description="pids limit (threads count).")
    workdir: str = Field(default="/workspace", description="Working directory inside the sandbox.")
    workspace_size: int = Field(
        default=64 * 1024**2, description="tmpfs size of the working directory."
    )
    tmp_size: int = Field(default=16 * 1024**2, description="tmpfs size of /tmp.")
    shm_size: int = Field(
        default=16 * 1024**2, description="Size of /dev/shm (a tmpfs; counts as memory)."
    )
    output_limit: int = Field(
        default=1024**2, description="Bytes kept of stdout and of stderr, each."
    )
    open_files: int = Field(default=256, ge=16, le=1024, description="RLIMIT_NOFILE inside.")
    uid_range: str = Field(
        default=DEFAULT_UID_RANGE,
        description="Host uids (first-last) sessions take their own uids from: each session's keeper, code and "
        "resident run as uids no other session has (per-uid kernel quotas are host-wide).",
    )
    # Removed settings (one fixed uid for every session): refused when set, never silently ignored.
    user: str | None = Field(default=None, description="Removed: see uid_range.")
    keeper_user: str | None = Field(default=None, description="Removed: see uid_range.")
    resident_user: str | None = Field(default=None, description="Removed: see uid_range.")
    image_python: str = Field(default="python:3.11-slim", description="Image for Python.")
    image_shell: str | None = Field(
        default=None, description="Image for shell; defaults to the Python image."
    )
    oci_runtime: str | None = Field(
        default=None, description="OCI runtime, e.g. 'runsc' for gVisor (opt-in)."
    )
    env_allow: str = Field(
        default="", description="Comma-separated host variables passed into the sandbox."
    )
    idle_ttl: float = Field(default=300.0, gt=0, description="Seconds an unused session lives.")
    max_lifetime: float = Field(
        default=3600.0, gt=0, description="Seconds any session lives at most."
    )
    reap_interval: float = Field(default=15.0, gt=0, description="Seconds between reaper passes.")
    max_sessions: int = Field(default=32, ge=1, description="Open sessions per process.")
    pool_size: int = Field(
        default=0, ge=0, le=16, description="Warm containers kept ready (0 = off)."
    )
    host_grace: float = Field(
        default=5.0, gt=0, description="Seconds past the timeout before the host kills."
    )
    podman_socket: str | None = Field(
        default=None, description="podman API socket; unset starts a service."
    )
    docker_host: str | None = Field(
        default=None, description="Docker API URL; unset uses DOCKER_HOST/default."
    )
    nerdctl_binary: str = Field(
        default="nerdctl", description="nerdctl CLI (point at podman to test)."
    )
    nerdctl_namespace: str | None = Field(
        default=None, description="nerdctl --namespace, when set."
    )
    probe_timeout: float = Field(default=5.0, gt=0, description="Seconds a runtime probe may take.")

    @field_validator("runtime", mode="before")
    @classmethod
    def _runtime_name(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        name = str(value).strip().lower()
        if name not in RUNTIME_NAMES and not re.match(r"^[a-z][a-z0-9_-]*$", name):
            raise ValueError(f"not a runtime name: {value!r}")
        return name

    @field_validator(
        "memory_limit",
        "max_file_size",
        "workspace_size",
        "tmp_size",
        "shm_size",
        "output_limit",
        mode="before",
    )
    @classmethod
    def _size(cls, value: Any) -> int:
        size = parse_size(value)
        if size < 1024:
            raise ValueError(f"size {value!r} is below 1 KiB")
        return size

    @field_validator("memory_limit")
    @classmethod
    def _memory_floor(cls, value: int) -> int:
        if value < 16 * 1024**2:
            raise ValueError("memory_limit below 16 MiB cannot start an interpreter")
        return value

    @field_validator("workdir")
    @classmethod
    def _workdir(cls, value: str) -> str:
        if not value.startswith("/") or ".." in value.split("/") or value in ("/", "/tmp"):
            raise ValueError("workdir must be an absolute path other than / and /tmp, without '..'")
        return value.rstrip("/")

    @field_validator("user", "keeper_user", "resident_user")
    @classmethod
    def _removed_user(cls, value: str | None) -> None:
        if value not in (None, ""):
            raise ValueError(
                "fixed sandbox uids were removed: every session runs as uids of its own, "
                "taken from SANDBOX_UID_RANGE (unset SANDBOX_USER, SANDBOX_KEEPER_USER, "
                "SANDBOX_RESIDENT_USER)"
            )
        return None

    @field_validator("uid_range")
    @classmethod
    def _uid_range(cls, value: str) -> str:
        first, last = parse_uid_range(value)
        return f"{first}-{last}"

    @field_validator("oci_runtime")
    @classmethod
    def _oci_runtime(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not re.match(r"^[a-zA-Z0-9_.-]+$", value):
            raise ValueError("oci_runtime must be a plain runtime name such as runsc")
        return value

    # --- derived values ---------------------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> SandboxConfig:
        """The ``[sandbox]`` section of ``settings``: ``SANDBOX_*`` variables over the
        config file's ``[sandbox]`` table over the defaults, keyword ``overrides``
        over all three. Errors become ``SANDBOX_CONFIG_INVALID``."""
        from ..errors import ConfigError

        try:
            return settings.section(SECTION, cls, **overrides)
        except ConfigError as exc:
            raise SandboxError(
                SANDBOX_CONFIG_INVALID,
                exc.message,
                "Fix the SANDBOX_* environment variables or the [sandbox] table of the config file.",
            ) from None

    @classmethod
    def from_env(cls, **overrides: Any) -> SandboxConfig:
        """:meth:`from_settings` on the settings the environment names (``ASSAY_CONFIG`` too)."""
        from ..settings import Settings

        return cls.from_settings(Settings.from_env(), **overrides)

    def image_for(self, language: str) -> str:
        """The image for ``language``.

        Python and shell have fields (read from ``SANDBOX_IMAGE_PYTHON`` /
        ``SANDBOX_IMAGE_SHELL`` like every other setting, so an explicit value
        given to the config wins); other languages read
        ``SANDBOX_IMAGE_<LANGUAGE>`` and fall back to the Python image.
        """
        if language == "python":
            return self.image_python
        if language == "shell":
            return self.image_shell or self.image_python
        return os.environ.get(f"SANDBOX_IMAGE_{language.upper()}") or self.image_python

    def allowed_host_env(self) -> dict[str, str]:
        """The host variables named in ``SANDBOX_ENV_ALLOW`` that are set."""
        names = [n.strip() for n in self.env_allow.split(",") if n.strip()]
        return {n: os.environ[n] for n in names if n in os.environ}

    @property
    def cpu_threads(self) -> int:
        """Threads numeric libraries may start: the CPU quota, rounded up, at least 1."""
        return max(1, int(-(-self.cpu_limit // 1)))
