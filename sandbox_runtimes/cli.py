"""``assay sandbox``: doctor, build-image and run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

# Shipped as package data, so an installed wheel can build the image too.
BUILD_SCRIPT = Path(__file__).resolve().parent / "image" / "build-sandbox-image.sh"


def _kernel(ctx: click.Context) -> Any:
    obj = ctx.find_root().obj or {}
    kernel = obj.get("kernel")
    if kernel is None:
        from assay import Kernel

        kernel = Kernel()
        ctx.find_root().ensure_object(dict)["kernel"] = kernel
    return kernel


@click.group("sandbox")
def sandbox_group() -> None:
    """Run code in the hardened sandbox; check and build what it needs."""


@sandbox_group.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def doctor_cmd(ctx: click.Context, as_json: bool) -> None:
    """Which runtime would be used, its version, OCI runtime, cgroups, image and enforced limits."""
    from assay.plugins.sandbox import SandboxConfig, SandboxError, seccomp, select_runtime

    kernel = _kernel(ctx)
    config = SandboxConfig.from_settings(kernel.settings)
    runtimes = kernel.registry("sandbox_runtimes").as_dict()
    report: dict[str, Any] = {
        "config": {
            "SANDBOX_RUNTIME": config.runtime or "(detect)",
            "SANDBOX_ALLOW_LOCAL_RUNTIME": config.allow_local_runtime,
            "image_python": config.image_for("python"),
        },
        "runtimes": {},
        "selected": None,
    }
    for name, cls in sorted(runtimes.items()):
        runtime = cls(config)
        try:
            probe = runtime.doctor()
            entry = probe.model_dump()
            if probe.available and runtime.isolated:
                entry["image_present"] = runtime.image_present(config.image_for("python"))
                entry["limits"] = runtime.enforced_limits()
                entry["seccomp_profile"] = seccomp.summary()
            elif probe.available:
                entry["limits"] = runtime.enforced_limits()
        except Exception as exc:  # noqa: BLE001 - the doctor reports, never crashes
            entry = {"runtime": name, "available": False, "detail": f"{type(exc).__name__}: {exc}"}
        finally:
            runtime.close()
        report["runtimes"][name] = entry
    try:
        chosen, _ = select_runtime(config, runtimes)
        report["selected"] = {"runtime": chosen.name, "isolated": chosen.isolated}
        chosen.close()
    except SandboxError as exc:
        report["selected"] = {"error": exc.to_dict()}
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
        return
    for key, value in report["config"].items():
        click.echo(f"{key}: {value}")
    click.echo("")
    for name, entry in report["runtimes"].items():
        mark = "ok " if entry.get("available") else "-- "
        click.echo(f"{mark}{name}: {entry.get('detail', '')}")
        for label in (
            "version",
            "oci_runtime",
            "cgroup_version",
            "image_present",
            "seccomp_profile",
        ):
            if entry.get(label) is not None:
                click.echo(f"     {label}: {entry[label]}")
        for limit, state in (entry.get("limits") or {}).items():
            click.echo(
                f"     limit {limit}: {'enforced' if state is True else 'NOT enforced' if state is False else state}"
            )
    click.echo("")
    sel = report["selected"]
    if "error" in sel:
        click.echo(f"selected: none -> {sel['error']['code']}: {sel['error']['message']}")
        click.echo(f"hint: {sel['error']['hint']}")
        sys.exit(1)
    iso = "isolated" if sel["isolated"] else "NOT ISOLATED"
    click.echo(f"selected: {sel['runtime']} ({iso})")


# --help goes to the script, whose usage lists its own options.
@sandbox_group.command(
    "build-image", context_settings={"ignore_unknown_options": True}, add_help_option=False
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def build_image_cmd(args: tuple[str, ...]) -> None:
    """Build the Python sandbox image from Debian packages (needs root, debootstrap and podman)."""
    if not BUILD_SCRIPT.exists():
        click.echo(f"error: {BUILD_SCRIPT} is missing (reinstall assay)", err=True)
        sys.exit(2)
    sys.exit(subprocess.call(["bash", str(BUILD_SCRIPT), *args]))


@sandbox_group.command("run")
@click.option(
    "--runtime",
    "runtime_name",
    default=None,
    help="docker, podman, nerdctl or local (default: detect).",
)
@click.option(
    "--timeout", "timeout_s", type=float, default=None, help="Seconds before the code is killed."
)
@click.option("--language", default="python", show_default=True, help="python or shell.")
@click.option("--json", "as_json", is_flag=True, help="Print the ExecutionResult as JSON.")
@click.argument("code", nargs=-1, required=True)
@click.pass_context
def run_cmd(
    ctx: click.Context,
    runtime_name: str | None,
    timeout_s: float | None,
    language: str,
    as_json: bool,
    code: tuple[str, ...],
) -> None:
    """Run CODE (after --; '-' reads stdin) in a fresh sandbox and print the result."""
    from assay.plugins.sandbox import SandboxConfig, SandboxManager

    source = sys.stdin.read() if code == ("-",) else " ".join(code)
    kernel = _kernel(ctx)
    overrides: dict[str, Any] = {"runtime": runtime_name} if runtime_name else {}
    if timeout_s is not None:
        overrides["timeout"] = max(timeout_s, SandboxConfig.from_settings(kernel.settings).timeout)
    config = SandboxConfig.from_settings(kernel.settings, **overrides)
    with SandboxManager(config, kernel.registry("sandbox_runtimes").as_dict()) as manager:
        with manager.open_session(language) as session:
            result = session.run_code(source, language=language, timeout_s=timeout_s)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        for warning in result.warnings:
            click.echo(f"WARNING: {warning}", err=True)
        if result.stdout:
            click.echo(result.stdout, nl=not result.stdout.endswith("\n"))
        if result.stderr:
            click.echo(result.stderr, nl=not result.stderr.endswith("\n"), err=True)
        notes = [
            n
            for n, flag in (
                ("stdout truncated", result.stdout_truncated),
                ("stderr truncated", result.stderr_truncated),
            )
            if flag
        ]
        click.echo(f"[{result.summary()}{'; ' + ', '.join(notes) if notes else ''}]", err=True)
    if result.timed_out:
        sys.exit(124)
    sys.exit(result.exit_code if result.exit_code is not None else 1)
