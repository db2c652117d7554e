"""``assay chat`` through a pseudo-terminal: each line continues the thread, Ctrl-C cancels the step, Ctrl-D ends."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import sqlite3
import sys
import time

from assay import Settings
from assay.plugins.runs import open_store

# as long as the knob says: the test makes it endless for the question it cancels, then short
COUNT_SQL = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < (SELECT n FROM knob)) "
    "SELECT COUNT(*) AS n FROM c"
)


class Terminal:
    """A child process on a pseudo-terminal, read until what a test waits for appears."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        pid, fd = pty.fork()
        if (
            pid == 0
        ):  # the child: Ctrl-C must raise KeyboardInterrupt (a background test run ignores SIGINT)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execve(argv[0], argv, env)
        self.pid, self.fd, self.seen = pid, fd, ""

    def expect(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r}; the terminal shows:\n{self.seen}"
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if ready:
                try:
                    self.seen += os.read(self.fd, 65536).decode(errors="replace")
                except OSError:  # the child ended
                    break
        assert text in self.seen, self.seen
        return self.seen

    def send(self, data: str) -> None:
        os.write(self.fd, data.encode())

    def wait(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if select.select([self.fd], [], [], 0.05)[
                0
            ]:  # never a blocking read: the child may be silent
                try:
                    self.seen += os.read(self.fd, 65536).decode(errors="replace")
                except OSError:
                    pass
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.pid = 0  # reaped: never signalled again
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        raise AssertionError(f"the chat did not end:\n{self.seen}")

    def close(self) -> None:
        if self.pid:  # still ours and not reaped
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = 0
        os.close(self.fd)


def _set_knob(db, n: int) -> None:
    conn = sqlite3.connect(db)
    conn.execute("UPDATE knob SET n = ?", (n,))
    conn.commit()
    conn.close()


def _wait_for_event(home, kind: str, before: set[str], timeout: float = 60) -> str:
    """The id of a run not in ``before`` once it has an event of ``kind``."""
    store = open_store(Settings.from_env(home=home))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for record in store.list(limit=10):
            if record.run_id not in before and any(
                e.kind == kind for e in store.events(record.run_id)
            ):
                return record.run_id
        time.sleep(0.1)
    raise AssertionError(f"no new run reached {kind}")


def test_chat_continues_the_thread_ctrl_c_cancels_the_step_and_ctrl_d_ends(
    shop_db, tmp_path, monkeypatch
):
    conn = sqlite3.connect(shop_db)
    conn.execute("CREATE TABLE knob (n INTEGER)")
    conn.execute("INSERT INTO knob VALUES (3)")
    conn.commit()
    conn.close()
    script = tmp_path / "chat_script.json"
    script.write_text(
        json.dumps(
            [{"tool": "sql_query", "arguments": {"sql": COUNT_SQL}}, {"text": "the count is 3"}]
        )
    )
    home = tmp_path / "home"
    env = {**os.environ, "ASSAY_HOME": str(home), "TERM": "dumb"}
    env.pop("ASSAY_CATALOG_URL", None)
    term = Terminal(
        [
            sys.executable,
            "-m",
            "assay.kernel.cli",
            "chat",
            "--db",
            f"sqlite:///{shop_db}",
            "--model",
            f"scripted:{script}",
        ],
        env,
    )
    try:
        term.expect("assay> ")
        term.send("how many?\r")  # the first question: answered
        term.expect("status: answered")
        first = open_store(Settings.from_env(home=home)).list(limit=1)[0]

        _set_knob(shop_db, 10**12)  # the next step's query runs until it is cancelled
        term.send("and again?\r")
        second_id = _wait_for_event(home, "tool_started", {first.run_id})
        term.send("\x03")  # Ctrl-C during the step
        term.expect("cancelled: run")
        term.expect("assay> ")

        _set_knob(shop_db, 3)
        term.send("once more?\r")
        term.expect("status: answered")
        deadline = (
            time.monotonic() + 60
        )  # the prompt is back (readline has the terminal): then Ctrl-D
        while term.seen.count("assay> ") < 4:
            assert time.monotonic() < deadline, term.seen
            if select.select([term.fd], [], [], 0.2)[0]:
                term.seen += os.read(term.fd, 65536).decode(errors="replace")
        term.send("\x04")  # Ctrl-D at the prompt
        assert term.wait() == 0, term.seen
    finally:
        term.close()
    store = open_store(Settings.from_env(home=home))
    runs = {r.run_id: r for r in store.list(limit=10)}
    assert len(runs) == 3, runs
    second = runs[second_id]
    third = next(r for r in runs.values() if r.run_id not in (first.run_id, second_id))
    assert second.status == "cancelled" and second.parent_run_id == first.run_id
    assert third.status == "answered" and third.parent_run_id == second_id
    assert store.get(first.run_id).status == "answered"  # the earlier run is untouched
    assert (home / "chat_history").read_text().splitlines()[-3:] == [
        "how many?",
        "and again?",
        "once more?",
    ]
