"""The ``scripted_model`` plugin: registers the deterministic ``scripted`` model.

Thin on purpose (kernel start-up imports it): the model,
:class:`assay.plugins.models.scripted_model.ScriptedModel`, loads on first use.
"""

from __future__ import annotations

from typing import Any

from assay import Lazy, hookimpl


def __getattr__(name: str) -> Any:  # the model's public names, for code that imports them from here
    if name in ("ScriptedModel", "Step"):
        from . import scripted_model

        return getattr(scripted_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def register_models(register):
    register(Lazy("assay.plugins.models.scripted_model:ScriptedModel", name="scripted"))
