"""Time llm-sandbox and dbgpt-sandbox doing what bench_sandbox.py times for assay.

Run by bench_sandbox.py with the interpreter of a throw-away venv where those
packages are installed (never imported into assay's own venv). Prints one
JSON object per package: cold session start, first and warm executions of
``print(1)``, or the reason it could not run here.

Usage: python thirdparty_sandboxes.py SOCKET IMAGE N_WARM
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
import traceback
import uuid


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _summary(cold: float, first: float, warm: list[float], **extra) -> dict:
    return {
        "ok": True,
        "cold_ms": cold,
        "first_ms": first,
        "warm_p50_ms": statistics.median(warm),
        "warm_p95_ms": _pct(warm, 0.95),
        **extra,
    }


def bench_llm_sandbox(socket_path: str, image: str, n_warm: int) -> dict:
    from llm_sandbox import SandboxBackend, SandboxSession
    from llm_sandbox.language_handlers.python_handler import PythonHandler
    from podman import PodmanClient

    # Without its environment set-up (a venv plus pip, which needs a registry)
    # it runs `python FILE`; Debian's image has python3 only.
    PythonHandler.get_execution_commands = lambda self, code_file, runtime_context=None: [
        f"python3 {code_file}"
    ]

    client = PodmanClient(base_url=f"unix://{socket_path}")
    t0 = time.perf_counter()
    session = SandboxSession(
        backend=SandboxBackend.PODMAN,
        client=client,
        image=image,
        lang="python",
        keep_template=True,
        skip_environment_setup=True,
        workdir="/workspace",
        runtime_configs={"user": "65534:65534"},
        verbose=False,
    )
    session.open()
    cold = (time.perf_counter() - t0) * 1000
    try:
        t0 = time.perf_counter()
        out = session.run("print(1)")
        first = (time.perf_counter() - t0) * 1000
        if "1" not in (out.stdout or ""):
            return {
                "ok": False,
                "why": f"print(1) gave stdout={out.stdout!r} stderr={out.stderr!r}",
            }
        warm = []
        for _ in range(n_warm):
            t0 = time.perf_counter()
            session.run("print(1)")
            warm.append((time.perf_counter() - t0) * 1000)
    finally:
        session.close()
    return _summary(cold, first, warm, backend="podman API (podman-py)")


def bench_dbgpt_sandbox(image: str, n_warm: int) -> dict:
    from dbgpt_sandbox.sandbox.execution_layer import podman_runtime as pr
    from dbgpt_sandbox.sandbox.execution_layer.base import SessionConfig

    # Its images are hard-coded registry names (nothing can be pulled here) and
    # it runs `python FILE`, which Debian's python3 image does not provide: point
    # both at what exists, nothing else changed.
    pr.PodmanSandboxSession._get_image_name = lambda self, language: image
    original = pr.PodmanSandboxSession._get_exec_command
    pr.PodmanSandboxSession._get_exec_command = lambda self, f: original(self, f).replace(
        "python ", "python3 ", 1
    )

    async def run() -> dict:
        runtime = pr.PodmanRuntime()
        config = SessionConfig(language="python", working_dir="/workspace", network_disabled=True)
        sid = uuid.uuid4().hex[:12]
        t0 = time.perf_counter()
        session = await runtime.create_session(sid, config)
        cold = (time.perf_counter() - t0) * 1000
        try:
            t0 = time.perf_counter()
            res = await session.execute("print(1)")
            first = (time.perf_counter() - t0) * 1000
            if res.exit_code != 0 or "1" not in (res.output or ""):
                return {
                    "ok": False,
                    "why": f"print(1) gave exit {res.exit_code}: {res.output!r} {res.error!r}",
                }
            warm = []
            for _ in range(n_warm):
                t0 = time.perf_counter()
                await session.execute("print(1)")
                warm.append((time.perf_counter() - t0) * 1000)
        finally:
            await session.stop()
        return _summary(
            cold,
            first,
            warm,
            backend="podman CLI",
            note="mounts the host's /tmp read-write into the container (as the seed does)",
        )

    return asyncio.run(run())


def main() -> None:
    socket_path, image, n_warm = sys.argv[1], sys.argv[2], int(sys.argv[3])
    results = {}
    for name, fn in (
        ("llm-sandbox", lambda: bench_llm_sandbox(socket_path, image, n_warm)),
        ("dbgpt-sandbox", lambda: bench_dbgpt_sandbox(image, n_warm)),
    ):
        try:
            results[name] = fn()
        except Exception as exc:  # noqa: BLE001 - report why, do not crash the bench
            tb = traceback.format_exc(limit=3).strip().splitlines()
            results[name] = {
                "ok": False,
                "why": f"{type(exc).__name__}: {exc}"[:400],
                "where": tb[-3:],
            }
    print(json.dumps(results))


if __name__ == "__main__":
    main()
