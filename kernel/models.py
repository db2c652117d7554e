"""Models: what drives the agent, behind one small interface.

A model provider is a :class:`Model` subclass registered through the
``register_models`` hook. It turns a conversation (a list of
:class:`Message`) plus tool definitions (OpenAI function-calling shape) into
the next assistant :class:`Message`: final text, or tool calls. The message
types live in :mod:`assay.kernel.messages` (pydantic models, imported when a
model first answers, so a model plugin's module imports without building them).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from .messages import Message


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
