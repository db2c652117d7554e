"""The conversation types models exchange, in the chat-completions vocabulary."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One call the model asks for; ``arguments`` as the model sent them."""

    model_config = ConfigDict(defer_build=True)

    id: str
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


class Usage(BaseModel):
    """Token counts of one model exchange, as the provider reported them."""

    model_config = ConfigDict(defer_build=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0


class Message(BaseModel):
    """One turn of the conversation, in the chat-completions vocabulary."""

    model_config = ConfigDict(defer_build=True)

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None  # on role="tool": the call this answers
    name: str | None = None  # on role="tool": the tool's name
    usage: Usage | None = (
        None  # on role="assistant": tokens of the exchange that produced it (not sent back)
    )

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_json()},
                }
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            out["name"] = self.name
        return out
