"""The ``openai_compatible`` plugin: a chat-completions client on ``httpx``.

Works with any server that speaks ``POST {base_url}/chat/completions`` with
``messages`` and ``tools``: OpenAI, vLLM, Ollama's and LM Studio's OpenAI
endpoints, llama.cpp's server (C++ or ``llama-cpp-python[server]``).
Settings (section ``openai``, env ``ASSAY_OPENAI_*``, :mod:`.openai_settings`):
``base_url``, ``api_key`` (secret), ``model``, ``timeout_s``,
``connect_timeout_s``, ``temperature``, ``max_tokens``, ``max_retries``, ``retry_backoff_s``,
``stream``, ``stream_usage``.

- **Retries**: a 429, 408/409, a 5xx, a refused or dropped connection is tried
  again up to ``max_retries`` times, waiting ``retry_backoff_s`` doubled each
  time (with jitter, capped at 20 s; a server's ``Retry-After`` is honoured
  within that cap); each retry is logged (``model_request_retry``). A read
  timeout is not retried (the model was slow, not gone): ``MODEL_TIMEOUT``.
  One policy drives the sync and the async request (tenacity's ``Retrying``
  and ``AsyncRetrying`` from :meth:`OpenAICompatibleModel.retrying`); its
  waits go through :attr:`~OpenAICompatibleModel.sleep` and
  :attr:`~OpenAICompatibleModel.asleep`, which a test replaces.
- **Streaming**: when the caller passes ``on_text`` (and ``stream`` is on), the
  request streams and each text delta goes to ``on_text`` as it arrives;
  tool-call deltas are assembled by index. Once text has been shown, a
  broken stream is reported, not retried. A server that will not stream a
  request with tools (an empty stream after HTTP 200, as llama-cpp-python's
  does when the model picks a tool, or an error naming streaming and tools)
  is asked again unstreamed, told once in a warning, and later requests with
  tools go unstreamed (:attr:`OpenAICompatibleModel.streams_with_tools`).
- **Errors**: codes in :mod:`.errors`; the wire rules in :mod:`.openai_wire`.

The client is ``httpx`` and the retries ``tenacity`` (extra ``openai``), imported on first use only, without
its command-line module; an SSL context with the trusted certificates is made
only where TLS can be used, once per model (:mod:`.http_client`).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from typing import TYPE_CHECKING, Any

from assay import AssayError, hookimpl
from assay.kernel.log import get_logger
from assay.kernel.models import Model

from .errors import MODEL_REQUEST_FAILED, MODEL_TIMEOUT, MODEL_UNREACHABLE
from .http_client import import_httpx, tls_context

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tenacity import RetryCallState

    from assay.kernel.messages import Message
    from assay.kernel.models import TextSink

    from .openai_settings import OpenAISettings

BACKOFF_CAP_S = 20.0


class _Retry(Exception):
    """One attempt failed in a way another attempt may not."""

    def __init__(self, error: AssayError, wait_s: float | None = None) -> None:
        self.error, self.wait_s = error, wait_s


def _failed_with(state: RetryCallState) -> _Retry:
    """The _Retry a retried attempt failed with (nothing else is retried)."""
    error = state.outcome.exception() if state.outcome is not None else None
    assert isinstance(error, _Retry)  # retry_if_exception_type(_Retry)
    return error


class _StreamRefused(Exception):
    """The server would not stream an answer to a request with tools: ask again without streaming."""

    def __init__(self, why: str) -> None:
        self.why = why


# What a server says when it cannot stream with tools (llama.cpp's servers, some proxies).
_NO_STREAM_WITH_TOOLS = re.compile(r"stream", re.IGNORECASE)
_TOOLS_WORD = re.compile(r"tool|function", re.IGNORECASE)


class OpenAICompatibleModel(Model):
    model_id = "openai_compatible"

    def __init__(self, settings: OpenAISettings | None = None, **overrides: Any) -> None:
        from pydantic import SecretStr

        from assay.kernel.messages import Usage

        from .openai_settings import OpenAISettings

        base = settings or OpenAISettings()
        self.settings = base.model_copy(update=overrides) if overrides else base
        if isinstance(self.settings.api_key, str):
            self.settings.api_key = SecretStr(self.settings.api_key)
        self.last_usage = Usage()
        self._client: Any = None
        self._tls: tuple[str, Any] | None = (
            None  # (base URL, its SSL context): made once, shared by the clients
        )
        self.streams_with_tools = (
            True  # False once the server refused to stream a request with tools
        )
        self.sleep: Callable[[float], None] = (
            time.sleep
        )  # the retries' waits (a test records them instead)
        self.asleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    @classmethod
    def from_settings(cls, kernel: Any, **options: Any) -> OpenAICompatibleModel:
        from .openai_settings import OpenAISettings

        return cls(kernel.settings.section("openai", OpenAISettings), **options)

    # -- the request ----------------------------------------------------------
    @property
    def url(self) -> str:
        return self.settings.base_url.rstrip("/") + "/chat/completions"

    def request_body(
        self, messages: list[Message], tools: list[dict[str, Any]], *, stream: bool = False
    ) -> dict[str, Any]:
        from .openai_wire import request_body

        s = self.settings
        return request_body(
            s.model,
            messages,
            tools,
            temperature=s.temperature,
            max_tokens=s.max_tokens,
            stream=stream,
            stream_usage=s.stream_usage,
        )

    def _headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.settings.api_key is not None:
            headers["Authorization"] = f"Bearer {self.settings.api_key.get_secret_value()}"
        return headers

    def _client_options(self) -> dict[str, Any]:
        httpx = import_httpx()

        if self._tls is None or self._tls[0] != self.settings.base_url:
            self._tls = (self.settings.base_url, tls_context(self.settings.base_url))
        return {
            "timeout": httpx.Timeout(
                self.settings.timeout_s, connect=self.settings.connect_timeout_s
            ),
            "verify": self._tls[1],
        }

    # -- sync -----------------------------------------------------------------
    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: TextSink | None = None,
    ) -> Message:
        httpx = import_httpx()

        if self._client is None:
            self._client = httpx.Client(**self._client_options())
        stream = self._streams(on_text, tools)
        try:
            return self._finish(self._send(self._client, messages, tools, stream, on_text))
        except _StreamRefused as refused:
            self._stop_streaming_with_tools(refused)
            return self._finish(self._send(self._client, messages, tools, False, on_text))

    def _send(
        self,
        client: Any,
        messages: list[Message],
        tools: list[dict[str, Any]],
        stream: bool,
        on_text: Any,
    ) -> Any:
        data = json.dumps(self.request_body(messages, tools, stream=stream)).encode()
        for attempt in self.retrying(asynchronous=False):
            with attempt:
                return self._attempt(
                    client, data, stream, on_text, attempt.retry_state.attempt_number, bool(tools)
                )
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _attempt(
        self,
        client: Any,
        data: bytes,
        stream: bool,
        on_text: Any,
        attempt: int,
        tools: bool = False,
    ) -> Any:
        httpx = import_httpx()

        from .openai_wire import Assembler

        assembler = Assembler(on_text)
        try:
            with client.stream("POST", self.url, content=data, headers=self._headers()) as response:
                if response.status_code >= 400:
                    self._status_failure(
                        response.status_code,
                        response.read(),
                        response.headers,
                        attempt,
                        stream and tools,
                    )
                if stream and _is_event_stream(response):
                    for line in response.iter_lines():
                        assembler.sse_line(line)
                    self._end_of_stream(assembler, tools)
                else:
                    assembler.completion(_json_body(response.read()))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            self._transport_failure(exc, assembler, attempt)
        return assembler

    # -- async ----------------------------------------------------------------
    async def acomplete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: TextSink | None = None,
    ) -> Message:
        """Native async (cancelling the task closes the request); one client per call."""
        httpx = import_httpx()

        stream = self._streams(on_text, tools)
        async with httpx.AsyncClient(**self._client_options()) as client:
            try:
                return self._finish(await self._asend(client, messages, tools, stream, on_text))
            except _StreamRefused as refused:
                self._stop_streaming_with_tools(refused)
                return self._finish(await self._asend(client, messages, tools, False, on_text))

    async def _asend(
        self,
        client: Any,
        messages: list[Message],
        tools: list[dict[str, Any]],
        stream: bool,
        on_text: Any,
    ) -> Any:
        data = json.dumps(self.request_body(messages, tools, stream=stream)).encode()
        async for attempt in self.retrying(asynchronous=True):
            with attempt:
                return await self._aattempt(
                    client, data, stream, on_text, attempt.retry_state.attempt_number, bool(tools)
                )
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _aattempt(
        self,
        client: Any,
        data: bytes,
        stream: bool,
        on_text: Any,
        attempt: int,
        tools: bool = False,
    ) -> Any:
        httpx = import_httpx()

        from .openai_wire import Assembler

        assembler = Assembler(on_text)
        try:
            async with client.stream(
                "POST", self.url, content=data, headers=self._headers()
            ) as response:
                if response.status_code >= 400:
                    self._status_failure(
                        response.status_code,
                        await response.aread(),
                        response.headers,
                        attempt,
                        stream and tools,
                    )
                if stream and _is_event_stream(response):
                    async for line in response.aiter_lines():
                        assembler.sse_line(line)
                    self._end_of_stream(assembler, tools)
                else:
                    assembler.completion(_json_body(await response.aread()))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            self._transport_failure(exc, assembler, attempt)
        return assembler

    # -- shared ---------------------------------------------------------------
    def _streams(self, on_text: Any, tools: list[dict[str, Any]]) -> bool:
        """Whether this request streams: the caller takes text as it comes, streaming is on, and (when it
        carries tools) the server has not refused to stream with tools."""
        return (
            on_text is not None and self.settings.stream and (self.streams_with_tools or not tools)
        )

    def _end_of_stream(self, assembler: Any, tools: bool) -> None:
        """A streamed request with tools whose stream closed without a single event: the server refused to
        stream it (llama.cpp's Python server fails "Automatic streaming tool choice is not supported" after
        its HTTP 200, so nothing arrives). Asked again without streaming; anything else is the stream's own
        verdict."""
        if tools and assembler.chunks == 0 and not assembler.done and not assembler.emitted:
            raise _StreamRefused("the streamed answer closed without a single event")
        assembler.end_of_stream()

    def _stop_streaming_with_tools(self, refused: _StreamRefused) -> None:
        if (
            self.streams_with_tools
        ):  # said once per model: every later request with tools goes unstreamed
            get_logger("assay.models").warning(
                "model_stream_with_tools_refused",
                url=self.url,
                why=refused.why,
                detail="the server does not stream answers to requests with tools; sending them unstreamed "
                "(each answer shows when complete). ASSAY_OPENAI_STREAM=false says so up front.",
            )
        self.streams_with_tools = False

    def _finish(self, assembler: Any) -> Message:
        message = assembler.message()
        self.last_usage = message.usage
        return message

    def _status_failure(
        self, status: int, body: bytes, headers: Any, attempt: int, streamed_tools: bool = False
    ) -> None:
        from .openai_wire import error_text, retry_after_s, retryable, status_error

        if streamed_tools and status in (400, 422, 500, 501):
            text = error_text(body)[0]
            if _NO_STREAM_WITH_TOOLS.search(text) and _TOOLS_WORD.search(text):
                raise _StreamRefused(f"HTTP {status}: {text[:200]}")
        error = status_error(status, body, self.url, self.settings.model, attempts=attempt)
        if retryable(status, body) and attempt <= self.settings.max_retries:
            raise _Retry(error, retry_after_s(headers.get("retry-after")))
        raise error

    def _transport_failure(self, exc: Exception, assembler: Any, attempt: int) -> None:
        httpx = import_httpx()

        url, tried = self.url, (f" (after {attempt} attempts)" if attempt > 1 else "")
        can_retry = attempt <= self.settings.max_retries and not assembler.emitted
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            error = AssayError(
                MODEL_UNREACHABLE,
                f"cannot reach {url}{tried}: {_reason(exc)}",
                "Is the model server running? Check ASSAY_OPENAI_BASE_URL (host, port, http/https).",
            )
        elif isinstance(exc, httpx.TimeoutException):
            raise AssayError(
                MODEL_TIMEOUT,
                f"{url} did not answer within {self.settings.timeout_s:g} s",
                "The model is slow or stuck: raise ASSAY_OPENAI_TIMEOUT_S, or use a smaller model or prompt.",
            ) from None
        elif isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
            raise AssayError(
                MODEL_REQUEST_FAILED,
                f"cannot send a request to {url}: {_reason(exc)}",
                "Check ASSAY_OPENAI_BASE_URL: it must be an http:// or https:// URL.",
            ) from None
        elif isinstance(exc, httpx.DecodingError):
            from .openai_wire import invalid

            raise invalid(f"the answer from {url} could not be decoded: {_reason(exc)}") from None
        elif not isinstance(exc, httpx.TransportError):  # redirects, ...
            raise AssayError(
                MODEL_REQUEST_FAILED,
                f"the request to {url} failed: {_reason(exc)}",
                "Check ASSAY_OPENAI_BASE_URL.",
            ) from None
        else:  # the connection dropped (reset, closed mid-answer, protocol error)
            shown = " after part of the answer was shown" if assembler.emitted else ""
            error = AssayError(
                MODEL_REQUEST_FAILED,
                f"the connection to {url} broke{shown}{tried}: {_reason(exc)}",
                "See the model server's log; run again.",
            )
        if can_retry:
            raise _Retry(error)
        raise error from None

    # -- the retry policy: one, for the sync and the async request -------------------------
    def retrying(self, *, asynchronous: bool) -> Any:
        """tenacity's ``Retrying`` (or ``AsyncRetrying``): an attempt that raised :class:`_Retry` is tried
        again after :meth:`_wait`; any other outcome (an answer, an error not worth retrying, the last
        attempt's error) ends the loop. Its waits go through :attr:`sleep` (:attr:`asleep`)."""
        from tenacity import AsyncRetrying, Retrying, retry_if_exception_type, stop_after_attempt

        options: dict[str, Any] = dict(
            retry=retry_if_exception_type(_Retry),
            stop=stop_after_attempt(self.settings.max_retries + 1),
            wait=self._wait,
            before_sleep=self._log_retry,
            reraise=True,
        )
        return (
            AsyncRetrying(sleep=self.asleep, **options)
            if asynchronous
            else Retrying(sleep=self.sleep, **options)
        )

    def _wait(self, state: RetryCallState) -> float:
        """The server's ``Retry-After``, else ``retry_backoff_s`` doubled each retry with jitter; capped."""
        retry = _failed_with(state)
        backoff = self.settings.retry_backoff_s * (2 ** (state.attempt_number - 1))
        wait = retry.wait_s if retry.wait_s is not None else backoff * (0.5 + random.random())
        return min(wait, BACKOFF_CAP_S)

    def _log_retry(self, state: RetryCallState) -> None:
        retry, next_action = _failed_with(state), state.next_action
        assert next_action is not None  # tenacity sets it before this hook
        get_logger("assay.models").warning(
            "model_request_retry",
            code=retry.error.code,
            attempt=state.attempt_number,
            max_retries=self.settings.max_retries,
            wait_s=round(next_action.sleep, 3),
            error=retry.error.message,
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _is_event_stream(response: Any) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


def _json_body(body: bytes) -> Any:
    from .openai_wire import invalid

    try:
        return json.loads(body)
    except ValueError:
        text = body[:200].decode("utf-8", "replace")
        raise invalid(f"the server did not answer JSON: {text!r}") from None


def _reason(exc: Exception) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


@hookimpl
def register_models(register, settings):
    settings.declare_section(
        "openai", "assay.plugins.models.openai_settings:OpenAISettings"
    )  # for `assay config`
    register(OpenAICompatibleModel)
