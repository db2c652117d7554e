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
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

TextSink = Callable[[str], None]
"""Receives the assistant's text as it streams (deltas, in order)."""

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
    def from_settings(cls, kernel: Any, **options: Any) -> Model:
        return cls(**options)

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: TextSink | None = None,
    ) -> Message:
        """The next assistant message for ``messages``, given ``tools``.

        A provider that streams calls ``on_text`` with each text delta as it
        arrives (the returned message still carries the whole text); one that
        does not may ignore it. The returned message's ``usage`` carries the
        token counts when the provider reports them.
        """
        raise NotImplementedError

    async def acomplete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: TextSink | None = None,
    ) -> Message:
        """Async form; by default runs :meth:`complete` in a worker thread.

        ``on_text`` is passed on only to a :meth:`complete` that accepts it, so
        a provider written before streaming existed keeps working.
        """
        if on_text is not None and _accepts_on_text(type(self).complete):
            return await asyncio.to_thread(self.complete, messages, tools, on_text=on_text)
        return await asyncio.to_thread(self.complete, messages, tools)


def _accepts_on_text(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return "on_text" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())
