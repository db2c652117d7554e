"""Reading an engine's exec stream on the host: the stream interface and its reader thread.

Engines subclass :class:`ExecStream`. :class:`Pump` reads one on its own
thread into two :class:`~assay.kernel.sandbox.results.OutputCapture` objects,
so the caller waits with a deadline whatever the engine does; for executions
it also stops reading a stream that is far past its cap (:func:`flood_limit`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from assay.kernel.sandbox.results import OutputCapture

__all__ = ["ExecStream", "FLOOD_SLACK", "Pump", "flood_limit"]

# Bytes past twice a stream's cap at which the host stops reading it (see flood_limit).
FLOOD_SLACK = 4 * 1024**2


class Pump(threading.Thread):
    """Reads an exec stream into two captures on its own thread, so the caller can wait with a deadline.

    With ``flood_stop`` it stops reading once a stream is far past its capture's limit
    (:func:`flood_limit`) and sets ``flooded``: the launcher never forwards that much, and
    draining a flood costs the host's CPU, not the sandbox's quota.
    """

    def __init__(
        self,
        stream: ExecStream,
        out: OutputCapture,
        err: OutputCapture,
        *,
        flood_stop: bool = False,
    ) -> None:
        super().__init__(daemon=True, name="assay-sandbox-stream")
        self.stream, self.out, self.err = stream, out, err
        self.error: BaseException | None = None
        self.abandoned = False
        self.flooded = False
        self._flood_stop = flood_stop

    def run(self) -> None:
        out_max, err_max = flood_limit(self.out.limit), flood_limit(self.err.limit)
        try:
            for fd, chunk in self.stream:
                if self.abandoned:
                    return
                (self.out if fd == 1 else self.err).write(chunk)
                if self._flood_stop and (self.out.total > out_max or self.err.total > err_max):
                    self.flooded = True
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            self.error = exc

    def wait(self, timeout_s: float) -> bool:
        """True when the stream ended (or was given up as a flood) within ``timeout_s``."""
        self.join(max(0.0, timeout_s))
        return not self.is_alive()


def flood_limit(cap: int) -> int:
    """Bytes of one stream past which the host stops reading it: twice its cap and 4 MiB more
    (the launcher forwards at most the cap, plus its nonce line and trailer on stderr)."""
    return 2 * cap + FLOOD_SLACK


class ExecStream:
    """A running exec: iterate ``(fd, bytes)`` chunks (fd 1 or 2), then ask the exit code.

    Engines subclass it. ``close`` must make a blocked iteration end soon.
    """

    def __iter__(self) -> Iterator[tuple[int, bytes]]:  # pragma: no cover - interface
        raise NotImplementedError

    def exit_code(self) -> int | None:  # pragma: no cover - interface
        raise NotImplementedError

    def close(self) -> None:
        pass
