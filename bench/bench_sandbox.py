"""Sandbox start-up and execution latency, per runtime, beside the raw engine.

For each container runtime (podman and docker against a private podman API
socket, nerdctl through podman's CLI) it measures, in one run:

* cold session start: ``open_session()`` (create + start a hardened
  container) vs ``podman run -d`` with the same hardening flags;
* first execution of ``print(1)`` in that fresh sandbox vs the first
  ``podman exec ... python3 -c 'print(1)'`` in the raw container;
* warm execution p50/p95 of ``print(1)`` in a long-lived sandbox vs
  ``podman exec`` into a long-lived raw container.

Ours and raw alternate inside each loop so drift on a noisy machine hits
both. Targets: cold start <= 1.5x raw, warm execution <= 1.3x raw. Then
runc and gVisor side by side (when runsc is installed): assay's sessions on
podman and on a private Docker Engine (``dockerd``, started and stopped by the
bench), each under runc and under runsc, alternating inside each loop: cold
session start, first execution and warm execution. Then the same figures for
llm-sandbox and dbgpt-sandbox when they install here (in a throw-away venv),
or the reason they could not run.

Run: .venv/bin/python bench/bench_sandbox.py [--cold N] [--warm N] [--runtimes podman,docker] [--no-gvisor]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from assay.kernel.sandbox import uids  # noqa: E402
from assay.plugins.sandbox import build_spec  # noqa: E402
from assay.plugins.sandbox.labels import owner_labels  # noqa: E402
from tests.sandbox_engines.docker_daemon import docker_daemon, dockerd_binary, runsc_binary  # noqa: E402
from tests.sandbox_engines.engines import TEST_IMAGE, manager_for  # noqa: E402
from tests.sandbox_engines.podman_service import image_present, podman_service, podman_usable  # noqa: E402

CODE = "print(1)"
COLD_TARGET = 1.5
WARM_TARGET = 1.3
THIRDPARTY_VENV = os.path.join(tempfile.gettempdir(), "assay-bench-thirdparty-venv")
THIRDPARTY_PACKAGES = ["llm-sandbox[podman]", "dbgpt-sandbox"]


def ms(seconds: float) -> float:
    return seconds * 1000.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def podman(*args: str, timeout: float = 120) -> str:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"podman {args[0]} failed: {done.stderr.strip()[:300]}")
    return done.stdout


class RawEngine:
    """The same container, made and used with plain ``podman`` commands."""

    def __init__(self, config) -> None:
        self.config = config
        self.users = uids.pick(config.uid_range)

    def run_argv(self) -> list[str]:
        spec = build_spec(
            self.config,
            language="python",
            name=f"assay-bench-raw-{uuid.uuid4().hex[:10]}",
            labels=owner_labels("bench-raw", "raw", 600),
            users=self.users,
        )
        return [
            "run",
            "--detach",
            "--pull",
            "never",
            "--read-only-tmpfs=false",
            *spec.cli_run_args(),
            spec.image,
            *spec.command,
        ]

    def start(self) -> str:
        return podman(*self.run_argv()).strip()

    def exec(self, container: str) -> None:
        out = podman(
            "exec",
            "--user",
            self.users.code,
            "--workdir",
            self.config.workdir,
            container,
            "python3",
            "-c",
            CODE,
        )
        assert out.strip() == "1", out

    @staticmethod
    def remove(container: str) -> None:
        podman("rm", "-f", container)


def bench_runtime(name: str, socket_path: str, n_cold: int, n_warm: int) -> list[tuple]:
    manager = manager_for(name, socket_path)
    raw = RawEngine(manager.config)
    t0 = time.perf_counter()
    manager.runtime  # selection: probe + start-up reap, once per process
    select_ms = ms(time.perf_counter() - t0)
    # One untimed round each, so image layers and the engine are warm for both.
    manager.open_session().close()
    RawEngine.remove(raw.start())

    cold, cold_raw, first, first_raw = [], [], [], []
    for _ in range(n_cold):
        t0 = time.perf_counter()
        session = manager.open_session()
        cold.append(ms(time.perf_counter() - t0))
        t0 = time.perf_counter()
        result = session.run_code(CODE)
        first.append(ms(time.perf_counter() - t0))
        assert result.stdout == "1\n", result
        session.close()

        t0 = time.perf_counter()
        container = raw.start()
        cold_raw.append(ms(time.perf_counter() - t0))
        t0 = time.perf_counter()
        raw.exec(container)
        first_raw.append(ms(time.perf_counter() - t0))
        RawEngine.remove(container)

    warm, warm_raw = [], []
    session = manager.open_session()
    container = raw.start()
    try:
        session.run_code(CODE)
        raw.exec(container)
        for _ in range(n_warm):
            t0 = time.perf_counter()
            session.run_code(CODE)
            warm.append(ms(time.perf_counter() - t0))
            t0 = time.perf_counter()
            raw.exec(container)
            warm_raw.append(ms(time.perf_counter() - t0))
    finally:
        session.close()
        RawEngine.remove(container)
        manager.close()

    med = statistics.median
    return [
        (name, "runtime selection (probe)", select_ms, None, None),
        (name, "cold session start p50", med(cold), med(cold_raw), COLD_TARGET),
        (name, "first execution p50", med(first), med(first_raw), None),
        (name, "warm execution p50", med(warm), med(warm_raw), WARM_TARGET),
        (name, "warm execution p95", pct(warm, 0.95), pct(warm_raw, 0.95), WARM_TARGET),
    ]


def bench_oci_runtimes(engine: str, socket_path: str, n_cold: int, n_warm: int) -> list[tuple]:
    """assay's sessions on ``engine`` under runc and under gVisor, alternating: rows of
    (engine, figure, runc ms, gVisor ms)."""
    managers = {
        "runc": manager_for(engine, socket_path),
        "gVisor": manager_for(engine, socket_path, oci_runtime="runsc"),
    }
    figures: dict[str, dict[str, list[float]]] = {
        k: {"cold": [], "first": [], "warm": []} for k in managers
    }
    try:
        for manager in managers.values():  # one untimed round each
            manager.runtime
            with manager.open_session() as session:
                session.run_code(CODE)
        for _ in range(n_cold):
            for kind, manager in managers.items():
                t0 = time.perf_counter()
                session = manager.open_session()
                figures[kind]["cold"].append(ms(time.perf_counter() - t0))
                t0 = time.perf_counter()
                result = session.run_code(CODE)
                figures[kind]["first"].append(ms(time.perf_counter() - t0))
                assert result.stdout == "1\n", result
                session.close()
        sessions = {kind: manager.open_session() for kind, manager in managers.items()}
        try:
            for session in sessions.values():
                session.run_code(CODE)
            for _ in range(n_warm):
                for kind, session in sessions.items():
                    t0 = time.perf_counter()
                    session.run_code(CODE)
                    figures[kind]["warm"].append(ms(time.perf_counter() - t0))
        finally:
            for session in sessions.values():
                session.close()
    finally:
        for manager in managers.values():
            manager.close()
    med = statistics.median
    run, gv = figures["runc"], figures["gVisor"]
    return [
        (engine, "cold session start p50", med(run["cold"]), med(gv["cold"])),
        (engine, "first execution p50", med(run["first"]), med(gv["first"])),
        (engine, "warm execution p50", med(run["warm"]), med(gv["warm"])),
        (engine, "warm execution p95", pct(run["warm"], 0.95), pct(gv["warm"], 0.95)),
    ]


def thirdparty_python() -> tuple[str | None, str]:
    """A venv with llm-sandbox and dbgpt-sandbox, made (or reused) outside assay's venv."""
    py = os.path.join(THIRDPARTY_VENV, "bin", "python")
    probe = [py, "-c", "import llm_sandbox, dbgpt_sandbox"]
    if os.path.exists(py) and subprocess.run(probe, capture_output=True).returncode == 0:
        return py, "reused " + THIRDPARTY_VENV
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", THIRDPARTY_VENV],
            check=True,
            capture_output=True,
            timeout=120,
        )
        done = subprocess.run(
            [py, "-m", "pip", "install", "-q", *THIRDPARTY_PACKAGES],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"could not create a venv: {exc}"
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if "is ignored" not in ln]
        return None, "pip install failed: " + " ".join(lines[-3:])[:300]
    return py, "installed " + " ".join(THIRDPARTY_PACKAGES)


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:8.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=4)
    parser.add_argument("--warm", type=int, default=20)
    parser.add_argument("--runtimes", default="podman,docker,nerdctl")
    parser.add_argument("--no-thirdparty", action="store_true")
    parser.add_argument(
        "--no-gvisor", action="store_true", help="Skip the runc vs gVisor comparison."
    )
    args = parser.parse_args()

    if not podman_usable() or not image_present(TEST_IMAGE):
        print(
            f"podman or the image {TEST_IMAGE} is missing: run scripts/build-sandbox-image.sh",
            file=sys.stderr,
        )
        return 2
    os.environ.setdefault("ASSAY_LOG_LEVEL", "error")
    rows: list[tuple] = []
    with podman_service() as socket_path:
        for name in [r.strip() for r in args.runtimes.split(",") if r.strip()]:
            rows += bench_runtime(name, socket_path, args.cold, args.warm)
        gvisor_rows: list[tuple] = []
        gvisor_note = ""
        if args.no_gvisor:
            gvisor_note = "skipped (--no-gvisor)"
        elif runsc_binary() is None:
            gvisor_note = "runsc is not installed (apt-get install runsc)"
        else:
            gvisor_rows += bench_oci_runtimes("podman", socket_path, args.cold, args.warm)
            if dockerd_binary() is None:
                gvisor_note = (
                    "dockerd is not installed (apt-get install docker.io): docker left out"
                )
            else:
                with docker_daemon(TEST_IMAGE) as docker_socket:
                    gvisor_rows += bench_oci_runtimes("docker", docker_socket, args.cold, args.warm)
        third = None
        if not args.no_thirdparty:
            py, how = thirdparty_python()
            if py:
                done = subprocess.run(
                    [
                        py,
                        os.path.join(REPO, "bench", "thirdparty_sandboxes.py"),
                        socket_path,
                        TEST_IMAGE,
                        str(args.warm),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                try:
                    third = json.loads(done.stdout.strip().splitlines()[-1])
                except (ValueError, IndexError):
                    third = {
                        "all": {"ok": False, "why": f"runner failed: {done.stderr.strip()[-300:]}"}
                    }
            else:
                third = {
                    "llm-sandbox": {"ok": False, "why": how},
                    "dbgpt-sandbox": {"ok": False, "why": how},
                }

    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"sandbox bench: image {TEST_IMAGE}, code {CODE!r}, cold n={args.cold}, warm n={args.warm}; "
        f"raw = podman CLI with the same hardening flags; load average {load} on {os.cpu_count()} CPUs"
    )
    print(f"{'runtime':8} {'figure':27} {'ours ms':>8} {'raw ms':>8} {'ratio':>6}  target")
    all_met = True
    for runtime, figure, ours, raw, target in rows:
        if raw is None:
            print(f"{runtime:8} {figure:27} {fmt(ours)} {'-':>8} {'-':>6}")
            continue
        ratio = ours / raw
        verdict = ""
        if target is not None:
            met = ratio <= target
            all_met &= met
            verdict = f"<= {target}x {'met' if met else 'NOT met'}"
        print(f"{runtime:8} {figure:27} {fmt(ours)} {fmt(raw)} {ratio:6.2f}  {verdict}")
    if gvisor_rows or gvisor_note:
        print(
            "runc vs gVisor (assay's sessions; docker = a private Docker Engine, not podman's API):"
        )
        if gvisor_note:
            print(f"  {gvisor_note}")
        if gvisor_rows:
            print(f"{'engine':8} {'figure':27} {'runc ms':>8} {'gVisor':>8} {'ratio':>6}")
        for engine, figure, runc_ms, gvisor_ms in gvisor_rows:
            print(
                f"{engine:8} {figure:27} {fmt(runc_ms)} {fmt(gvisor_ms)} {gvisor_ms / runc_ms:6.2f}"
            )
    if third is not None:
        ours_by = {(r[0], r[1]): r[2] for r in rows}
        print(
            "third-party sandboxes on the same engine and image (warm = print(1) in an open session):"
        )
        for pkg, res in third.items():
            if not res.get("ok"):
                print(f"  {pkg}: could not run here: {res.get('why')}")
                continue
            compare = "podman" if "API" in res.get("backend", "") else "nerdctl"
            ours_warm = ours_by.get((compare, "warm execution p50"))
            side = (
                f"; assay {compare} warm p50 {ours_warm:.1f} ms (assay/{pkg} {ours_warm / res['warm_p50_ms']:.2f})"
                if ours_warm
                else ""
            )
            print(
                f"  {pkg} ({res.get('backend')}): cold {res['cold_ms']:.1f} ms, first {res['first_ms']:.1f} ms, "
                f"warm p50 {res['warm_p50_ms']:.1f} ms, p95 {res['warm_p95_ms']:.1f} ms{side}"
                + (f"  [{res['note']}]" if res.get("note") else "")
            )
    print("all targets met" if all_met else "SOME TARGETS NOT MET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
