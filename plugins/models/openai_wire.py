"""The chat-completions wire format, without the transport.

What the OpenAI-compatible provider sends (:func:`request_body`), how it
turns what comes back into an assistant :class:`~assay.kernel.messages.Message`
(:class:`Assembler`: a whole completion, or a server-sent-events stream of
text and tool-call deltas), and what an HTTP error means
(:func:`status_error`, :func:`retry_after_s`). No I/O here, so every rule is
testable on plain data and the transport (:mod:`.openai_compatible`) only
moves bytes and retries.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from assay import AssayError
from assay.kernel.messages import Message, ToolCall, Usage

from .errors import (
    MODEL_AUTH_FAILED,
    MODEL_NAME_UNKNOWN,
    MODEL_RATE_LIMITED,
    MODEL_REQUEST_FAILED,
    MODEL_RESPONSE_INVALID,
)

if TYPE_CHECKING:
    from assay.kernel.models import TextSink

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
"""Statuses worth another try: rate limits, overload, a gateway or server hiccup."""

_MODEL_MISSING = re.compile(
    r"model\b.*\b(not found|does not exist|not exist|unknown|no such)", re.IGNORECASE | re.DOTALL
)
_CONTEXT_FULL = re.compile(
    r"context (window|length|size)|exceeds? the (available )?context|too many tokens", re.IGNORECASE
)


def wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The messages as the server takes them: ``content`` is always a string.

    An assistant turn that only called tools has no text; it goes out with
    ``"content": ""``, never ``null``: OpenAI takes either, but llama.cpp's
    server (and other strict schemas) refuse ``null``.
    """
    out = []
    for message in messages:
        wire = message.to_openai()
        if wire.get("content") is None:
            wire["content"] = ""
        out.append(wire)
    return out


def request_body(
    model: str,
    messages: list[Message],
    tools: list[dict[str, Any]],
    *,
    temperature: float | None,
    max_tokens: int | None = None,
    stream: bool,
    stream_usage: bool,
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": wire_messages(messages)}
    if tools:
        body["tools"] = tools
        body["tool_choice"] = "auto"
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens:  # 0 or None: the server's default
        body["max_tokens"] = max_tokens
    if stream:
        body["stream"] = True
        if stream_usage:
            body["stream_options"] = {"include_usage": True}
    return body


class Assembler:
    """Builds one assistant message from a completion or from stream chunks.

    ``on_text`` receives each text delta as it arrives; :attr:`emitted` says
    whether any did (after that a failed request cannot be retried: the
    caller has already shown the text).
    """

    def __init__(self, on_text: TextSink | None = None) -> None:
        self.on_text = on_text
        self.text: list[str] = []
        self.calls: dict[
            Any, dict[str, Any]
        ] = {}  # stream index (or id) -> {"id", "name", "arguments"}
        self.usage: dict[str, Any] = {}
        self.emitted = False
        self.done = False
        self.finish_reason: str | None = None
        self.chunks = 0

    # -- a whole completion -------------------------------------------------
    def completion(self, payload: Any) -> None:
        if isinstance(payload, dict) and isinstance(payload.get("error"), (dict, str)):
            raise _server_error(payload["error"])
        try:
            message = payload["choices"][0]["message"]
            if not isinstance(message, dict):
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise invalid(f"no choices[0].message in the response: {_start(payload)}") from None
        self._usage(payload.get("usage"))
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise invalid(f"choices[0].message.content is not text: {_start(content)}")
        if content:
            self.text.append(content)
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise invalid(f"choices[0].message.tool_calls is not a list: {_start(raw_calls)}")
        for position, raw in enumerate(raw_calls):
            self._call_delta(raw, position)
        self.done = True

    # -- a stream -------------------------------------------------------------
    def sse_line(self, line: str) -> None:
        """One line of a ``text/event-stream`` body."""
        if not line or line.startswith(":") or not line.startswith("data:"):
            return  # blank separator, comment, or event:/id:/retry: fields
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            raise invalid(f"a stream event is not JSON: {data[:200]!r}") from None
        self.chunk(chunk)

    def chunk(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            raise invalid(f"a stream event is not an object: {_start(chunk)}")
        if chunk.get("error"):
            raise _server_error(chunk["error"])
        self.chunks += 1
        self._usage(chunk.get("usage"))
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise invalid(f"a stream event's choices is not a list: {_start(choices)}")
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # only the first choice is asked for (n defaults to 1)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
            delta = choice.get("delta")
            if delta is None:
                delta = (
                    choice.get("message") or {}
                )  # a server that sends whole messages in its chunks
            if not isinstance(delta, dict):
                raise invalid(f"a stream event's delta is not an object: {_start(delta)}")
            text = delta.get("content")
            if isinstance(text, str) and text:
                self.text.append(text)
                if self.on_text is not None:
                    self.emitted = True
                    self.on_text(text)
            for position, raw in enumerate(delta.get("tool_calls") or []):
                self._call_delta(raw, position)

    def end_of_stream(self) -> None:
        """The body ended: complete only after ``[DONE]`` or a ``finish_reason``.

        A stream with no event at all is not an answer (``MODEL_RESPONSE_INVALID``);
        one cut off mid-answer is a failed request, not a short answer.
        """
        if self.chunks == 0 and not self.done:
            raise AssayError(
                MODEL_RESPONSE_INVALID,
                "the server accepted the request (HTTP 200, an event stream) and closed the stream without a "
                "single event: it failed while answering",
                "The model server's log says why (a context too small for the prompt, a template or tool "
                "error...). A server that cannot stream works with ASSAY_OPENAI_STREAM=false.",
            )
        if not (self.done or self.finish_reason):
            raise AssayError(
                MODEL_REQUEST_FAILED,
                "the stream ended before the answer was complete (no finish_reason, no [DONE])",
                "The server or a proxy cut the answer off; see the server's log and run again.",
            )
        self.done = True

    # -- the result -----------------------------------------------------------
    def message(self) -> Message:
        calls = []
        for number, slot in enumerate(self.calls.values(), start=1):
            calls.append(
                ToolCall(
                    id=slot["id"] or f"call_{number}",
                    name=slot["name"],
                    arguments=parse_arguments(slot["arguments"]),
                )
            )
        text = "".join(self.text)
        usage = Usage(
            prompt_tokens=_count(self.usage.get("prompt_tokens")),
            completion_tokens=_count(self.usage.get("completion_tokens")),
        )
        return Message(
            role="assistant",
            content=text if text or not calls else None,
            tool_calls=calls,
            usage=usage,
        )

    def _usage(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self.usage = usage

    def _call_delta(self, raw: Any, position: int) -> None:
        if not isinstance(raw, dict):
            raise invalid(f"a tool call is not an object: {_start(raw)}")
        key = raw.get("index")
        if key is None:  # no index: a server that sends each call whole
            key = raw.get("id") or f"position-{position}-{len(self.calls)}"
        slot = self.calls.setdefault(key, {"id": None, "name": "", "arguments": ""})
        if raw.get("id"):
            slot["id"] = str(raw["id"])
        function = raw.get("function") or {}
        if not isinstance(function, dict):
            raise invalid(f"a tool call's function is not an object: {_start(function)}")
        name = function.get("name")
        if isinstance(name, str) and name and not slot["name"]:
            slot["name"] = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            if isinstance(slot["arguments"], str):
                slot["arguments"] += arguments
        elif arguments is not None:
            slot["arguments"] = (
                arguments  # an object already (some servers), or junk the kernel will refuse
            )


def parse_arguments(raw: Any) -> dict[str, Any] | str:
    """A tool call's arguments as the kernel takes them.

    A JSON object becomes a dict; anything else (text that is not JSON, a
    JSON array or number, a truncated object) stays the model's own text, and
    the kernel answers the model ``TOOL_ARGUMENTS_INVALID`` with the parse
    error: a malformed call is the model's mistake to fix, never a crash.
    """
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return json.dumps(raw)
    if not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw
    return parsed if isinstance(parsed, dict) else raw


# -- errors -------------------------------------------------------------------
def invalid(message: str) -> AssayError:
    return AssayError(
        MODEL_RESPONSE_INVALID,
        message,
        "Check that the base URL is an OpenAI-compatible chat-completions endpoint (it usually ends in /v1).",
    )


def status_error(
    status: int, body: bytes, url: str, model: str, *, attempts: int = 1
) -> AssayError:
    """What an HTTP error status means, with the server's own words."""
    text, code = error_text(body)
    tried = f" (after {attempts} attempts)" if attempts > 1 else ""
    where = f"{url} answered HTTP {status}{tried}: {text}"
    if status in (401, 403):
        return AssayError(
            MODEL_AUTH_FAILED,
            where,
            "Check the API key (ASSAY_OPENAI_API_KEY) for this server; a local server may need none.",
        )
    if code == "model_not_found" or (status in (400, 404) and _MODEL_MISSING.search(text)):
        return AssayError(
            MODEL_NAME_UNKNOWN,
            f"the server does not know the model {model!r}: {where}",
            "Use a model name the server lists (GET /v1/models; ASSAY_OPENAI_MODEL or --model PROVIDER:NAME).",
        )
    if status == 429:
        if code == "insufficient_quota":
            return AssayError(
                MODEL_RATE_LIMITED, where, "The account's quota is used up; retrying will not help."
            )
        return AssayError(
            MODEL_RATE_LIMITED,
            where,
            "The server is rate limiting: wait and run again, or raise ASSAY_OPENAI_MAX_RETRIES.",
        )
    if status == 404:
        return AssayError(
            MODEL_REQUEST_FAILED,
            where,
            "No chat-completions endpoint there: check ASSAY_OPENAI_BASE_URL (it usually ends in /v1).",
        )
    if _CONTEXT_FULL.search(text):
        return AssayError(
            MODEL_REQUEST_FAILED,
            where,
            "The conversation does not fit the model's context: start the server with a larger one (llama.cpp: "
            "--n_ctx 8192), or lower ASSAY_AGENT_TOKEN_BUDGET and ASSAY_OPENAI_MAX_TOKENS to fit it.",
        )
    if status >= 500:
        return AssayError(
            MODEL_REQUEST_FAILED, where, "The model server failed; see its log, then run again."
        )
    return AssayError(
        MODEL_REQUEST_FAILED,
        where,
        "The server refused the request; its message says why (model name, context length, tool schema).",
    )


def retryable(status: int, body: bytes) -> bool:
    if status not in RETRY_STATUSES:
        return False
    return error_text(body)[1] != "insufficient_quota"


def retry_after_s(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError, IndexError):
        return None


def error_text(body: bytes) -> tuple[str, str | None]:
    """The server's error message and machine code (OpenAI's ``{"error": {...}}`` or a bare body)."""
    raw = body.decode("utf-8", "replace").strip()
    try:
        payload = json.loads(raw)
    except ValueError:
        return (raw[:300] or "(empty body)"), None
    err = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(err, dict):
        code = err.get("code") or err.get("type")
        return str(err.get("message") or raw[:300]), (str(code) if code else None)
    if isinstance(err, str):
        return err, None
    if isinstance(payload, dict) and isinstance(
        payload.get("detail"), (str, list)
    ):  # FastAPI-style servers
        return str(payload["detail"])[:300], None
    return raw[:300], None


def _server_error(err: Any) -> AssayError:
    message = err.get("message") if isinstance(err, dict) else str(err)
    return AssayError(
        MODEL_REQUEST_FAILED,
        f"the server reported an error in its answer: {message}",
        "See the model server's log; run again.",
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _start(value: Any) -> str:
    return repr(value)[:200]
