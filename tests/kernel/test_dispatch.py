"""Tool dispatch: validation, error envelopes, sync/async channels."""

from __future__ import annotations

import asyncio
import threading

import pytest

from assay import AssayError, JsonSchemaTool, Kernel, RunContext, ToolResult, hookimpl, tool


class _Tools:
    """A host plugin object carrying the tools under test."""

    def __init__(self, *tools):
        self.tools = tools
        self.__name__ = "test_tools"

    @hookimpl
    def register_tools(self, register):
        for t in self.tools:
            register(t)


@pytest.fixture
def kernel_with(make_assay_kernel):
    """``kernel_with(*tools)``: a fresh kernel with just those tools (the plugin's factory)."""
    return lambda *tools: make_assay_kernel(_Tools(*tools))


@tool
def scale(values: list[float], factor: float = 1.0, label: str = "x") -> dict:
    """Scale values.

    Args:
        values: Numbers to scale.
        factor: Multiplier.
        label: A name.
    """
    return {"label": label, "values": [v * factor for v in values]}


@tool
def explode(message: str) -> None:
    """Always fails."""
    raise KeyError(message)


@tool
async def slow_async(delay: float) -> str:
    """Sleep then answer."""
    await asyncio.sleep(delay)
    return "done"


def test_valid_call_returns_success_envelope(kernel_with):
    result = kernel_with(scale).call_tool("scale", {"values": [1, 2], "factor": 3})
    assert result.success and result.tool == "scale" and result.error_code is None
    assert result.data == {"label": "x", "values": [3.0, 6.0]}
    assert result.elapsed_ms is not None and result.elapsed_ms >= 0


def test_invalid_arguments_give_error_code_and_paths_not_traceback(kernel_with):
    result = kernel_with(scale).call_tool(
        "scale", {"values": [1, "two"], "factor": "big", "extra": 1}
    )
    assert not result.success and result.error_code == "TOOL_ARGUMENTS_INVALID"
    paths = {e["path"] for e in result.errors}
    assert paths == {"values.1", "factor", "extra"}
    assert "Traceback" not in result.for_model() and "values.1" in result.for_model()


def test_missing_required_argument_is_reported_with_its_path(kernel_with):
    result = kernel_with(scale).call_tool("scale", {})
    assert result.error_code == "TOOL_ARGUMENTS_INVALID"
    assert result.errors[0]["path"] == "values" and result.errors[0]["type"] == "missing"


def test_arguments_must_be_an_object(kernel_with):
    result = kernel_with(scale).call_tool("scale", "[1, 2]")
    assert result.error_code == "TOOL_ARGUMENTS_INVALID" and result.errors[0]["path"] == ""


def test_unknown_tool_gives_tool_not_found(kernel_with):
    result = kernel_with(scale).call_tool("scael", {})
    assert result.error_code == "TOOL_NOT_FOUND" and "scale" in result.hint


def test_exception_in_tool_gives_execution_failed_with_type_and_message(kernel_with):
    result = kernel_with(explode).call_tool("explode", {"message": "no such column"})
    assert result.error_code == "TOOL_EXECUTION_FAILED"
    assert result.message == "KeyError: 'no such column'"
    assert result.metadata["exception_type"] == "KeyError"


def test_assay_error_in_tool_keeps_its_code(kernel_with):
    @tool
    def picky() -> None:
        """Fails with a code."""
        raise AssayError("PICKY_FAILED", "nope", "try later")

    result = kernel_with(picky).call_tool("picky")
    assert (result.error_code, result.message, result.hint) == ("PICKY_FAILED", "nope", "try later")


def test_json_encoded_strings_are_accepted_for_non_string_parameters(kernel_with):
    result = kernel_with(scale).call_tool(
        "scale", {"values": "[1, 2]", "factor": "2", "label": "[not decoded]"}
    )
    assert result.success, result
    assert result.data == {"label": "[not decoded]", "values": [2.0, 4.0]}


def test_whole_arguments_as_json_string_are_accepted(kernel_with):
    result = kernel_with(scale).call_tool("scale", '{"values": [5]}')
    assert result.success and result.data["values"] == [5.0]


def test_tool_returning_tool_result_is_passed_through(kernel_with):
    @tool
    def rich() -> ToolResult:
        """Rich result."""
        return ToolResult.ok({"n": 1}, content="one row")

    result = kernel_with(rich).call_tool("rich")
    assert result.content == "one row" and result.tool == "rich"


def test_run_context_is_injected(kernel_with):
    @tool
    def whoami(run: RunContext) -> str:
        """The run id."""
        return run.run_id

    kernel = kernel_with(whoami)
    run = RunContext(kernel=kernel)
    assert kernel.call_tool("whoami", {}, run=run).data == run.run_id


def test_async_tool_through_sync_channel_raises_clear_error(kernel_with):
    kernel = kernel_with(slow_async)
    with pytest.raises(AssayError) as caught:
        kernel.call_tool("slow_async", {"delay": 0})
    assert caught.value.code == "TOOL_ASYNC_ONLY" and "acall_tool" in caught.value.hint


def test_async_tool_direct_invoke_raises_clear_error():
    with pytest.raises(AssayError) as caught:
        slow_async.invoke({"delay": 0}, None)
    assert caught.value.code == "TOOL_ASYNC_ONLY" and "acall_tool" in caught.value.hint


async def test_async_tool_through_async_channel(kernel_with):
    result = await kernel_with(slow_async).acall_tool("slow_async", {"delay": 0})
    assert result.success and result.data == "done"


async def test_sync_tool_from_async_code_runs_off_the_event_loop(kernel_with):
    loop_thread = threading.get_ident()
    started, release = threading.Event(), threading.Event()

    @tool
    def blocking() -> int:
        """Blocks until released, reporting its thread."""
        started.set()
        assert release.wait(5), "the event loop never got to run while the tool blocked"
        return threading.get_ident()

    kernel = kernel_with(blocking)
    call = asyncio.ensure_future(kernel.acall_tool("blocking"))

    async def releaser():
        # Runs on the loop while the sync tool is blocked: impossible if the tool blocked the loop.
        while not started.is_set():
            await asyncio.sleep(0.001)
        release.set()

    await asyncio.wait_for(releaser(), 5)
    result = await call
    assert result.success and result.data != loop_thread


def test_json_schema_tool_validates_with_jsonschema(kernel_with):
    seen = []
    proxied = JsonSchemaTool(
        "remote_lookup",
        "Look up a key remotely.",
        {
            "type": "object",
            "properties": {
                "key": {"type": "string"},
                "options": {"type": "object", "properties": {"depth": {"type": "integer"}}},
            },
            "required": ["key"],
            "additionalProperties": False,
        },
        lambda args, run: seen.append(args) or {"found": args["key"]},
    )
    kernel = kernel_with(proxied)
    assert kernel.call_tool("remote_lookup", {"key": "k"}).data == {"found": "k"}
    bad = kernel.call_tool("remote_lookup", {"options": {"depth": "deep"}, "other": 1})
    assert bad.error_code == "TOOL_ARGUMENTS_INVALID"
    assert {e["path"] for e in bad.errors} == {"", "options.depth"}
    assert len(seen) == 1


def test_json_schema_tool_requires_description_and_valid_schema():
    import jsonschema

    with pytest.raises(ValueError, match="The description is required"):
        JsonSchemaTool("t", "", {"type": "object"}, lambda a, r: None)
    with pytest.raises(jsonschema.SchemaError):
        JsonSchemaTool("t", "d", {"type": "no-such-type"}, lambda a, r: None)


async def test_async_json_schema_tool(kernel_with):
    async def handler(args, run):
        return args["n"] + 1

    t = JsonSchemaTool(
        "inc", "Increment.", {"type": "object", "properties": {"n": {"type": "integer"}}}, handler
    )
    kernel = kernel_with(t)
    assert t.is_async and (await kernel.acall_tool("inc", {"n": 1})).data == 2


def test_openai_export_shape(kernel_with):
    definition = kernel_with(scale).tool_definitions("openai")[0]
    assert definition["type"] == "function"
    fn = definition["function"]
    assert fn["name"] == "scale" and fn["description"].startswith("Scale values.")
    assert fn["parameters"]["additionalProperties"] is False
    assert fn["parameters"]["properties"]["values"]["description"] == "Numbers to scale."


def test_mcp_export_shape(kernel_with):
    definition = kernel_with(scale).tool_definitions("mcp")[0]
    assert set(definition) == {"name", "description", "inputSchema"}
    assert definition["inputSchema"]["required"] == ["values"]


def test_lazy_tool_registered_by_path_imports_on_first_use(make_dist, only):
    import sys

    from assay import BaseTool, Kernel, Lazy

    modules = make_dist(
        "acme",
        {
            "lazy": """
from assay import hookimpl

@hookimpl
def register_tools(register):
    register(__name__ + "_impl:triple")
""",
        },
    )
    impl = modules["lazy"] + "_impl"
    from pathlib import Path

    # make_dist put its site directory first on sys.path: the implementation module goes beside the plugin.
    Path(sys.path[0], impl + ".py").write_text(
        'def triple(x: int) -> int:\n    """Triple x."""\n    return 3 * x\n'
    )
    only("lazy")
    kernel = Kernel()
    tools = kernel.registry("tools")  # started, listed, not imported
    assert "triple" in tools and type(tools.peek("triple")) is Lazy and impl not in sys.modules
    result = kernel.call_tool("triple", {"x": 2})
    assert result.data == 6 and impl in sys.modules and isinstance(tools.peek("triple"), BaseTool)
    assert kernel.tools["triple"].parameters["properties"]["x"]["type"] == "integer"
    sys.modules.pop(impl, None)


def test_lazy_tool_that_fails_to_import_answers_tool_load_failed(kernel_with):
    from assay import Lazy

    kernel = kernel_with(Lazy("no_such_module_anywhere:thing"))
    result = kernel.call_tool("thing", {})
    assert result.error_code == "TOOL_LOAD_FAILED" and "no_such_module_anywhere" in result.message


def test_builtin_tools_are_described_from_the_loaded_tools(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    kernel = Kernel()
    try:
        described = {d["function"]["name"]: d for d in kernel.tool_definitions("openai")}
        direct = {name: tool.to_openai() for name, tool in kernel.tools.items()}
        mcp = {d["name"]: d for d in kernel.tool_definitions("mcp")}
    finally:
        kernel.close()
    assert described == direct and set(mcp) == set(direct)
    assert {"current_time", "sql_query", "code_interpreter"} <= set(described)
    assert not (tmp_path / "home" / "cache").exists()  # nothing kept between processes


def test_asking_for_an_unknown_tool_or_format_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    kernel = Kernel()
    try:
        with pytest.raises(KeyError):
            kernel.tool_definitions("openai", names=["no_such_tool"])
        with pytest.raises(ValueError):
            kernel.tool_definitions("yaml")
    finally:
        kernel.close()


def test_threads_describing_tools_at_once_all_get_them(tmp_path, monkeypatch):
    import threading

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    kernel = Kernel()
    results, errors = [], []

    def describe():
        try:
            results.append(len(kernel.tool_definitions("openai")))
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    try:
        threads = [threading.Thread(target=describe) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        kernel.close()
    assert errors == [] and len(set(results)) == 1 and results[0] > 0
