"""A real chat-completions HTTP server on loopback, answering from a script.

Each request takes the next reply. A reply is a :class:`Reply`: a status,
headers, and either a whole body (bytes or JSON) or a list of server-sent
events (each a JSON object, ``"[DONE]"``, raw bytes, or a callable run
between events - how a test holds the stream until the client has shown a
delta). The server records every request (path, headers, parsed body).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list (sent as JSON), bytes (sent as is)
    events: list[Any] | None = None  # a text/event-stream body instead
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # before answering
    drop_after: int | None = None  # reset the connection after this many events


def completion(
    content: str | None = None, tool_calls: list[dict] | None = None, usage=(11, 7)
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": sum(usage),
            },
        }
    )


def call(name: str, arguments: str, call_id: str = "call_a") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chunk(
    delta: dict[str, Any] | None = None, *, finish: str | None = None, usage=None
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    out: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": choices,
    }
    if usage is not None:
        out["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return out


def error(status: int, message: str, code: str | None = None, **headers: str) -> Reply:
    return Reply(
        status=status,
        body={"error": {"message": message, "type": "error", "code": code}},
        headers=headers,
    )


class FakeChatServer:
    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": json.loads(raw)}
                )
                if not outer.replies:
                    outer.errors.append("a request came after the script ended")
                    self.send_error(599)
                    return
                outer._answer(self, outer.replies.pop(0))

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def _answer(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        if reply.delay_s:
            time.sleep(reply.delay_s)
        try:
            handler.send_response(reply.status)
            for name, value in reply.headers.items():
                handler.send_header(name.replace("_", "-"), value)
            if reply.events is None:
                body = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                handler.send_header("Content-Type", "application/json")
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                handler.wfile.write(body)
                return
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Cache-Control", "no-cache")
            handler.end_headers()  # HTTP/1.0: the body ends when the connection closes
            sent = 0
            for event in reply.events:
                if callable(event):
                    event()
                    continue
                if reply.drop_after is not None and sent >= reply.drop_after:
                    reset(handler)
                    return
                if isinstance(event, bytes):
                    data = event
                else:
                    data = b"data: " + (
                        event.encode() if isinstance(event, str) else json.dumps(event).encode()
                    )
                handler.wfile.write(data + b"\n\n")
                handler.wfile.flush()
                sent += 1
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]


def reset(handler: BaseHTTPRequestHandler) -> None:
    """Drop the connection with a TCP reset (the client sees a broken read, not an end)."""
    handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    handler.close_connection = True
    handler.connection.close()


def wait_for(event: threading.Event, timeout_s: float = 10.0) -> Callable[[], None]:
    """A stream step that holds the stream until ``event`` is set (or fails the reply)."""

    def step() -> None:
        if not event.wait(timeout_s):
            raise AssertionError(
                "the client did not show the first delta before asking for the rest"
            )

    return step
