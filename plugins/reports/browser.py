"""One headless Chromium kept for PDF renders, driven over its DevTools pipe.

Starting Chromium costs seconds; printing a page in a running one costs a
fraction of that. :func:`shared` is the process's one browser: started on the
first render, started again when it has died, closed by :func:`close_shared`
(the service's shutdown, and at exit). Every render gets a browser context of
its own (no cookies, storage or cache carried between reports) and a fresh
page, and several renders may go at once (the service's report pool has
``report_workers`` threads).

The DevTools protocol runs over ``--remote-debugging-pipe`` (Chromium reads
commands on fd 3 and writes answers on fd 4, each a JSON message ended by a
NUL byte): no port is opened, so no other local process can drive the browser,
and no client library is needed.
"""

from __future__ import annotations

import atexit
import base64
import itertools
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from assay import AssayError

REPORT_PDF_FAILED = "REPORT_PDF_FAILED"
START_TIMEOUT_S = 60.0


class BrowserGone(Exception):
    """The browser process ended (or its pipe closed) while a command waited."""


class Browser:
    """A Chromium process and the DevTools session over its pipe."""

    def __init__(self, args: list[str], env: dict[str, str], home: str) -> None:
        self.home = home
        self.args = args
        self._ids = itertools.count(1)
        self._waiting: dict[int, queue.Queue] = {}
        self._events: dict[str, queue.Queue] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.dead = False
        commands_r, self._commands_w = os.pipe()
        self._answers_r, answers_w = os.pipe()
        self._stderr = open(Path(home) / "stderr.log", "wb")  # noqa: SIM115 (closed in close())
        # the child's fd 3 and 4 are the pipe's ends; bash moves them there (no preexec_fn in threads;
        # dash takes no descriptor past 9)
        wrapper = [
            shutil.which("bash") or "/bin/bash",
            "-c",
            f'exec "$@" 3<&{commands_r} 4>&{answers_w}',
            "bash",
            *args,
            "--remote-debugging-pipe",
        ]
        try:
            self.process = subprocess.Popen(
                wrapper,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                env=env,
                pass_fds=(commands_r, answers_w),
                start_new_session=True,
            )
        finally:
            os.close(commands_r)
            os.close(answers_w)
        self._reader = threading.Thread(target=self._read, name="assay-chromium-pipe", daemon=True)
        self._reader.start()

    # --- the pipe --------------------------------------------------------------------

    def _read(self) -> None:
        buffer = b""
        try:
            while chunk := os.read(self._answers_r, 1 << 16):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for raw in messages:
                    self._dispatch(json.loads(raw))
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self.dead = True
                for waiter in self._waiting.values():
                    waiter.put(None)
                for events in self._events.values():
                    events.put(None)

    def _dispatch(self, message: dict[str, Any]) -> None:
        with self._lock:
            if "id" in message:
                waiter = self._waiting.pop(message["id"], None)
                if waiter is not None:
                    waiter.put(message)
            elif message.get("sessionId") in self._events:
                self._events[message["sessionId"]].put(message)

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = None,
        timeout: float = START_TIMEOUT_S,
    ) -> dict[str, Any]:
        """Send one command and wait for its answer (``BrowserGone`` if the browser ends first)."""
        number = next(self._ids)
        waiter: queue.Queue = queue.Queue(maxsize=1)
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        with self._lock:
            if self.dead:
                raise BrowserGone(method)
            self._waiting[number] = waiter
        try:
            with self._write_lock:
                os.write(self._commands_w, json.dumps(message).encode() + b"\0")
        except OSError:
            raise BrowserGone(method) from None
        try:
            answer = waiter.get(timeout=timeout)
        except queue.Empty:
            with self._lock:
                self._waiting.pop(number, None)
            raise TimeoutError(method) from None
        if answer is None:
            raise BrowserGone(method)
        if "error" in answer:
            raise AssayError(
                REPORT_PDF_FAILED,
                f"Chromium refused {method}: {answer['error'].get('message')}",
                "Render --format html to check the page.",
            )
        return answer.get("result") or {}

    # --- one render ------------------------------------------------------------------

    def print_pdf(self, url: str, *, timeout: float) -> bytes:
        """Open ``url`` in a fresh context and page, wait for its load event, print it to PDF."""
        context = self.call("Target.createBrowserContext", {"disposeOnDetach": True})[
            "browserContextId"
        ]
        try:
            target = self.call(
                "Target.createTarget", {"url": "about:blank", "browserContextId": context}
            )
            session = self.call(
                "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
            )
            sid = session["sessionId"]
            events: queue.Queue = queue.Queue()
            with self._lock:
                self._events[sid] = events
            try:
                self.call("Page.enable", session=sid)
                self.call("Page.navigate", {"url": url}, session=sid, timeout=timeout)
                while True:
                    event = events.get(timeout=timeout)
                    if event is None:
                        raise BrowserGone("Page.loadEventFired")
                    if event.get("method") == "Page.loadEventFired":
                        break
                printed = self.call(
                    "Page.printToPDF",
                    {
                        "printBackground": True,
                        "displayHeaderFooter": False,
                        "preferCSSPageSize": True,
                    },
                    session=sid,
                    timeout=timeout,
                )
            finally:
                with self._lock:
                    self._events.pop(sid, None)
            return base64.b64decode(printed["data"])
        except queue.Empty:
            raise TimeoutError("Page.loadEventFired") from None
        finally:
            if not self.dead:
                try:
                    self.call(
                        "Target.disposeBrowserContext", {"browserContextId": context}, timeout=10
                    )
                except (BrowserGone, TimeoutError, AssayError):
                    pass

    def stderr_tail(self) -> str:
        try:
            lines = (
                (Path(self.home) / "stderr.log").read_text("utf-8", "replace").strip().splitlines()
            )
        except OSError:
            return ""
        return " | ".join(lines[-3:])[:400]

    def close(self) -> None:
        """End the browser (politely, then by force) and remove its profile."""
        if self.process.poll() is None:
            try:
                self.call("Browser.close", timeout=5)
            except (BrowserGone, TimeoutError, AssayError):
                pass
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait(timeout=5)
        for fd in (self._commands_w, self._answers_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stderr.close()
        shutil.rmtree(self.home, ignore_errors=True)


def start(args: list[str], env_for: Any) -> Browser:
    """Start Chromium with ``args`` (its profile and HOME in a new temporary directory) and check it
    answers; ``REPORT_PDF_FAILED`` with its exit status and stderr if it does not."""
    home = tempfile.mkdtemp(prefix="assay-chromium-")
    try:
        browser = Browser([*args, f"--user-data-dir={Path(home) / 'profile'}"], env_for(home), home)
    except OSError as exc:
        shutil.rmtree(home, ignore_errors=True)
        raise AssayError(
            REPORT_PDF_FAILED,
            f"Chromium could not start: {exc}",
            "Check ASSAY_CHROMIUM / the chromium package.",
        ) from None
    try:
        browser.call("Browser.getVersion", timeout=START_TIMEOUT_S)
    except (BrowserGone, TimeoutError):
        try:
            code = browser.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        tail = browser.stderr_tail()
        browser.close()
        said = (
            f"exited {code}"
            if code is not None
            else f"did not answer within {START_TIMEOUT_S:.0f} s"
        )
        raise AssayError(
            REPORT_PDF_FAILED,
            f"Chromium {said} without a PDF: {tail}",
            "Run the same with --format html to check the page.",
        ) from None
    return browser


_shared: Browser | None = None
_shared_lock = threading.Lock()
starts = 0  # how many browsers this process started (the tests read it)


def shared(args: list[str], env_for: Any) -> Browser:
    """The process's browser: the running one, or a new one if there is none or it died."""
    global _shared, starts
    with _shared_lock:
        if _shared is not None and (
            _shared.dead or _shared.process.poll() is not None or _shared.args[: len(args)] != args
        ):  # died, or another binary asked
            _shared.close()
            _shared = None
        if _shared is None:
            _shared = start(args, env_for)
            starts += 1
        return _shared


def discard(browser: Browser) -> None:
    """Close ``browser`` (one that timed out or broke) and forget it if it is the shared one."""
    global _shared
    with _shared_lock:
        if _shared is browser:
            _shared = None
    browser.close()


def close_shared() -> None:
    """Close the process's browser, if one was started (the service's shutdown; at exit)."""
    global _shared
    with _shared_lock:
        browser, _shared = _shared, None
    if browser is not None:
        browser.close()


atexit.register(close_shared)
