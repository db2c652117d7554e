"""The ``openai_compatible`` plugin: registers the OpenAI-compatible chat-completions model.

Thin on purpose (kernel start-up imports it): the client,
:class:`assay.plugins.models.openai_model.OpenAICompatibleModel`, and its settings
load on first use; ``assay config`` still shows the ``openai`` section.
"""

from __future__ import annotations

from typing import Any

from assay import Lazy, hookimpl

_PUBLIC = ("OpenAICompatibleModel", "MODEL_REQUEST_FAILED", "MODEL_RESPONSE_INVALID")


def __getattr__(name: str) -> Any:  # the model's public names, for code that imports them from here
    if name in _PUBLIC:
        from . import openai_model

        return getattr(openai_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def register_models(register, settings):
    settings.declare_section("openai", "assay.plugins.models.openai_settings:OpenAISettings")  # for `assay config`
    register(Lazy("assay.plugins.models.openai_model:OpenAICompatibleModel", name="openai_compatible"))
