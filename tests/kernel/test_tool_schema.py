"""@tool: JSON Schema from signature, hints and docstrings."""

from __future__ import annotations

import functools
from typing import Annotated, Literal

import pytest
from pydantic import Field

from assay import AssayError, FunctionTool, RunContext, tool


def test_schema_comes_from_signature_and_type_hints():
    @tool
    def search(
        query: str, limit: int = 10, tags: list[str] | None = None, mode: Literal["a", "b"] = "a"
    ) -> str:
        """Search things."""
        return query

    schema = search.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    props = schema["properties"]
    assert props["query"] == {"type": "string"}
    assert props["limit"] == {"type": "integer", "default": 10}
    assert props["mode"]["enum"] == ["a", "b"]
    assert {"type": "array", "items": {"type": "string"}} in props["tags"]["anyOf"]
    assert search.name == "search" and search.description == "Search things."


def test_schema_forbids_additional_properties():
    @tool
    def f(x: int) -> int:
        """Identity."""
        return x

    assert f.parameters["additionalProperties"] is False


def test_google_docstring_parameter_descriptions():
    @tool
    def f(table: str, limit: int = 5) -> None:
        """Read a table.

        Args:
            table: The table to read.
            limit: At most this many rows.
        """

    props = f.parameters["properties"]
    assert props["table"]["description"] == "The table to read."
    assert props["limit"]["description"] == "At most this many rows."
    assert f.description == "Read a table."


def test_numpy_docstring_parameter_descriptions():
    @tool
    def f(table: str, limit: int = 5) -> None:
        """Read a table.

        Parameters
        ----------
        table : str
            The table to read.
        limit : int
            At most this many rows.
        """

    props = f.parameters["properties"]
    assert props["table"]["description"] == "The table to read."
    assert props["limit"]["description"] == "At most this many rows."


def test_sphinx_docstring_parameter_descriptions():
    @tool
    def f(table: str, limit: int = 5) -> None:
        """Read a table.

        :param table: The table to read.
        :param limit: At most this many rows.
        """

    props = f.parameters["properties"]
    assert props["table"]["description"] == "The table to read."
    assert props["limit"]["description"] == "At most this many rows."


def test_annotated_field_description_wins_over_docstring():
    @tool
    def f(x: Annotated[int, Field(description="From Field.", ge=0)], y: int = 1) -> int:
        """Add.

        Args:
            x: From the docstring.
            y: Second.
        """
        return x + y

    props = f.parameters["properties"]
    assert props["x"]["description"] == "From Field."
    assert props["x"]["minimum"] == 0
    assert props["y"]["description"] == "Second."


def test_missing_description_raises_at_decoration_time():
    with pytest.raises(ValueError, match="^The description is required$"):

        @tool
        def f(x: int) -> int:
            return x


def test_description_argument_replaces_missing_docstring():
    @tool(description="Explicit.", name="renamed")
    def f(x: int) -> int:
        return x

    assert (f.name, f.description) == ("renamed", "Explicit.")


def test_run_context_parameter_is_hidden_from_schema():
    @tool
    def f(x: int, run: RunContext) -> str:
        """Uses the run."""
        return run.run_id

    assert list(f.parameters["properties"]) == ["x"]
    assert f.schema.context_param == "run"


def test_optional_run_context_parameter_is_hidden_too():
    @tool
    def f(x: int, run: RunContext | None = None) -> int:
        """Uses the run maybe."""
        return x

    assert list(f.parameters["properties"]) == ["x"]


def test_is_async_is_decided_after_unwrapping_partials():
    async def fetch(url: str, retries: int) -> str:
        """Fetch."""
        return url

    def compute(a: int, b: int) -> int:
        """Compute."""
        return a + b

    async_tool = FunctionTool(functools.partial(fetch, retries=3), name="fetch")
    sync_tool = FunctionTool(functools.partial(functools.partial(compute, 1)), name="compute")
    assert async_tool.is_async is True and sync_tool.is_async is False
    assert list(async_tool.parameters["properties"]) == ["url"]  # the bound argument is gone
    assert list(sync_tool.parameters["properties"]) == ["b"]


def test_async_callable_object_is_async():
    class Fetcher:
        async def __call__(self, url: str) -> str:
            return url

    assert FunctionTool(Fetcher(), name="fetcher", description="Fetch.").is_async is True


def test_var_args_are_rejected():
    with pytest.raises(TypeError, match="\\*args"):

        @tool
        def f(*items: int) -> int:
            """Sum."""
            return sum(items)


def test_schema_is_built_on_first_use_not_at_decoration():
    @tool
    def later(x: NotDefinedAnywhere) -> int:  # noqa: F821 - resolved lazily, so decoration succeeds
        """Uses an annotation that cannot be resolved."""
        return 1

    assert later._schema is None
    with pytest.raises(AssayError) as caught:
        later.parameters
    assert caught.value.code == "TOOL_SCHEMA_INVALID" and "NameError" in caught.value.message


def test_strict_mode_builds_tool_schemas_at_registration(make_assay_kernel):
    import types

    from assay import PluginError, hookimpl
    from tests.kernel.conftest import plugin_info

    @tool
    def broken(x: NotDefinedAnywhere) -> int:  # noqa: F821
        """Broken annotation."""
        return 1

    plugin = types.ModuleType("lazy_plugin")
    plugin.register_tools = hookimpl(lambda register: register(broken))
    lenient = make_assay_kernel(plugin)
    assert "broken" in lenient.tools  # default: found on first use, as an error envelope
    assert lenient.call_tool("broken", {"x": 1}).error_code == "TOOL_SCHEMA_INVALID"
    with pytest.raises(PluginError) as caught:
        make_assay_kernel(plugin, strict_plugins=True).start()
    assert "NotDefinedAnywhere" in caught.value.message
    assert plugin_info(lenient, "lazy_plugin").status == "loaded"


def test_annotations_resolve_through_a_lazy_module_getattr():
    import sys
    import types

    module = types.ModuleType("lazy_annotations_mod")
    source = '''
from __future__ import annotations
from assay import tool

def __getattr__(name):
    if name == "Point":
        from pydantic import BaseModel
        class Point(BaseModel):
            x: int
            y: int
        globals()["Point"] = Point
        return Point
    raise AttributeError(name)

@tool
def plot(point: Point) -> int:
    """Plot a point."""
    return point.x + point.y
'''
    sys.modules[module.__name__] = module
    try:
        exec(source, module.__dict__)
        assert "Point" not in module.__dict__  # not built at import
        assert module.plot.parameters["properties"]["point"]["$ref"] == "#/$defs/Point"
        assert module.plot.validate_arguments({"point": {"x": 1, "y": 2}})["point"].y == 2
    finally:
        del sys.modules[module.__name__]
