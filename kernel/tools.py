"""Tools: functions the model can call, with validated arguments.

:func:`tool` turns a Python function into a :class:`FunctionTool` whose JSON
Schema comes from its signature. :class:`JsonSchemaTool` is for tools defined
by a raw JSON Schema (for example proxied from another system). Both validate
arguments before every call and report problems with their paths.

A tool is not a resource: resources describe themselves to the model
(``get_prompt``) and are worked through the tools they provide; a tool is
called, through :meth:`BaseTool.invoke` / :meth:`BaseTool.ainvoke`. A tool
registered lazily is a :class:`~assay.kernel.registry.Lazy` entry of the
``tools`` registry, imported on first use like any other kind.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Awaitable, Callable
from typing import Any, overload

from pydantic import ValidationError

from .context import RunContext
from .errors import TOOL_ARGUMENTS_INVALID, TOOL_ASYNC_ONLY, TOOL_SCHEMA_INVALID, AssayError
from .function_schema import (
    FunctionSchema,
    check_function,
    decode_json_strings,
    function_schema,
    is_async_callable,
    unwrap,
)

_TOOL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$")


class ArgumentsInvalid(AssayError):
    """Arguments that do not match the tool's schema; ``errors`` lists each problem."""

    code = TOOL_ARGUMENTS_INVALID

    def __init__(self, tool: str, errors: list[dict[str, Any]]) -> None:
        self.errors = errors
        summary = "; ".join(f"{e['path'] or '(arguments)'}: {e['message']}" for e in errors[:5])
        super().__init__(
            message=f"invalid arguments for {tool}: {summary}",
            hint="Fix the listed arguments to match the tool's parameters and call again.",
        )


class BaseTool:
    """Something the model calls with JSON arguments.

    Subclasses set ``name`` and ``description`` and implement
    :attr:`parameters`, :meth:`validate_arguments` and :meth:`invoke` (or
    :meth:`ainvoke`, with ``is_async`` true).
    """

    name: str = ""
    description: str = ""
    concurrent: bool = False
    """True when several calls of this tool may run at once in one run (the agent then runs
    parallel calls of one model turn concurrently); False (the default) runs them one by one."""

    @property
    def is_async(self) -> bool:
        """True when the tool runs only from async code (:meth:`ainvoke`)."""
        return False

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the arguments object."""
        raise NotImplementedError

    def validate_arguments(self, arguments: dict[str, Any]) -> Any:
        """Check ``arguments``; return what :meth:`invoke` takes, or raise :class:`ArgumentsInvalid`."""
        raise NotImplementedError

    def prepare(self) -> None:
        """Build whatever is built lazily (schemas), so problems surface now."""

    def invoke(self, validated: Any, run: RunContext | None) -> Any:
        """Run the tool synchronously on validated arguments."""
        raise NotImplementedError

    async def ainvoke(self, validated: Any, run: RunContext | None) -> Any:
        """Run the tool from async code; sync tools run in a worker thread."""
        return await asyncio.to_thread(self.invoke, validated, run)

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI function-calling definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def to_mcp(self) -> dict[str, Any]:
        """The MCP ``tools/list`` entry."""
        return {"name": self.name, "description": self.description, "inputSchema": self.parameters}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class FunctionTool(BaseTool):
    """A Python function (sync or async) exposed as a tool.

    Construction makes only the cheap checks (name, description present, no
    ``*args``, sync or async); the pydantic model and JSON Schema are built on
    first use, so plugin modules full of tools import fast.
    """

    def __init__(
        self, func: Callable[..., Any], *, name: str | None = None, description: str | None = None
    ) -> None:
        target = unwrap(func)
        self.func = func
        self.name = check_name(name or str(getattr(target, "__name__", "")))
        check_function(func, description)
        self._description = description
        self._is_async = is_async_callable(func)
        self._schema: FunctionSchema | None = None
        self._schema_lock = threading.Lock()

    @property
    def schema(self) -> FunctionSchema:
        if self._schema is None:
            with self._schema_lock:
                if self._schema is None:
                    try:
                        built = function_schema(self.func, self._description)
                    except Exception as exc:  # noqa: BLE001 - one error type for every schema problem
                        raise AssayError(
                            TOOL_SCHEMA_INVALID,
                            f"tool {self.name!r}: cannot build its schema: {type(exc).__name__}: {exc}",
                            "Fix the function's type hints (ASSAY_STRICT_PLUGINS=1 finds this at start-up).",
                        ) from exc
                    self._validator = built.model.__pydantic_validator__
                    self._schema = built
        return self._schema

    def prepare(self) -> None:
        self.schema  # noqa: B018 - build now, so problems surface at registration

    @property
    def description(self) -> str:  # type: ignore[override]
        return self.schema.description

    @property
    def is_async(self) -> bool:
        return self._is_async

    @property
    def parameters(self) -> dict[str, Any]:
        return self.schema.json_schema

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        schema = self._schema or self.schema
        if schema.json_decodable:
            arguments = decode_json_strings(arguments, schema.json_decodable)
        try:
            model = self._validator.validate_python(arguments)
        except ValidationError as exc:
            raise ArgumentsInvalid(self.name, _pydantic_problems(exc)) from None
        return model.__dict__

    def _bind(
        self, validated: dict[str, Any], run: RunContext | None
    ) -> tuple[list[Any], dict[str, Any]]:
        schema = self._schema or self.schema
        kwargs = dict(validated)
        if schema.context_param:
            kwargs[schema.context_param] = run if run is not None else RunContext()
        args = [kwargs.pop(n) for n in schema.positional_only] if schema.positional_only else []
        return args, kwargs

    def invoke(self, validated: dict[str, Any], run: RunContext | None) -> Any:
        if self._is_async:
            raise _async_only(self.name)
        args, kwargs = self._bind(validated, run)
        return self.func(*args, **kwargs)

    async def ainvoke(self, validated: dict[str, Any], run: RunContext | None) -> Any:
        if self._is_async:
            args, kwargs = self._bind(validated, run)
            return await self.func(*args, **kwargs)
        return await asyncio.to_thread(self.invoke, validated, run)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)


class JsonSchemaTool(BaseTool):
    """A tool defined by a raw JSON Schema and a handler taking the arguments dict.

    The handler may be sync or async; it receives ``(arguments, run)``.
    """

    def __init__(
        self,
        name: str,
        description: str,
        parameters: dict[str, Any],
        handler: Callable[[dict[str, Any], RunContext | None], Any | Awaitable[Any]],
    ) -> None:
        import jsonschema

        if not description or not description.strip():
            raise ValueError("The description is required")
        self.name = check_name(name)
        self.description = description.strip()
        jsonschema.Draft202012Validator.check_schema(parameters)
        self._parameters = parameters
        self._validator = jsonschema.Draft202012Validator(parameters)
        self.handler = handler
        self._is_async = is_async_callable(handler)

    @property
    def is_async(self) -> bool:
        return self._is_async

    @property
    def parameters(self) -> dict[str, Any]:
        return self._parameters

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        problems = [
            {
                "path": ".".join(str(p) for p in err.absolute_path),
                "message": err.message,
                "type": err.validator,
            }
            for err in sorted(
                self._validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)
            )
        ]
        if problems:
            raise ArgumentsInvalid(self.name, problems)
        return arguments

    def invoke(self, validated: dict[str, Any], run: RunContext | None) -> Any:
        if self._is_async:
            raise _async_only(self.name)
        return self.handler(validated, run)

    async def ainvoke(self, validated: dict[str, Any], run: RunContext | None) -> Any:
        if self._is_async:
            return await self.handler(validated, run)
        return await asyncio.to_thread(self.handler, validated, run)


@overload
def tool(func: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
):
    """Make a :class:`FunctionTool` from a function: ``@tool`` or ``@tool(description=...)``.

    Raises ``ValueError("The description is required")`` at decoration time
    when there is neither ``description=`` nor a docstring.
    """
    if func is not None:
        return FunctionTool(func, name=name, description=description)
    return lambda f: FunctionTool(f, name=name, description=description)


def _async_only(name: str) -> AssayError:
    return AssayError(
        TOOL_ASYNC_ONLY,
        f"tool {name!r} is asynchronous and cannot be called through the sync channel",
        "Call it with `await kernel.acall_tool(...)` from async code.",
    )


def check_name(name: str) -> str:
    if not _TOOL_NAME.match(name or ""):
        raise ValueError(f"invalid tool name {name!r}: use letters, digits, '_', '.', '-' (max 64)")
    return name


def _pydantic_problems(exc: ValidationError) -> list[dict[str, Any]]:
    return [
        {"path": ".".join(str(p) for p in err["loc"]), "message": err["msg"], "type": err["type"]}
        for err in exc.errors(include_url=False, include_context=False, include_input=False)
    ]
