"""Turn a Python function's signature, type hints and docstring into a schema.

Parameter descriptions come from Google, NumPy or Sphinx docstrings;
``Annotated[T, Field(description=...)]`` wins over the docstring. The result
is a pydantic model that validates arguments (``extra="forbid"``, so the JSON
Schema says ``additionalProperties: false``) and the schema the model sees.
"""

from __future__ import annotations

import functools
import inspect
import json
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from .context import RunContext


@dataclass(frozen=True)
class FunctionSchema:
    """What a function looks like from the outside."""

    description: str
    model: type[BaseModel]
    json_schema: dict[str, Any]
    context_param: str | None  # the RunContext parameter, injected, not in the schema
    json_decodable: frozenset[str]  # parameters whose JSON-encoded string form is accepted
    positional_only: tuple[str, ...]


def unwrap(func: Callable[..., Any]) -> Callable[..., Any]:
    """The underlying function of partials and decorated wrappers."""
    while True:
        if isinstance(func, functools.partial):
            func = func.func
        elif hasattr(func, "__wrapped__"):
            func = func.__wrapped__
        else:
            return func


def is_async_callable(func: Callable[..., Any]) -> bool:
    """Whether calling ``func`` returns an awaitable, decided once.

    Partials are unwrapped, but ``__wrapped__`` chains are not followed: a
    sync decorator around an async function returns what the decorator
    returns, so the outermost callable is what counts.
    """
    while isinstance(func, functools.partial):
        func = func.func
    if inspect.iscoroutinefunction(func):
        return True
    call = getattr(func, "__call__", None)  # noqa: B004 - the bound __call__ itself, to inspect
    return not inspect.isfunction(func) and inspect.iscoroutinefunction(call)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(summary, {parameter: description}) from a Google/NumPy/Sphinx docstring."""
    if not doc or not doc.strip():
        return "", {}
    import docstring_parser

    parsed = docstring_parser.parse(inspect.cleandoc(doc))
    parts = [p for p in (parsed.short_description, parsed.long_description) if p]
    summary = "\n\n".join(parts).strip()
    params = {p.arg_name: " ".join(p.description.split()) for p in parsed.params if p.description}
    return summary, params


def check_function(func: Callable[..., Any], description: str | None = None) -> None:
    """The cheap checks :func:`tool` makes at decoration time (the schema itself is built lazily).

    Raises ``ValueError("The description is required")`` when neither
    ``description`` nor a docstring is given, and ``TypeError`` for
    ``*args``/``**kwargs``.
    """
    target = unwrap(func)
    if not (description or "").strip() and not (inspect.getdoc(target) or "").strip():
        raise ValueError("The description is required")
    bound_keywords = _partial_keywords(func)
    for name, param in inspect.signature(func).parameters.items():
        if name not in bound_keywords and param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"tool functions cannot take *args or **kwargs ({name!r} in {_name_of(target)})"
            )


def function_schema(func: Callable[..., Any], description: str | None = None) -> FunctionSchema:
    """Build the :class:`FunctionSchema` for ``func``.

    Raises ``ValueError("The description is required")`` when neither
    ``description`` nor a docstring is given.
    """
    target = unwrap(func)
    summary, param_docs = parse_docstring(inspect.getdoc(target))
    final_description = (description or summary).strip()
    if not final_description:
        raise ValueError("The description is required")

    signature = inspect.signature(func)  # the partial's own signature: bound positionals are gone
    bound_keywords = _partial_keywords(func)  # fixed by the host: not the model's to choose
    hint_source = (
        target if inspect.isfunction(target) or inspect.ismethod(target) else type(target).__call__
    )
    hints = typing.get_type_hints(
        hint_source, localns=_ModuleNamespace(hint_source), include_extras=True
    )
    fields: dict[str, Any] = {}
    context_param = None
    json_decodable: set[str] = set()
    positional_only: list[str] = []
    for name, param in signature.parameters.items():
        if name in bound_keywords:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"tool functions cannot take *args or **kwargs ({name!r} in {_name_of(target)})"
            )
        annotation = hints.get(name, Any)
        if _is_run_context(annotation):
            context_param = name
            continue
        if param.kind is param.POSITIONAL_ONLY:
            positional_only.append(name)
        default = param.default if param.default is not inspect.Parameter.empty else ...
        field_info = _field_for(annotation, default, param_docs.get(name))
        fields[name] = (annotation, field_info)
        if not _accepts_plain_string(annotation):
            json_decodable.add(name)

    model = create_model(
        f"{_name_of(target)}_arguments",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
        **fields,
    )
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema["additionalProperties"] = False
    return FunctionSchema(
        description=final_description,
        model=model,
        json_schema=schema,
        context_param=context_param,
        json_decodable=frozenset(json_decodable),
        positional_only=tuple(positional_only),
    )


class _ModuleNamespace(dict):
    """Names for resolving string annotations: the function's module, including
    names its module-level ``__getattr__`` (PEP 562) provides lazily. This lets
    a plugin keep a heavy annotation type out of its import path."""

    def __init__(self, func: Any) -> None:
        super().__init__()
        self._module = sys.modules.get(getattr(func, "__module__", None) or "")

    def __missing__(self, name: str) -> Any:
        if self._module is not None and hasattr(self._module, "__getattr__"):
            try:
                return getattr(self._module, name)
            except AttributeError:
                pass
        raise KeyError(name)


def _partial_keywords(func: Any) -> set[str]:
    names: set[str] = set()
    while isinstance(func, functools.partial):
        names.update(func.keywords)
        func = func.func
    return names


def _name_of(target: Any) -> str:
    return getattr(target, "__name__", None) or type(target).__name__


def decode_json_strings(arguments: dict[str, Any], names: frozenset[str]) -> dict[str, Any]:
    """Models often send ``"[1, 2]"`` for a list: decode such strings where the
    parameter is not a string. Values that do not decode are left for the
    validator to reject with a precise message."""
    out = arguments
    for name in names.intersection(arguments):
        value = arguments[name]
        if isinstance(value, str):
            try:
                decoded = json.loads(value)
            except ValueError:
                continue
            if out is arguments:
                out = dict(arguments)
            out[name] = decoded
    return out


def _field_for(annotation: Any, default: Any, doc: str | None) -> FieldInfo:
    existing = _annotated_field(annotation)
    if existing is not None and existing.description:
        return Field(default=default)  # Annotated's own Field carries the description
    return Field(default=default, description=doc) if doc else Field(default=default)


def _annotated_field(annotation: Any) -> FieldInfo | None:
    if typing.get_origin(annotation) is typing.Annotated:
        for meta in typing.get_args(annotation)[1:]:
            if isinstance(meta, FieldInfo):
                return meta
    return None


def _is_run_context(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_run_context(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):  # RunContext | None
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(args) == 1 and _is_run_context(args[0])
    return isinstance(annotation, type) and issubclass(annotation, RunContext)


def _accepts_plain_string(annotation: Any) -> bool:
    if annotation is Any or annotation is str:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _accepts_plain_string(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(
            _accepts_plain_string(a) for a in typing.get_args(annotation) if a is not type(None)
        )
    if origin is typing.Literal:
        return any(isinstance(a, str) for a in typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, str):
        return True
    return False
