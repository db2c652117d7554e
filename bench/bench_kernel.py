"""Kernel figures: start-up with every built-in plugin, and tool dispatch overhead.

Run: .venv/bin/python bench/bench_kernel.py

1. Start-up: in fresh subprocesses (cold module caches for the plugins),
   ``Kernel().start()`` discovering and loading every installed plugin,
   beside a bare ``importlib.metadata.entry_points(group="assay")`` scan in
   the same kind of process. Median of several runs. Target: <= 50 ms.
   ``import kernel`` (pydantic, structlog, pluggy...) is printed too, apart.
2. Dispatch: ``kernel.call_tool`` of a 3-argument sync tool (validate, call,
   envelope, filtered log event) against calling the function directly.
   Target: <= 20 microseconds above the direct call.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 7

START_UP = r"""
import json, time
t0 = time.perf_counter()
import kernel
t1 = time.perf_counter()
k = kernel.Kernel()
k.start()
t2 = time.perf_counter()
infos = k.plugins()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "start_ms": (t2 - t1) * 1e3,
                  "loaded": sorted(i.name for i in infos if i.status == "loaded"),
                  "failed": sorted(i.name for i in infos if i.status == "failed"),
                  "tools": len(k.tools)}))
"""

SCAN = r"""
import json, time
import importlib.metadata as md
t0 = time.perf_counter()
eps = list(md.entry_points(group="assay"))
t1 = time.perf_counter()
print(json.dumps({"scan_ms": (t1 - t0) * 1e3, "entry_points": len(eps)}))
"""

PER_PLUGIN = r"""
import importlib, json, time, sys
import kernel, importlib.metadata as md
out = {}
for ep in md.entry_points(group="assay"):
    t0 = time.perf_counter()
    try:
        importlib.import_module(ep.value)
    except Exception as exc:
        out[ep.name] = None
        continue
    out[ep.name] = (time.perf_counter() - t0) * 1e3
print(json.dumps(out))
"""


def fresh(code: str) -> dict:
    env_clear = {"ASSAY_LOAD_PLUGINS", "ASSAY_DISABLE_PLUGINS", "ASSAY_STRICT_PLUGINS"}
    import os

    env = {k: v for k, v in os.environ.items() if k not in env_clear}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"benchmark subprocess failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def bench_start_up() -> None:
    starts, imports, scans = [], [], []
    last: dict = {}
    for _ in range(RUNS):
        last = fresh(START_UP)
        starts.append(last["start_ms"])
        imports.append(last["import_ms"])
        scans.append(fresh(SCAN)["scan_ms"])
    start, scan, imp = statistics.median(starts), statistics.median(scans), statistics.median(imports)
    print(f"start-up: Kernel().start() with every installed plugin, fresh process, median of {RUNS}")
    print(f"  plugins loaded: {len(last['loaded'])} ({', '.join(last['loaded'])}); tools: {last['tools']}")
    if last["failed"]:
        print(f"  plugins failed (isolated): {', '.join(last['failed'])}")
    print(f"  bare entry_points(group='assay') scan : {scan:8.2f} ms")
    print(f"  kernel start-up                       : {start:8.2f} ms  ({start / scan:.1f}x the scan)")
    print(f"  (import kernel, before start-up       : {imp:8.2f} ms, not part of the figure)")
    print(f"  target <= 50 ms: {verdict(start <= 50.0)}")
    per_plugin = fresh(PER_PLUGIN)
    slow = sorted(((ms, name) for name, ms in per_plugin.items() if ms is not None), reverse=True)[:5]
    print("  slowest plugin module imports (after import kernel): "
          + ", ".join(f"{name} {ms:.1f} ms" for ms, name in slow))


def bench_dispatch() -> None:
    sys.path.insert(0, str(ROOT))
    from kernel import Kernel, Settings, hookimpl, tool

    @tool
    def combine(a: int, b: float, label: str) -> float:
        """Combine three arguments.

        Args:
            a: An integer.
            b: A float.
            label: A label.
        """
        return a * b

    class Plugin:
        __name__ = "bench"

        @hookimpl
        def register_tools(self, register):
            register(combine)

    kernel = Kernel(load_entrypoints=False, plugins=[Plugin()], settings=Settings.from_env(log_level="WARNING"))
    kernel.start()
    func = combine.func
    arguments = {"a": 3, "b": 2.5, "label": "x"}
    assert kernel.call_tool("combine", arguments).data == 7.5
    number = 20_000

    def per_call(stmt) -> float:
        return min(timeit.repeat(stmt, number=number, repeat=7)) / number * 1e6

    direct = per_call(lambda: func(3, 2.5, "x"))
    dispatched = per_call(lambda: kernel.call_tool("combine", arguments))
    overhead = dispatched - direct
    print("dispatch: 3-argument sync tool, best of 7 x 20,000 calls")
    print(f"  direct function call    : {direct:8.2f} us")
    print(f"  kernel.call_tool        : {dispatched:8.2f} us  ({dispatched / direct:.0f}x the direct call)")
    print(f"  overhead above direct   : {overhead:8.2f} us")
    print(f"  target <= 20 us: {verdict(overhead <= 20.0)}")


if __name__ == "__main__":
    bench_start_up()
    print()
    bench_dispatch()
