"""A deadline for a request's headers: uvicorn's HTTP protocol with a timer from each request's start.

uvicorn closes a keep-alive connection that stays idle after a response
(``timeout_keep_alive``), but a connection that opens and then sends nothing,
or sends its headers a byte at a time, is held for as long as the client
likes: a thousand such sockets hold a thousand of the server's slots. This
protocol starts a timer when the connection is made and when a request
begins, stops it when the request's headers are complete, and closes the
connection if it fires first. Built on uvicorn's httptools protocol (the
``serve`` extra installs httptools): its ``connection_made``,
``on_message_begin``, ``on_headers_complete`` and ``connection_lost`` are
extended, nothing else.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class HeaderDeadlineProtocol(HttpToolsProtocol):
    header_timeout_s: float = 10.0

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._header_timer: Any = None
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _disarm(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()


def with_header_timeout(seconds: float) -> type[HeaderDeadlineProtocol]:
    """The protocol class with ``seconds`` as its deadline (uvicorn makes one instance per connection)."""
    return type("HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout_s": seconds})
