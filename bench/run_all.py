"""Run every benchmark in bench/, one after another, each in its own process.

    .venv/bin/python bench/run_all.py            # all of them
    .venv/bin/python bench/run_all.py kernel sql # only bench_kernel.py and bench_sql.py

Each benchmark prints its figures beside a baseline measured in the same run,
as ratios (the machines are noisy, so absolute times are not compared across
runs). This script only sequences them and reports which exited non-zero.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = [
    "kernel",
    "evidence",
    "sql",
    "sandbox",
    "code_interpreter",
    "knowledge",
    "agent",
    "reports",
    "service",
    "workers",
]  # bench_workers.py needs PostgreSQL and Redis; without them it says so and exits 0


def main(argv: list[str]) -> int:
    names = argv or ORDER
    unknown = [n for n in names if not (HERE / f"bench_{n}.py").exists()]
    if unknown:
        print(
            f"error: no benchmark named {', '.join(unknown)} (have: {', '.join(ORDER)})",
            file=sys.stderr,
        )
        return 2
    failed = []
    for name in names:
        print(f"\n######## bench_{name}.py ########", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(HERE / f"bench_{name}.py")], cwd=HERE.parent)
        print(
            f"######## bench_{name}.py: exit {code} in {time.perf_counter() - started:.0f} s",
            flush=True,
        )
        if code:
            failed.append(name)
    if failed:
        print(f"\nbenchmarks that exited non-zero: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
