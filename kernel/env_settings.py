"""Settings models read from the environment, without pydantic-settings.

:class:`EnvSettings` is a pydantic model that, when made, fills its fields
from ``<env_prefix><FIELD>`` variables, matched without regard to case. The
sections every ``assay ask`` reads before its first model request (the
kernel's own, ``agent``, ``artifact``, ``openai``, ``sql``) are such models:
importing pydantic-settings and building its models costs ~20-30 ms, about a
tenth of that start-up. The rules are the ones of pydantic-settings' default
environment source, for what assay's sections use:

- keyword arguments beat the environment, which beats the layer under it
  (:meth:`EnvSettings.base_layer`: the config file's ``[kernel]`` table for
  the kernel's settings) and then the defaults; a dict given in two layers
  is merged key by key;
- a field whose type is a dict, list, set, tuple or model reads its variable
  as JSON (one that does not parse goes to validation as it is, and fails
  there with the field's name), unless marked ``Annotated[..., NoDecode]``:
  then its validator gets the text;
- every other value goes to pydantic's validation as the text it is
  (``"1"``/``"true"`` is a bool, ``"30"`` a float, ...), defaults are
  validated too, and a bad value is a ``ValidationError`` naming the field.

Field aliases are not read from the environment; a plugin that needs them
(or any other pydantic-settings source) keeps a pydantic-settings class,
which :meth:`~assay.kernel.settings.Settings.section` reads just as well.
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
import typing
from collections.abc import Mapping, Sequence, Set
from typing import Any

from pydantic import BaseModel, ConfigDict

_COLLECTIONS = (dict, list, set, frozenset, tuple)


class EnvConfigDict(ConfigDict, total=False):
    """A pydantic ``ConfigDict`` plus the prefix of the model's variables."""

    env_prefix: str


class NoDecode:
    """``Annotated[dict[...], NoDecode]``: the variable's text goes to the field's validator, not JSON."""


class EnvSettings(BaseModel):
    """A settings model whose fields are read from ``<env_prefix><FIELD>`` variables when it is made."""

    model_config = EnvConfigDict(extra="ignore", validate_default=True, arbitrary_types_allowed=True)

    def __init__(self, **values: Any) -> None:
        cls = type(self)
        given = field_keys(cls, values)
        super().__init__(**layered(cls.base_layer(given), environment_values(cls), given))

    @classmethod
    def base_layer(cls, given: dict[str, Any]) -> dict[str, Any]:
        """Values under the environment's (none here; the kernel's settings read their file's table)."""
        return {}


def environment_values(model: type[BaseModel], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The fields of ``model`` that ``environ`` (default ``os.environ``) sets, decoded as the module says."""
    prefix = str(model.model_config.get("env_prefix", "")).lower()
    env = {key.lower(): value for key, value in (os.environ if environ is None else environ).items()}
    found: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        raw = env.get(prefix + name.lower())
        if raw is None:
            continue
        if _decodes_json(field.annotation, field.metadata):
            try:
                found[name] = json.loads(raw)
            except ValueError:
                found[name] = raw  # validation says what is wrong with it, naming the field
        else:
            found[name] = raw
    return found


def field_keys(model: type[BaseModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with each key that names a field regardless of case spelled as the field is."""
    fields = {name.lower(): name for name in model.model_fields}
    return {key if key in model.model_fields else fields.get(key.lower(), key): value
            for key, value in values.items()}


def layered(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """The layers merged, each over the ones before it; dicts present in two layers merge key by key."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = _deep_update(merged, layer)
    return merged


def _deep_update(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_update(out[key], value)
        else:
            out[key] = value
    return out


def _decodes_json(annotation: Any, metadata: list[Any]) -> bool:
    if any(m is NoDecode or isinstance(m, NoDecode) for m in metadata):
        return False
    return _is_complex(annotation)


def _is_complex(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_complex(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return any(_is_complex(arg) for arg in typing.get_args(annotation) if arg is not type(None))
    target = origin if origin is not None else annotation
    if not isinstance(target, type):
        return False
    if issubclass(target, (str, bytes)):
        return False
    return issubclass(target, (*_COLLECTIONS, Mapping, Sequence, Set, BaseModel)) or dataclasses.is_dataclass(target)
