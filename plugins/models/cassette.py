"""Cassettes: model exchanges recorded to JSON Lines, and the recorder.

A cassette is a ``.jsonl`` file. Its first line is a header
``{"cassette": 1, "model": "PROVIDER:NAME", "created": "ISO time"}``; each
further line is one exchange, written (and flushed) as it happens, so a run
that crashes keeps what it did:

``{"turn": N, "request": {"messages": [...], "tools": [...]}, "response": {...}}``
  ``response`` is the assistant message (role, content, tool_calls, usage);
  ``deltas`` (when the caller streamed) the text pieces in the order shown.
``{"turn": N, "request": {...}, "error": {"code", "message", "hint"}}``
  the provider raised an :class:`~assay.AssayError` (a failure replays too).

Requests are stored in their wire form (:func:`request_record`): what a
provider sends, without the token usage a message carries. The replay model
(:mod:`.replay`) compares each new request with the recorded one.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay import AssayError
from assay.kernel.models import Model, _accepts_on_text

from .errors import MODEL_CASSETTE_INVALID

if TYPE_CHECKING:
    from assay.kernel.messages import Message
    from assay.kernel.models import TextSink

FORMAT_VERSION = 1


def message_record(message: Message) -> dict[str, Any]:
    """A message as sent on the wire (no ``usage``; ``arguments`` as text)."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments_json()}
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None and message.role == "tool":
        out["name"] = message.name
    return out


def request_record(messages: list[Message], tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"messages": [message_record(m) for m in messages], "tools": tools}


def response_record(message: Message) -> dict[str, Any]:
    return message.model_dump(mode="json", exclude_none=True, exclude_defaults=True) | {
        "role": "assistant"
    }


def model_label(model: Model) -> str:
    provider = getattr(type(model), "model_id", "") or type(model).__name__
    name = getattr(getattr(model, "settings", None), "model", None) or getattr(
        model, "model_name", None
    )
    return f"{provider}:{name}" if name else provider


class RecordingModel(Model):
    """Wraps a model; every exchange goes to the cassette at ``path`` (created anew).

    The wrapped model answers as usual; its answer, or the
    :class:`~assay.AssayError` it raised, is recorded and passed on unchanged.
    """

    model_id = "recording"

    def __init__(self, inner: Model, path: str | Path) -> None:
        self.inner = inner
        self.path = Path(path)
        self.model_name = model_label(inner)
        self.turns = 0
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w", encoding="utf-8")
        except OSError as exc:
            raise AssayError(
                MODEL_CASSETTE_INVALID,
                f"cannot write the cassette {self.path}: {exc.strerror or exc}",
                "Choose a writable path for --record.",
            ) from None
        self._write(
            {
                "cassette": FORMAT_VERSION,
                "model": self.model_name,
                "created": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        )

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: TextSink | None = None,
    ) -> Message:
        request = request_record(messages, tools)
        deltas, sink = self._sink(on_text)
        try:
            if sink is None or not _accepts_on_text(type(self.inner).complete):
                reply = self.inner.complete(messages, tools)
            else:
                reply = self.inner.complete(messages, tools, on_text=sink)
        except AssayError as exc:
            self._exchange(request, error=exc)
            raise
        self._exchange(request, reply=reply, deltas=deltas if on_text is not None else None)
        return reply

    async def acomplete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: TextSink | None = None,
    ) -> Message:
        request = request_record(messages, tools)
        deltas, sink = self._sink(on_text)
        try:
            reply = await self.inner.acomplete(messages, tools, on_text=sink)
        except AssayError as exc:
            self._exchange(request, error=exc)
            raise
        self._exchange(request, reply=reply, deltas=deltas if on_text is not None else None)
        return reply

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def _sink(self, on_text: TextSink | None) -> tuple[list[str], TextSink | None]:
        deltas: list[str] = []
        if on_text is None:
            return deltas, None

        def sink(delta: str) -> None:
            deltas.append(delta)
            on_text(delta)

        return deltas, sink

    def _exchange(
        self,
        request: dict[str, Any],
        *,
        reply: Message | None = None,
        error: AssayError | None = None,
        deltas: list[str] | None = None,
    ) -> None:
        with self._lock:
            self.turns += 1
            line: dict[str, Any] = {"turn": self.turns, "request": request}
            if error is not None:
                line["error"] = {"code": error.code, "message": error.message, "hint": error.hint}
            else:
                assert reply is not None
                line["response"] = response_record(reply)
                if deltas is not None:
                    line["deltas"] = deltas
            self._write(line, locked=True)

    def _write(self, line: dict[str, Any], *, locked: bool = False) -> None:
        text = json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n"
        if locked:
            self._file.write(text)
            self._file.flush()
            return
        with self._lock:
            self._file.write(text)
            self._file.flush()


def read_cassette(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the exchanges of a cassette, checked line by line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise AssayError(
            MODEL_CASSETTE_INVALID,
            f"cannot read the cassette {path}: {exc.strerror or exc}",
            "Check the path given to replay: (record a cassette with --record).",
        ) from None
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise _bad(path, number, f"not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise _bad(path, number, "not a JSON object")
        records.append((number, record))
    if not records or records[0][1].get("cassette") != FORMAT_VERSION:
        raise _bad(path, 1, f'no cassette header (expected {{"cassette": {FORMAT_VERSION}, ...}})')
    exchanges: list[dict[str, Any]] = []
    for number, record in records[1:]:
        request = record.get("request")
        if (
            record.get("turn") != len(exchanges) + 1
            or not isinstance(request, dict)
            or not isinstance(request.get("messages"), list)
            or not (
                isinstance(record.get("response"), dict) or isinstance(record.get("error"), dict)
            )
        ):
            raise _bad(
                path,
                number,
                f"not exchange {len(exchanges) + 1} (turn, request, response or error)",
            )
        exchanges.append(record)
    return records[0][1], exchanges


def _bad(path: Path, line: int, why: str) -> AssayError:
    return AssayError(
        MODEL_CASSETTE_INVALID,
        f"{path} line {line}: {why}",
        "A cassette is written by --record; record it again rather than editing it by hand.",
    )
