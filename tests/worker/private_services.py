"""Services a fault test owns, so it may kill them: a PostgreSQL cluster and a Redis server of its own.

fsync is off (the data outlives the server, not the machine: a commit still reaches the OS
before it returns). PostgreSQL refuses to run as root, so the cluster is made and run as the
``postgres`` user (``runuser``) with the binaries under
``/usr/lib/postgresql/*/bin``, in a temporary directory, on a free port; it
is stopped with ``pg_ctl -m immediate`` (every backend killed, no checkpoint:
as a crash) and started again on the same port. The Redis server runs with
no persistence at all (no RDB, no AOF): killed and restarted, it comes back
empty. Every process is stopped by the pid this module started.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.conftest import require


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class PrivatePostgres:
    """A PostgreSQL cluster in a temporary directory, owned by this test, killable."""

    def __init__(self) -> None:
        bindir = _pg_bin()
        require(
            bindir is not None and shutil.which("runuser") is not None,
            "PostgreSQL binaries and runuser",
        )
        self.bin = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="assay-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
        )
        self.start()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        out = subprocess.run(
            [*self.as_user, str(self.bin / tool), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if out.returncode != 0:
            raise RuntimeError(f"{tool} failed: {out.stdout}{out.stderr}")

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=200"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.dir / "log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        """As a crash: every backend killed at once, no shutdown checkpoint."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def down_for(self, seconds: float) -> None:
        self.stop()
        time.sleep(seconds)
        self.start()

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().splitlines()[0])

    def _processes(self) -> list[int]:
        """The postmaster and its children (read from /proc: this cluster's processes only)."""
        root = self.postmaster_pid()
        pids = [root]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == root:
                    pids.append(int(entry.name))
        return pids

    def freeze(self) -> None:
        """SIGSTOP the cluster: connections and statements hang instead of failing."""
        for pid in self._processes():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in self._processes():
            os.kill(pid, signal.SIGCONT)

    def close(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        except RuntimeError:
            pass  # already stopped
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivateRedis:
    """A redis-server on a free port, without persistence; SIGKILLed and started again by this test."""

    def __init__(self) -> None:
        require(shutil.which("redis-server") is not None, "redis-server")
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="assay-redis-"))
        self.proc: subprocess.Popen | None = None
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while not answers(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
