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

Light on purpose: imported by :mod:`assay.kernel.kernel` at start-up.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable

from .log import get_logger

log = get_logger("assay.kernel.exit_signals")

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
            log.warning("exit_callback_failed", callback=getattr(callback, "__qualname__", repr(callback)),
                        error=repr(exc))
