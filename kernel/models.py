"""Models: what drives the agent, behind one small interface.

A model provider is a :class:`Model` subclass registered through the
``register_models`` hook. It turns a conversation (a list of
:class:`Message`) plus tool definitions (OpenAI function-calling shape) into
the next assistant :class:`Message`: final text, or tool calls.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One call the model asks for; ``arguments`` as the model sent them."""

    id: str
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


class Message(BaseModel):
    """One turn of the conversation, in the chat-completions vocabulary."""

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None  # on role="tool": the call this answers
    name: str | None = None  # on role="tool": the tool's name

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json()}}
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            out["name"] = self.name
        return out


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Model:
    """Base class of model providers.

    Subclasses set ``model_id`` (the registry name) and implement
    :meth:`complete` or :meth:`acomplete`. :meth:`from_settings` is how the
    kernel builds one (``kernel.model(model_id, **options)``); override it to
    read a settings section.
    """

    model_id: ClassVar[str] = ""

    @classmethod
    def from_settings(cls, kernel: Any, **options: Any) -> "Model":
        return cls(**options)

    def complete(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        """The next assistant message for ``messages``, given ``tools``."""
        raise NotImplementedError

    async def acomplete(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        """Async form; by default runs :meth:`complete` in a worker thread."""
        return await asyncio.to_thread(self.complete, messages, tools)
