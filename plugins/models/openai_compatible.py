"""The ``openai_compatible`` plugin: a chat-completions client (standard library only).

Works with any server that speaks ``POST {base_url}/chat/completions`` with
``messages`` and ``tools`` (OpenAI, vLLM, llama.cpp's server, Ollama's
OpenAI endpoint, ...). Settings (section ``openai``, env ``ASSAY_OPENAI_*``):
``base_url``, ``api_key`` (secret), ``model``, ``timeout_s``, ``temperature``;
they load on first use (:mod:`.openai_settings`), and ``assay config`` still
shows the ``openai`` section.

Errors: ``MODEL_REQUEST_FAILED`` (HTTP error status or unreachable server)
and ``MODEL_RESPONSE_INVALID`` (a body that is not a chat completion).

One module (not a thin plugin module plus the client): the client imports in
about 2 ms, too little to split.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from assay import AssayError, hookimpl
from assay.kernel.models import Model

if TYPE_CHECKING:
    from assay.kernel.messages import Message

    from .openai_settings import OpenAISettings

MODEL_REQUEST_FAILED = "MODEL_REQUEST_FAILED"
MODEL_RESPONSE_INVALID = "MODEL_RESPONSE_INVALID"


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

    @classmethod
    def from_settings(cls, kernel: Any, **options: Any) -> "OpenAICompatibleModel":
        from .openai_settings import OpenAISettings

        return cls(kernel.settings.section("openai", OpenAISettings), **options)

    def request_body(self, messages: list[Message], tools: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.settings.model, "messages": [m.to_openai() for m in messages]}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if self.settings.temperature is not None:
            body["temperature"] = self.settings.temperature
        return body

    def complete(self, messages: list[Message], tools: list[dict[str, Any]], *, on_text: Any = None) -> Message:
        import urllib.error
        import urllib.request

        url = self.settings.base_url.rstrip("/") + "/chat/completions"
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.settings.api_key is not None:
            headers["Authorization"] = f"Bearer {self.settings.api_key.get_secret_value()}"
        data = json.dumps(self.request_body(messages, tools)).encode()
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.settings.timeout_s) as response:
                payload = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:500]
            raise AssayError(
                MODEL_REQUEST_FAILED,
                f"{url} answered HTTP {exc.code}: {_error_text(detail)}",
                "Check ASSAY_OPENAI_BASE_URL, ASSAY_OPENAI_MODEL and ASSAY_OPENAI_API_KEY.",
            ) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise AssayError(
                MODEL_REQUEST_FAILED, f"cannot reach {url}: {reason}", "Is the model server running?"
            ) from None
        except ValueError as exc:
            raise AssayError(MODEL_RESPONSE_INVALID, f"{url} did not return JSON: {exc}") from None
        return self.parse_response(payload)

    def parse_response(self, payload: dict[str, Any]) -> Message:
        from assay.kernel.messages import Message, ToolCall, Usage

        try:
            choice = payload["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise AssayError(MODEL_RESPONSE_INVALID, f"no choices[0].message in response: {str(payload)[:200]}") from None
        usage = payload.get("usage") or {}
        self.last_usage = Usage(
            prompt_tokens=usage.get("prompt_tokens", 0) or 0, completion_tokens=usage.get("completion_tokens", 0) or 0
        )
        calls = []
        for raw in choice.get("tool_calls") or []:
            fn = raw.get("function") or {}
            arguments = fn.get("arguments") or "{}"
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    pass  # left as a string: the kernel reports it as TOOL_ARGUMENTS_INVALID to the model
            calls.append(ToolCall(id=raw.get("id") or f"call_{len(calls) + 1}", name=fn.get("name", ""), arguments=arguments))
        return Message(role="assistant", content=choice.get("content"), tool_calls=calls, usage=self.last_usage)


def _error_text(body: str) -> str:
    try:
        err = json.loads(body).get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    except (ValueError, AttributeError):
        pass
    return body.strip() or "(empty body)"


@hookimpl
def register_models(register, settings):
    settings.declare_section("openai", "assay.plugins.models.openai_settings:OpenAISettings")  # for `assay config`
    register(OpenAICompatibleModel)
