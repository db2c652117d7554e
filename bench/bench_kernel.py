"""Kernel figures: cold start-up with every built-in plugin, and tool dispatch overhead.

Run: .venv/bin/python bench/bench_kernel.py

1. Start-up, judged figure: in a fresh Python process, the wall time of
   ``import assay`` plus ``Kernel().start()`` discovering, importing and
   registering every installed plugin: pydantic, pydantic-settings (the
   kernel's settings are read at start), pluggy and the kernel's own
   modules included. Not counted: the interpreter's own start before the
   first line, and compiling bytecode (the first process after a change
   compiles it; that process is printed apart). Median of several fresh
   processes. Target: <= 150 ms.
   The breakdown says where the time went: ``import assay``, the plugin
   modules' imports, the register hooks, and the kernel's own share; a bare
   ``importlib.metadata.entry_points(group="assay")`` scan in the same kind
   of process is the baseline for the ratios.
2. Dispatch: ``kernel.call_tool`` of a 3-argument sync tool (validate, call,
   envelope, filtered log event) against calling the function directly.
   Target: <= 20 microseconds above the direct call (both through the same
   zero-argument wrapper, so the wrapper's cost cancels out).
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
import importlib.metadata as md
t0 = time.perf_counter()
import assay
t1 = time.perf_counter()
spent = {}
original_load = md.EntryPoint.load
def timed_load(self):  # time spent importing plugin modules (the plugins' own cost)
    s = time.perf_counter()
    try:
        return original_load(self)
    finally:
        spent[self.name] = (time.perf_counter() - s) * 1e3
md.EntryPoint.load = timed_load
import assay.kernel.loader as loading
hooks = {}
original_call = loading.call_impl
def timed_call(impl, available):  # time spent inside the plugins' register hooks
    s = time.perf_counter()
    try:
        return original_call(impl, available)
    finally:
        name = impl.plugin_name
        hooks[name] = hooks.get(name, 0.0) + (time.perf_counter() - s) * 1e3
loading.call_impl = timed_call
t2 = time.perf_counter()
c2 = time.process_time()
k = assay.Kernel()
k.start()
t3 = time.perf_counter()
c3 = time.process_time()
infos = k.plugins()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "start_ms": (t3 - t2) * 1e3, "start_cpu_ms": (c3 - c2) * 1e3,
                  "plugin_import_ms": sum(spent.values()), "per_plugin": spent,
                  "hook_ms": sum(hooks.values()), "per_plugin_hooks": hooks,
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

ALONE = r"""
import json, sys, time
import assay
t0 = time.perf_counter()
try:
    from assay.kernel.registry import resolve_path  # imported by `import assay` already

    loaded = resolve_path(sys.argv[1])  # an entry point may name an object in a module
    ms = (time.perf_counter() - t0) * 1e3
except Exception:
    ms = None
print(json.dumps({"ms": ms}))
"""


def fresh(code: str, *args: str, **env_extra: str) -> dict:
    import os

    env_clear = {"ASSAY_LOAD_PLUGINS", "ASSAY_DISABLE_PLUGINS", "ASSAY_STRICT_PLUGINS"}
    env = {k: v for k, v in os.environ.items() if k not in env_clear}
    env.update(env_extra)
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    if out.returncode != 0:
        raise SystemExit(f"benchmark subprocess failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


KERNEL_OWNED = "builtin_tools,scripted_model,openai_compatible,markdown_report"


def bench_start_up() -> None:
    runs: list[dict] = []
    own: list[dict] = []
    scans: list[float] = []
    first = fresh(START_UP)  # may compile bytecode: printed apart, not judged
    for _ in range(RUNS):
        runs.append(fresh(START_UP))
        own.append(fresh(START_UP, ASSAY_LOAD_PLUGINS=KERNEL_OWNED))
        scans.append(fresh(SCAN)["scan_ms"])

    def med(rows: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    scan = statistics.median(scans)
    start, plugin_ms, imp = (
        med(runs, "start_ms"),
        med(runs, "plugin_import_ms"),
        med(runs, "import_ms"),
    )
    own_start = med(own, "start_ms")
    hook_ms = med(runs, "hook_ms")
    overhead = statistics.median(r["start_ms"] - r["plugin_import_ms"] - r["hook_ms"] for r in runs)
    last = runs[-1]
    cold = statistics.median(r["import_ms"] + r["start_ms"] for r in runs)
    print(
        f"start-up: import assay + Kernel().start() discovering every installed plugin, "
        f"fresh processes, median of {RUNS}"
    )
    print(
        f"  cold start-up (import assay + start)    : {cold:8.2f} ms  "
        f"[first process, compiling bytecode if needed: {first['import_ms'] + first['start_ms']:.2f} ms]"
    )
    print(f"  target <= 150 ms cold, pydantic included: {verdict(cold <= 150.0)}")
    print(
        f"  plugins loaded: {len(last['loaded'])} ({', '.join(last['loaded'])}); tools: {last['tools']}"
    )
    if last["failed"]:
        print(f"  plugins failed (isolated): {', '.join(last['failed'])}")
    print(f"  bare entry_points(group='assay') scan    : {scan:8.2f} ms  [min {min(scans):.2f} ms]")
    print(
        f"  Kernel().start(), every plugin          : {start:8.2f} ms  ({start / scan:.1f}x the scan)"
        f"  [min {min(r['start_ms'] for r in runs):.2f} ms; CPU time {med(runs, 'start_cpu_ms'):.2f} ms]"
    )
    print(f"    of which importing plugin modules     : {plugin_ms:8.2f} ms")
    print(f"    of which plugins' register hooks      : {hook_ms:8.2f} ms")
    print(
        f"    of which the kernel itself            : {overhead:8.2f} ms  ({overhead / scan:.1f}x the scan)"
    )
    slow_hooks = sorted(((ms, n) for n, ms in last["per_plugin_hooks"].items()), reverse=True)[:4]
    print(
        "    slowest register hooks (last run): "
        + ", ".join(f"{n} {ms:.1f} ms" for ms, n in slow_hooks)
    )
    print(
        f"  Kernel().start(), kernel-owned plugins  : {own_start:8.2f} ms  ({own_start / scan:.1f}x the scan)"
        f"  [min {min(r['start_ms'] for r in own):.2f} ms; CPU time {med(own, 'start_cpu_ms'):.2f} ms; {KERNEL_OWNED}]"
    )
    print(f"  import assay (pydantic, pluggy, kernel) : {imp:8.2f} ms  (part of the cold figure)")
    alone = {}
    for name, module in sorted({(ep, mod) for r in runs[-1:] for ep, mod in _entry_points()}):
        alone[name] = fresh(ALONE, module)["ms"]
    ranked = sorted(((ms, n) for n, ms in alone.items() if ms is not None), reverse=True)
    print("  each plugin module imported alone after `import assay` (fresh process each):")
    print("    " + ", ".join(f"{n} {ms:.1f} ms" for ms, n in ranked))


def _entry_points() -> list[tuple[str, str]]:
    import importlib.metadata as md

    return [(ep.name, ep.value) for ep in md.entry_points(group="assay")]


def bench_dispatch() -> None:
    sys.path.insert(0, str(ROOT))
    from assay import Kernel, Settings, hookimpl, tool

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

    kernel = Kernel(
        load_entrypoints=False, plugins=[Plugin()], settings=Settings.from_env(log_level="WARNING")
    )
    kernel.start()
    func = combine.func
    arguments = {"a": 3, "b": 2.5, "label": "x"}
    assert kernel.call_tool("combine", arguments).data == 7.5
    rounds, number = 60, 2_000

    def direct_call():
        func(3, 2.5, "x")

    def dispatched_call():
        kernel.call_tool("combine", arguments)

    # Interleaved short rounds, best of each: the minimum is the estimate least
    # disturbed by other processes on a shared machine.
    direct_times, dispatched_times = [], []
    for _ in range(rounds):
        direct_times.append(timeit.timeit(direct_call, number=number) / number * 1e6)
        dispatched_times.append(timeit.timeit(dispatched_call, number=number) / number * 1e6)
    direct, dispatched = min(direct_times), min(dispatched_times)
    overhead = dispatched - direct
    print(
        f"dispatch: 3-argument sync tool, best of {rounds} interleaved rounds of {number:,} calls"
    )
    print(f"  direct function call    : {direct:8.2f} us")
    print(
        f"  kernel.call_tool        : {dispatched:8.2f} us  ({dispatched / direct:.0f}x the direct call)"
    )
    print(f"  overhead above direct   : {overhead:8.2f} us")
    print(f"  target <= 20 us: {verdict(overhead <= 20.0)}")


if __name__ == "__main__":
    import os

    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (absolute times scale with it)"
    )
    if sys.dont_write_bytecode:  # then every process compiles the project's modules it imports
        print(
            "bytecode cache off (PYTHONDONTWRITEBYTECODE): plugin modules are compiled in every process"
        )
    bench_start_up()
    print()
    bench_dispatch()
