"""Fail-closed runtime selection.

* ``SANDBOX_RUNTIME=<name>``: that runtime must answer its real probe, or
  ``SANDBOX_RUNTIME_UNAVAILABLE`` names what failed. There is no fallback.
* ``SANDBOX_RUNTIME=local`` needs ``SANDBOX_ALLOW_LOCAL_RUNTIME=1``
  (``SANDBOX_LOCAL_NOT_ALLOWED`` otherwise).
* Unset: docker, podman, nerdctl (then any other isolated plugin runtime) are
  probed in turn; the first that answers wins. When none does, selection
  fails closed, unless local is allowed, in which case local is used and the
  choice is logged loudly (and every result says ``isolated: false``).
"""

from __future__ import annotations

from collections.abc import Mapping

from assay.kernel.log import get_logger

from .config import DETECTION_ORDER, RUNTIME_NAMES, SandboxConfig
from .errors import (
    SANDBOX_LOCAL_NOT_ALLOWED,
    SANDBOX_RUNTIME_DIR_UNSAFE,
    SANDBOX_UNKNOWN_RUNTIME,
    SandboxError,
    unavailable,
)
from .results import ProbeResult
from .runtime import SandboxRuntime

log = get_logger("assay.sandbox")

# Probe failures that are refusals, not absences: raised as they are, whatever else could answer.
REFUSALS = frozenset({SANDBOX_RUNTIME_DIR_UNSAFE})

LOCAL_WARNING = (
    "SANDBOX WARNING: using the LOCAL runtime: code runs on this host WITHOUT container isolation "
    "(only rlimits, a temp dir and an environment allow-list). Never use it for untrusted code."
)


def _probe(runtime: SandboxRuntime) -> ProbeResult:
    try:
        return runtime.probe()
    except SandboxError as exc:
        if (
            exc.code in REFUSALS
        ):  # the host is unsafe to use: fail closed with that reason, try nothing else
            raise
        return ProbeResult(
            runtime=runtime.name,
            available=False,
            isolated=runtime.isolated,
            detail=f"probe raised {exc.code}: {exc.message}",
        )
    except Exception as exc:  # noqa: BLE001 - a probe that raises is a failed probe
        return ProbeResult(
            runtime=runtime.name,
            available=False,
            isolated=runtime.isolated,
            detail=f"probe raised {type(exc).__name__}: {exc}",
        )


def select_runtime(
    config: SandboxConfig, runtimes: Mapping[str, type[SandboxRuntime]]
) -> tuple[SandboxRuntime, list[ProbeResult]]:
    """The runtime to use and the probes made; raises when nothing acceptable answers."""
    if config.runtime:
        return _named(config, runtimes, config.runtime)
    probes: list[ProbeResult] = []
    extra = sorted(
        n
        for n, cls in runtimes.items()
        if n not in DETECTION_ORDER and getattr(cls, "isolated", True)
    )
    for name in (*DETECTION_ORDER, *extra):
        cls = runtimes.get(name)
        if cls is None:
            probes.append(
                ProbeResult(runtime=name, available=False, detail="runtime plugin not loaded")
            )
            continue
        runtime = cls(config)
        probe = _probe(runtime)
        probes.append(probe)
        if probe.available:
            log.info("sandbox_runtime_selected", runtime=name, version=probe.version, detected=True)
            return runtime, probes
        runtime.close()
    tried = "; ".join(f"{p.runtime}: {p.detail}" for p in probes)
    if config.allow_local_runtime and "local" in runtimes:
        runtime = runtimes["local"](config)
        probe = _probe(runtime)
        probes.append(probe)
        if probe.available:
            log.warning("sandbox_local_fallback", warning=LOCAL_WARNING, tried=tried)
            return runtime, probes
    raise unavailable(
        f"no isolating sandbox runtime answered ({tried})",
        details_probes=[p.model_dump() for p in probes],
    )


def _named(
    config: SandboxConfig, runtimes: Mapping[str, type[SandboxRuntime]], name: str
) -> tuple[SandboxRuntime, list[ProbeResult]]:
    if name == "local" and not config.allow_local_runtime:
        raise SandboxError(
            SANDBOX_LOCAL_NOT_ALLOWED,
            "SANDBOX_RUNTIME=local runs untrusted code on this host without isolation and is refused",
            "Use a container runtime, or set SANDBOX_ALLOW_LOCAL_RUNTIME=1 if you accept the risk.",
        )
    cls = runtimes.get(name)
    if cls is None:
        if name in RUNTIME_NAMES:
            raise unavailable(
                f"SANDBOX_RUNTIME={name}: the {name} runtime plugin is not loaded",
                f"Check `assay plugins` for why the {name!r} plugin failed, or install its extra "
                f"(pip install 'assay[{name}]'). No other runtime is tried in its place.",
            )
        raise SandboxError(
            SANDBOX_UNKNOWN_RUNTIME,
            f"SANDBOX_RUNTIME={name} names no known runtime",
            f"Known: {', '.join(sorted(set(RUNTIME_NAMES) | set(runtimes)))}.",
        )
    runtime = cls(config)
    probe = _probe(runtime)
    if not probe.available:
        runtime.close()
        raise unavailable(
            f"SANDBOX_RUNTIME={name} does not answer: {probe.detail}",
            f"Start {name} (or fix its socket/binary setting) and run `assay sandbox doctor`. "
            "No other runtime is tried in its place.",
            probe=probe.model_dump(),
        )
    if not runtime.isolated:
        log.warning("sandbox_local_selected", warning=LOCAL_WARNING)
    log.info("sandbox_runtime_selected", runtime=name, version=probe.version, detected=False)
    return runtime, [probe]
