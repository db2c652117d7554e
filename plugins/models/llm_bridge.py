"""The ``llm_bridge`` plugin: every model the ``llm`` library knows, as ``--model llm:MODEL_ID``.

``llm`` (extra ``llm``) has plugins for Anthropic, Gemini, Ollama, GGUF
files, and OpenAI built in; its users already hold keys (``llm keys set``)
and plugins. This provider reuses them as they are: ``llm:NAME`` is
``llm.get_model(NAME)`` (an id or an alias ``llm models`` lists; no NAME:
``ASSAY_LLM_MODEL``, else llm's default model), the key is the one llm finds.

Each turn is one ``model.prompt(...)``: the conversation so far goes as
llm's explicit ``messages=`` history (system, user, assistant text and tool
calls, tool results); the turn's new input, the trailing user message or
tool results, goes as ``prompt=`` / ``tool_results=``, and the system
prompt also as ``system=``, so plugins that read the history and plugins
that read only the current turn both see it. Tools are offered as
``llm.Tool`` definitions without implementations: llm never runs a tool,
it hands back the calls (``response.tool_calls()``) and assay's kernel runs
them. A model whose llm plugin does not support tools cannot drive a run
that offers tools: ``MODEL_TOOLS_UNSUPPORTED`` before anything is sent.

Errors: ``MODEL_NAME_UNKNOWN`` (llm knows no such model), ``MODEL_AUTH_FAILED``
(no key, or the service refused it), ``MODEL_RATE_LIMITED``,
``MODEL_UNREACHABLE``, ``MODEL_REQUEST_FAILED`` (anything else the plugin
raised, with its type and message; retries are the plugin's own).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from assay import AssayError, hookimpl
from assay.kernel.models import Model

from .errors import (
    MODEL_AUTH_FAILED,
    MODEL_NAME_UNKNOWN,
    MODEL_RATE_LIMITED,
    MODEL_REQUEST_FAILED,
    MODEL_TOOLS_UNSUPPORTED,
    MODEL_UNREACHABLE,
)

if TYPE_CHECKING:
    from assay.kernel.messages import Message
    from assay.kernel.models import TextSink


class LLMModel(Model):
    model_id = "llm"

    def __init__(self, model: str | None = None, *, options: dict[str, Any] | None = None) -> None:
        llm = _import_llm()
        try:
            self.llm_model = llm.get_model(model) if model else llm.get_model()
        except llm.UnknownModelError as exc:
            raise AssayError(
                MODEL_NAME_UNKNOWN,
                f"the llm library knows no model {model or '(default)'!r}: {exc}",
                "`llm models` lists the ids and aliases; install the llm plugin that provides it "
                "(llm install PLUGIN).",
            ) from None
        self.model_name = self.llm_model.model_id
        self.options = dict(options or {})

    @classmethod
    def from_settings(cls, kernel: Any, **options: Any) -> LLMModel:
        from .llm_settings import LLMSettings

        settings = kernel.settings.section("llm", LLMSettings)
        name = options.pop("model", None) or settings.model
        merged = {**settings.options, **options.pop("options", {})}
        if options:
            raise AssayError(
                "MODEL_CONFIG_INVALID",
                f"the llm model takes model= and options=, not {sorted(options)}",
                "Pass model options as options={...} (ASSAY_LLM_OPTIONS).",
            )
        return cls(name, options=merged)

    @property
    def supports_tools(self) -> bool:
        return bool(getattr(self.llm_model, "supports_tools", False))

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: TextSink | None = None,
    ) -> Message:
        from assay.kernel.messages import Message, ToolCall, Usage

        from .openai_wire import parse_arguments

        if tools and not self.supports_tools:
            raise AssayError(
                MODEL_TOOLS_UNSUPPORTED,
                f"llm model {self.model_name!r} cannot call tools, and this run offers {len(tools)}",
                "Choose an llm model that supports tools (`llm models --tools` lists them).",
            )
        llm = _import_llm()
        request = to_llm_request(messages)
        kwargs: dict[str, Any] = {"messages": request.history, "system": request.system}
        if request.prompt is not None:
            kwargs["prompt"] = request.prompt
        if request.tool_results:
            kwargs["tool_results"] = request.tool_results
        if tools:
            kwargs["tools"] = [to_llm_tool(definition) for definition in tools]
        if self.options:
            kwargs["options"] = self.options
        stream = bool(on_text is not None and getattr(self.llm_model, "can_stream", False))
        try:
            response = self.llm_model.prompt(stream=stream, **kwargs)
            pieces = []
            for piece in response:
                pieces.append(piece)
                if on_text is not None and stream and piece:
                    on_text(piece)
            calls = response.tool_calls()
            usage = response.usage()
        except AssayError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever a plugin raises becomes a coded error
            raise _error_for(llm, exc, self.model_name) from None
        text = "".join(pieces)
        tool_calls = [
            ToolCall(
                id=call.tool_call_id or f"call_{number}",
                name=call.name,
                arguments=parse_arguments(call.arguments),
            )
            for number, call in enumerate(calls or [], start=1)
        ]
        return Message(
            role="assistant",
            content=text if text or not tool_calls else None,
            tool_calls=tool_calls,
            usage=Usage(
                prompt_tokens=_count(getattr(usage, "input", 0)),
                completion_tokens=_count(getattr(usage, "output", 0)),
            ),
        )


class LLMRequest:
    """One turn for llm: the history, the system prompt, and this turn's new input."""

    def __init__(self) -> None:
        self.history: list[Any] = []
        self.system: str | None = None
        self.prompt: str | None = None
        self.tool_results: list[Any] = []


def to_llm_request(messages: list[Message]) -> LLMRequest:
    """Our conversation as llm takes it (see the module docstring)."""
    import llm
    from llm.parts import TextPart, ToolCallPart, ToolResultPart

    request = LLMRequest()
    systems = [m.content for m in messages if m.role == "system" and m.content]
    request.system = "\n\n".join(systems) or None
    tail = len(messages)
    if messages and messages[-1].role == "user":
        tail -= 1
        request.prompt = messages[-1].content or ""
    else:
        while tail > 0 and messages[tail - 1].role == "tool":
            tail -= 1
        request.tool_results = [
            llm.ToolResult(name=m.name or "", output=m.content or "", tool_call_id=m.tool_call_id)
            for m in messages[tail:]
        ]
    pending_results: list[Any] = []
    for message in messages[:tail]:
        if message.role == "tool":
            pending_results.append(
                ToolResultPart(
                    name=message.name or "",
                    output=message.content or "",
                    tool_call_id=message.tool_call_id,
                )
            )
            continue
        if pending_results:
            request.history.append(llm.tool_message(*pending_results))
            pending_results = []
        if message.role == "system":
            request.history.append(llm.system(TextPart(text=message.content or "")))
        elif message.role == "user":
            request.history.append(llm.user(TextPart(text=message.content or "")))
        else:
            parts: list[Any] = [TextPart(text=message.content)] if message.content else []
            parts += [
                ToolCallPart(name=c.name, arguments=_as_object(c.arguments), tool_call_id=c.id)
                for c in message.tool_calls
            ]
            request.history.append(llm.assistant(*parts))
    if pending_results:
        request.history.append(llm.tool_message(*pending_results))
    return request


def to_llm_tool(definition: dict[str, Any]) -> Any:
    """An OpenAI-shaped function definition as an ``llm.Tool`` llm offers but never runs."""
    import llm

    function = definition.get("function", definition)
    return llm.Tool(
        name=function["name"],
        description=function.get("description"),
        input_schema=function.get("parameters") or {"type": "object", "properties": {}},
        implementation=None,
    )


def _as_object(arguments: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {}  # the model's malformed call: its tool result already says TOOL_ARGUMENTS_INVALID
    return parsed if isinstance(parsed, dict) else {}


def _error_for(llm: Any, exc: Exception, model_name: str) -> AssayError:
    text = str(exc).strip() or type(exc).__name__
    where = f"llm model {model_name!r}: {type(exc).__name__}: {text[:500]}"
    status = getattr(exc, "status_code", None) or getattr(
        getattr(exc, "response", None), "status_code", None
    )
    if isinstance(exc, llm.NeedsKeyException) or status in (401, 403):
        return AssayError(
            MODEL_AUTH_FAILED, where, "Set the key the way llm keeps it: `llm keys set NAME`."
        )
    if status == 429:
        return AssayError(
            MODEL_RATE_LIMITED, where, "The service is rate limiting: wait and run again."
        )
    if status == 404:
        return AssayError(
            MODEL_NAME_UNKNOWN,
            where,
            "The service does not serve that model; `llm models` lists them.",
        )
    if "connect" in type(exc).__name__.lower():
        return AssayError(
            MODEL_UNREACHABLE, where, "Is the service (or the local model server) reachable?"
        )
    return AssayError(
        MODEL_REQUEST_FAILED,
        where,
        "See the llm plugin's message; `llm -m MODEL 'hi'` tries the model alone.",
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _import_llm() -> Any:
    try:
        import llm
    except ImportError:
        raise AssayError(
            "MODEL_CONFIG_INVALID",
            "the llm library is not installed",
            "pip install 'assay[llm]' (and the llm plugins of the models you use).",
        ) from None
    return llm


@hookimpl
def register_models(register, settings):
    settings.declare_section(
        "llm", "assay.plugins.models.llm_settings:LLMSettings"
    )  # for `assay config`
    register(LLMModel)
