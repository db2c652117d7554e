"""One run's notebook on top of one sandbox session.

The sandbox session (a long-lived container, a fresh process per execution)
is the run's ``sandbox.python`` object. This module adds what a notebook
needs: the runner script uploaded once, the inputs already placed (so a warm
call with no new inputs is exactly one execution), the request sent to the
runner and the frame it prints back.
"""

from __future__ import annotations

import base64
import secrets
import threading
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from .frame import Frame, parse_frame
from .inputs import InputArtifact, meta_bytes

SESSION_KEY = "sandbox.python"
STATE_KEY = "code_interpreter.notebook"
RUNNER_NAME = "assay_ci_runner"
RUNNER_DIR = ".assay-runner"
RUNNER_MISSING = "ASSAY-RUNNER-MISSING"


# Package module -> the name it is imported under inside the sandbox.
SANDBOX_MODULES = {
    "sandbox_runner.py": f"{RUNNER_NAME}.py",
    "sandbox_tables.py": "assay_ci_tables.py",
    "sandbox_charts.py": "assay_ci_charts.py",
    "sandbox_results.py": "assay_ci_results.py",
}


def module_source(name: str) -> bytes:
    return resources.files(__package__).joinpath(name).read_bytes()


@dataclass
class CallOutcome:
    """What one execution gave back: the sandbox's result and the runner's frame (or None)."""

    execution: Any  # kernel.sandbox.ExecutionResult
    frame: Frame | None
    problem: str | None = None  # why there is no frame
    state_lost: bool = False


@dataclass
class Notebook:
    """Bookkeeping for one sandbox session: runner and inputs already inside it."""

    session: Any  # kernel.sandbox.SandboxSession
    runner_ready: bool = False
    uploaded: dict[str, str] = field(default_factory=dict)  # artifact id -> sha256
    state_saved: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def workdir(self) -> str:
        return getattr(self.session, "workdir", "/workspace")

    def ensure_runner(self) -> None:
        if not self.runner_ready:
            # Its own directory, owned by the sandbox's keeper: the code can read it, not change it.
            for source, target in SANDBOX_MODULES.items():
                self.session.put_file(f"{RUNNER_DIR}/{target}", module_source(source), read_only=True)
            self.runner_ready = True

    def place_inputs(self, inputs: list[InputArtifact]) -> None:
        """Upload the inputs not already in the sandbox (read-only)."""
        for item in inputs:
            if self.uploaded.get(item.artifact_id) == item.sha256:
                continue
            self.session.put_file(item.path, item.data, read_only=True)
            self.session.put_file(item.meta_path, meta_bytes(item), read_only=True)
            self.uploaded[item.artifact_id] = item.sha256

    def forget_input(self, artifact_id: str) -> None:
        self.uploaded.pop(artifact_id, None)

    def execute(self, code: str, inputs: list[InputArtifact], limits: dict[str, int],
                timeout_s: float | None) -> CallOutcome:
        nonce = secrets.token_hex(8)
        request = {
            "nonce": nonce, "code": code, "workdir": self.workdir, "limits": limits,
            "inputs": [i.manifest() for i in inputs], "expect_state": self.state_saved,
        }
        bootstrap = _bootstrap(request)
        execution = self.session.run_code(bootstrap, timeout_s=timeout_s)
        if RUNNER_MISSING in execution.stdout[:200]:
            # The sandbox's working directory was reset (for example after a host-side kill):
            # put the runner back and run once more; the notebook state is gone.
            lost = self.state_saved
            self.runner_ready, self.uploaded, self.state_saved = False, {}, False
            self.ensure_runner()
            self.place_inputs(inputs)
            request["expect_state"] = False
            execution = self.session.run_code(_bootstrap(request), timeout_s=timeout_s)
            outcome = self._outcome(execution, nonce)
            outcome.state_lost = lost
            return outcome
        return self._outcome(execution, nonce)

    def _outcome(self, execution: Any, nonce: str) -> CallOutcome:
        frame, problem = parse_frame(execution.stdout, nonce)
        if frame is not None and frame.frame_file:
            try:
                raw = self.session.get_file(frame.frame_file)
                frame, problem = parse_frame(raw.decode("utf-8", "replace"), nonce, bare=True)
            except Exception as exc:  # noqa: BLE001 - reported as a protocol problem
                frame, problem = None, f"the runner's reply file could not be read: {exc}"
        if frame is not None and frame.status in ("succeeded", "failed") and frame.state_error is None:
            self.state_saved = True
        return CallOutcome(execution, frame, problem)

    def fetch(self, item: dict[str, Any], max_bytes: int) -> bytes:
        """A produced file's bytes: carried in the frame, or downloaded."""
        if item.get("data_b64"):
            return base64.b64decode(item["data_b64"])
        return self.session.get_file(item["path"], max_bytes=max_bytes)


def _bootstrap(request: dict[str, Any]) -> str:
    """The program each call runs: import the runner, hand it the request as a Python literal."""
    # The runner's directory is read-only; its bytecode is cached under .assay/pycache so
    # that warm calls do not compile it again.
    return (
        "import sys\n"
        "sys.dont_write_bytecode = False\n"
        "sys.pycache_prefix = '.assay/pycache'\n"
        f"sys.path.insert(0, {RUNNER_DIR!r})\n"
        "try:\n"
        f"    import {RUNNER_NAME} as _r\n"
        "except ImportError:\n"
        f"    print({RUNNER_MISSING!r}); raise SystemExit(3)\n"
        "sys.dont_write_bytecode = True\n"
        f"_r.main({request!r})\n"
    )
