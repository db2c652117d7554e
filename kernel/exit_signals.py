"""Clean-up on SIGTERM/SIGINT, for whatever the process holds outside itself (sandbox containers).

Python lets only the main thread install signal handlers. A sandbox is
often first used from a worker thread (``acall_tool`` runs tools in one), so
the handler cannot wait for that first use: the kernel installs it when it
is made (normally on the main thread), and the sandbox manager tries again
on each use until one happens on the main thread. Callbacks registered with
:func:`on_exit_signal` run once per signal, then the previous handler runs
(or the default action, re-raised so the exit status still says "killed by
SIGTERM"). An ignored signal stays ignored, and SIGINT's default
``KeyboardInterrupt`` is left alone: the interpreter then exits normally and
``atexit`` clean-up runs.

SIGTERM, what ``timeout``, ``kill`` and systemd send, stops work in progress
the way Ctrl-C does when the work runs under :func:`cancel_on_sigterm`
(``assay ask`` does): the awaited task is cancelled, so a running SQL query
is cancelled on its server and the run is recorded ``cancelled``, instead of
the process dying while the database goes on until its statement timeout.
The caller then ends the process with :func:`die_of`, so its exit status
still says "killed by SIGTERM".

Light on purpose: imported by :mod:`assay.kernel.kernel` at start-up
(``asyncio`` is imported there already).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .log import get_logger

log = get_logger("assay.kernel.exit_signals")

T = TypeVar("T")

_CALLBACKS: list[Callable[[], None]] = []
_LOCK = threading.Lock()
_INSTALLED = False


def on_exit_signal(callback: Callable[[], None]) -> None:
    """Run ``callback`` when SIGTERM/SIGINT end the process (registered once per callable)."""
    with _LOCK:
        if callback not in _CALLBACKS:
            _CALLBACKS.append(callback)


def installed() -> bool:
    """Whether the handlers are in place (they can only be installed from the main thread)."""
    return _INSTALLED


def install() -> bool:
    """Install the handlers if this is the main thread; True once they are installed.

    Cheap to call again: from a worker thread it returns False at once, and
    the next call from the main thread installs them.
    """
    global _INSTALLED
    if _INSTALLED:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    with _LOCK:
        if _INSTALLED:
            return True
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(signum)
            if previous in (signal.SIG_IGN, signal.default_int_handler) or previous is None:
                continue  # ignored, or KeyboardInterrupt -> the normal exit runs atexit

            def handler(num: int, frame: Any, _previous: Any = previous) -> None:
                run_callbacks()
                if callable(_previous):
                    _previous(num, frame)
                else:
                    signal.signal(num, signal.SIG_DFL)
                    os.kill(os.getpid(), num)

            signal.signal(signum, handler)
        _INSTALLED = True
    return True


def run_callbacks() -> None:
    for callback in list(_CALLBACKS):
        try:
            callback()
        except Exception as exc:  # noqa: BLE001 - one failing clean-up must not stop the others
            log.warning(
                "exit_callback_failed",
                callback=getattr(callback, "__qualname__", repr(callback)),
                error=repr(exc),
            )


class Terminated(Exception):
    """SIGTERM cancelled the awaited work; its clean-up has run. End the process with :func:`die_of`."""

    signum = signal.SIGTERM


async def cancel_on_sigterm(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` in the current task; a SIGTERM meanwhile cancels the task as Ctrl-C does (every
    ``finally`` and cancellation path runs: a running query is cancelled on its server), then raises
    :class:`Terminated`. A second SIGTERM while that clean-up runs ends the process at once. Off the main
    thread (where no signal handler can be set) it only awaits."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    previous = signal.getsignal(signal.SIGTERM)
    received: list[int] = []

    def on_sigterm() -> None:
        if received or task is None:
            _restore(previous)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        received.append(signal.SIGTERM)
        log.warning(
            "sigterm_cancelling",
            detail="cancelling the work in progress; a second SIGTERM ends at once",
        )
        task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    except (
        ValueError,
        RuntimeError,
        NotImplementedError,
    ):  # not the main thread, or no signals here
        return await awaitable
    try:
        return await awaitable
    except asyncio.CancelledError:
        if received and task is not None and task.uncancel() == 0:
            raise Terminated() from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)  # leaves SIG_DFL: put back what was there
        _restore(previous)


def _restore(previous: Any) -> None:
    signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def die_of(signum: int) -> None:
    """End the process as ``signum`` would have, after the exit callbacks ran (sandbox clean-up): the
    exit status says "killed by SIGTERM" to ``timeout``, systemd and shells (143)."""
    run_callbacks()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
