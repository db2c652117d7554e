"""A process that opens podman sandbox sessions, prints their container ids, then waits.

Used by the orphan tests: it is SIGKILLed or SIGTERMed by the test.
"""

import sys
import time

from assay.plugins.sandbox import SandboxConfig, SandboxManager
from assay.sandbox_runtimes.podman import PodmanRuntime

count = int(sys.argv[1]) if len(sys.argv) > 1 else 2
manager = SandboxManager(SandboxConfig.from_env(runtime="podman"), {"podman": PodmanRuntime})
sessions = [manager.open_session() for _ in range(count)]
print(" ".join(s.status().container for s in sessions), flush=True)
if len(sys.argv) > 2 and sys.argv[2] == "exit":
    sys.stdin.readline()  # wait until the test has seen the containers, then exit without closing
    sys.exit(0)
time.sleep(600)
