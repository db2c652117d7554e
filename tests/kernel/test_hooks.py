"""One test per hook spec: what a plugin registers through it becomes visible, with provenance."""

from __future__ import annotations

import types

import click
from click.testing import CliRunner

from assay import Resource, ResourceType, hookimpl, tool
from assay.kernel.cli import build_cli
from assay.kernel.messages import Message
from assay.kernel.models import Model
from tests.kernel.conftest import plugin_info


def plugin(name: str, **hooks) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook_name, fn in hooks.items():
        setattr(module, hook_name, hookimpl(fn))
    return module


class Notes(Resource):
    def __init__(self, name: str, type_: str = ResourceType.KNOWLEDGE) -> None:
        self.name, self.type = name, ResourceType(type_)

    def get_prompt(self, budget=None):
        return f"notes called {self.name}"


def test_register_resource_types_adds_a_type_resources_can_use(make_assay_kernel):
    def register_resource_types(register):
        register("vector_index")

    def register_resources(register):
        register(Notes("embeddings", "vector_index"))

    kernel = make_assay_kernel(
        plugin(
            "vec",
            register_resource_types=register_resource_types,
            register_resources=register_resources,
        )
    )
    assert "vector_index" in kernel.registry("resource_types")
    assert kernel.resources["embeddings"].type == "vector_index"


def test_register_resources_rejects_an_unregistered_type(make_assay_kernel):
    kernel = make_assay_kernel(
        plugin("bad", register_resources=lambda register: register(Notes("x", "nonsense")))
    )
    assert kernel.resources == {}
    assert "unknown type" in plugin_info(kernel, "bad").error["message"]


def test_register_resources_adds_resources_with_provenance(make_assay_kernel):
    def register_resources(register, settings):
        assert settings is not None
        register(Notes("glossary"))

    kernel = make_assay_kernel(plugin("kb", register_resources=register_resources))
    assert kernel.provenance("resources", "glossary") == "kb"
    assert "notes called glossary" in kernel.system_prompt()


def test_register_tools_accepts_tools_and_plain_functions(make_assay_kernel):
    @tool
    def decorated(x: int) -> int:
        """Decorated."""
        return x

    def plain(y: str) -> str:
        """A plain function, wrapped by the kernel."""
        return y

    def register_tools(register):
        register(decorated)
        register(plain)

    kernel = make_assay_kernel(plugin("tl", register_tools=register_tools))
    assert sorted(kernel.tools) == ["decorated", "plain"]
    assert kernel.call_tool("plain", {"y": "hi"}).data == "hi"
    assert kernel.provenance("tools", "plain") == "tl"


def test_register_database_engines_needs_name_and_schemes(make_assay_kernel):
    engine = types.SimpleNamespace(name="fakesql", schemes=("fakesql",))

    def register_database_engines(register):
        register(engine)

    kernel = make_assay_kernel(
        plugin("eng", register_database_engines=register_database_engines),
        plugin(
            "noschemes",
            register_database_engines=lambda register: register(
                types.SimpleNamespace(name="broken")
            ),
        ),
    )
    assert kernel.registry("database_engines").get("fakesql") is engine
    assert "schemes" in plugin_info(kernel, "noschemes").error["message"]


def test_register_sandbox_runtimes_records_runtime_classes(make_assay_kernel):
    class FakeRuntime:
        name = "fake"
        isolated = False

    kernel = make_assay_kernel(
        plugin("rt", register_sandbox_runtimes=lambda register: register(FakeRuntime))
    )
    assert kernel.registry("sandbox_runtimes").get("fake") is FakeRuntime
    assert kernel.provenance("sandbox_runtimes", "fake") == "rt"


def test_register_artifact_stores_records_store_classes(make_assay_kernel):
    class MemoryStore:
        name = "memory"

    kernel = make_assay_kernel(
        plugin("st", register_artifact_stores=lambda register: register(MemoryStore))
    )
    assert kernel.registry("artifact_stores").get("memory") is MemoryStore


def test_register_report_renderers_makes_renderer_available(make_assay_kernel):
    class Plain:
        name = "plain"
        media_type = "text/plain"

        def render(self, document, reader):
            return document["title"].encode()

    kernel = make_assay_kernel(
        plugin("rp", register_report_renderers=lambda register: register(Plain()))
    )
    assert kernel.renderer("plain").render({"title": "t"}, kernel) == b"t"


def test_register_models_makes_model_constructible_by_id(make_assay_kernel):
    class Echo(Model):
        model_id = "echo"

        def complete(self, messages, tools):
            return Message(role="assistant", content=messages[-1].content)

    kernel = make_assay_kernel(plugin("md", register_models=lambda register: register(Echo)))
    model = kernel.model("echo")
    assert model.complete([Message(role="user", content="hi")], []).content == "hi"


def test_register_commands_adds_cli_commands(make_assay_kernel):
    def register_commands(cli, kernel):
        @cli.command("hello")
        def hello():
            """Say hello."""
            click.echo(f"hello from a kernel with {len(kernel.tools)} tools")

    kernel = make_assay_kernel(plugin("cmd", register_commands=register_commands))
    result = CliRunner().invoke(build_cli(kernel), ["hello"], obj={"kernel": kernel})
    assert result.exit_code == 0 and result.output == "hello from a kernel with 0 tools\n"
    assert (
        "hello" not in build_cli(make_assay_kernel()).commands
    )  # never leaks into another kernel's CLI


def test_register_commands_failure_is_isolated(make_assay_kernel):
    def register_commands(cli):
        raise RuntimeError("no commands today")

    kernel = make_assay_kernel(plugin("cmdbad", register_commands=register_commands))
    build_cli(kernel)
    assert plugin_info(kernel, "cmdbad").error["code"] == "PLUGIN_REGISTER_FAILED"
