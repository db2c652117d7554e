"""Lazy registration: a plugin names an object now; the kernel imports it on first use."""

from __future__ import annotations

import sys
import types
import uuid
from pathlib import Path

import pytest

from assay import BaseTool, Kernel, Lazy, PluginError, Settings, hookimpl
from tests.kernel.conftest import plugin_info


def plugin(name: str, **hooks) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook_name, fn in hooks.items():
        setattr(module, hook_name, hookimpl(fn))
    return module


@pytest.fixture
def impl_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``impl_module(source)``: a fresh importable module name (not imported yet)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[str] = []

    def make(source: str) -> str:
        name = f"lazyimpl_{uuid.uuid4().hex[:8]}"
        (tmp_path / f"{name}.py").write_text(source)
        made.append(name)
        return name

    yield make
    for name in made:
        sys.modules.pop(name, None)


RUNTIME = """
class FakeRuntime:
    name = "fake"
    isolated = {isolated}
"""


def test_lazy_runtime_is_not_imported_at_start_up_and_loads_on_first_get(
    make_assay_kernel, impl_module
):
    module = impl_module(RUNTIME.format(isolated=True))
    kernel = make_assay_kernel(
        plugin(
            "rt",
            register_sandbox_runtimes=lambda register: register(
                Lazy(f"{module}:FakeRuntime", name="fake", isolated=True)
            ),
        )
    )
    registry = kernel.registry("sandbox_runtimes")
    assert "fake" in registry and registry.peek("fake").isolated is True
    assert module not in sys.modules
    runtime = registry.get("fake")
    assert runtime is sys.modules[module].FakeRuntime
    assert (
        registry.as_dict() == {"fake": runtime}
        and kernel.provenance("sandbox_runtimes", "fake") == "rt"
    )


def test_lazy_that_fails_to_import_fails_its_plugin_with_plugin_load_failed(make_assay_kernel):
    def register_runtimes(register):
        register(Lazy("no_such_module_anywhere_xyz:Runtime", name="ghost", isolated=True))

    def answer() -> int:
        """Something else of the same plugin, rolled back with it."""
        return 42

    kernel = make_assay_kernel(
        plugin(
            "ghostly",
            register_sandbox_runtimes=register_runtimes,
            register_tools=lambda register: register(answer),
        )
    )
    assert (
        plugin_info(kernel, "ghostly").status == "loaded" and kernel.call_tool("answer").data == 42
    )
    with pytest.raises(PluginError) as caught:
        kernel.registry("sandbox_runtimes").get("ghost")
    assert (
        caught.value.code == "PLUGIN_LOAD_FAILED"
        and "no_such_module_anywhere_xyz" in caught.value.message
    )
    info = plugin_info(kernel, "ghostly")
    assert info.status == "failed" and info.error["code"] == "PLUGIN_LOAD_FAILED"
    assert "ghost" in info.error["message"]
    with pytest.raises(PluginError):  # keeps answering the same error, never a silent None
        kernel.registry("sandbox_runtimes").get("ghost")
    assert kernel.call_tool("answer").error_code == "PLUGIN_LOAD_FAILED"


def test_listing_a_registry_leaves_out_a_failed_lazy_entry_and_reports_it(
    make_assay_kernel, impl_module
):
    module = impl_module(RUNTIME.format(isolated=True))
    good = plugin(
        "good",
        register_sandbox_runtimes=lambda register: register(
            Lazy(f"{module}:FakeRuntime", name="fake", isolated=True)
        ),
    )
    bad = plugin(
        "bad",
        register_sandbox_runtimes=lambda register: register(
            Lazy(f"{module}:Missing", name="missing", isolated=True)
        ),
    )
    kernel = make_assay_kernel(good, bad)
    assert sorted(kernel.registry("sandbox_runtimes").as_dict()) == ["fake"]
    assert plugin_info(kernel, "bad").error["code"] == "PLUGIN_LOAD_FAILED"
    assert plugin_info(kernel, "good").status == "loaded"


def test_lazy_whose_declared_attribute_differs_from_the_object_fails(
    make_assay_kernel, impl_module
):
    module = impl_module(RUNTIME.format(isolated=False))
    kernel = make_assay_kernel(
        plugin(
            "liar",
            register_sandbox_runtimes=lambda register: register(
                Lazy(f"{module}:FakeRuntime", name="fake", isolated=True)
            ),
        )
    )
    with pytest.raises(PluginError, match="isolated"):
        kernel.registry("sandbox_runtimes").get("fake")


def test_lazy_runtime_must_declare_isolated(make_assay_kernel):
    kernel = make_assay_kernel(
        plugin(
            "undeclared",
            register_sandbox_runtimes=lambda register: register(
                Lazy("anything:Runtime", name="fake")
            ),
        )
    )
    info = plugin_info(kernel, "undeclared")
    assert info.status == "failed" and "isolated" in info.error["message"]


def test_strict_mode_loads_lazy_registrations_at_start_up(make_assay_kernel):
    kernel = make_assay_kernel(
        plugin(
            "ghostly",
            register_models=lambda register: register(
                Lazy("no_such_module_anywhere_xyz:Model", name="ghost")
            ),
        ),
        strict_plugins=True,
    )
    with pytest.raises(PluginError) as caught:
        kernel.start()
    assert caught.value.code == "PLUGIN_LOAD_FAILED"


def test_factory_lazy_is_called_with_the_kernel(make_assay_kernel, impl_module):
    module = impl_module("""
class Engine:
    def __init__(self, kernel):
        self.kernel = kernel
        self.name = "bound"
        self.schemes = ("bound",)

def make(kernel):
    return Engine(kernel)
""")
    kernel = make_assay_kernel(
        plugin(
            "eng",
            register_database_engines=lambda register: register(
                Lazy(f"{module}:make", name="bound", factory=True)
            ),
        )
    )
    assert kernel.registry("database_engines").get("bound").kernel is kernel


def test_lazy_tool_lists_without_importing_and_factory_tool_gets_the_kernel(
    make_assay_kernel, impl_module
):
    module = impl_module('''
from assay import tool

def make(kernel):
    @tool
    def whoami() -> str:
        """Which kernel this tool belongs to."""
        return kernel.label
    return whoami
''')
    kernel = make_assay_kernel(
        plugin(
            "who",
            register_tools=lambda register: register(
                Lazy(f"{module}:make", name="whoami", factory=True)
            ),
        )
    )
    kernel.label = "mine"
    tools = kernel.registry("tools")
    assert (
        list(tools) == ["whoami"] and type(tools.peek("whoami")) is Lazy
    )  # listed by name, not imported
    assert kernel.plugins()[0].registered == {"tools": ["whoami"]} and module not in sys.modules
    assert kernel.call_tool("whoami").data == "mine"
    assert isinstance(tools.peek("whoami"), BaseTool)  # loaded once, cached


def test_lazy_tool_load_failure_fails_its_plugin_and_keeps_answering_tool_load_failed(
    make_assay_kernel,
):
    kernel = make_assay_kernel(
        plugin(
            "broken_tools",
            register_tools=lambda register: register("no_such_module_anywhere_xyz:thing"),
        )
    )
    assert "thing" in kernel.registry("tools")  # listed before anything is imported
    first = kernel.call_tool("thing", {})
    assert first.error_code == "TOOL_LOAD_FAILED"
    info = plugin_info(kernel, "broken_tools")
    assert info.status == "failed" and info.error["code"] == "PLUGIN_LOAD_FAILED"
    assert kernel.call_tool("thing", {}).error_code == "TOOL_LOAD_FAILED"
    with pytest.raises(
        PluginError
    ) as caught:  # looking it up answers the same, never a silent None
        kernel.get_tool("thing")
    assert caught.value.code == "TOOL_LOAD_FAILED"


def test_listing_tools_loads_lazy_ones_and_leaves_out_a_failed_one(make_assay_kernel):
    def answer() -> int:
        """The answer."""
        return 42

    broken = plugin(
        "broken", register_tools=lambda register: register("no_such_module_anywhere_xyz:thing")
    )
    fine = plugin("fine", register_tools=lambda register: register(answer))
    kernel = make_assay_kernel(broken, fine)
    assert sorted(kernel.registry("tools")) == ["answer", "thing"]
    assert sorted(kernel.tools) == ["answer"]
    assert plugin_info(kernel, "broken").error["code"] == "PLUGIN_LOAD_FAILED"
    assert [d["function"]["name"] for d in kernel.tool_definitions()] == ["answer"]


def test_lazy_resource_declares_its_type_and_loads_when_listed(make_assay_kernel, impl_module):
    module = impl_module("""
from assay import Resource, ResourceType

class Notes(Resource):
    name = "notes"
    type = ResourceType.KNOWLEDGE
    def get_prompt(self, budget=None):
        return "some notes"

NOTES = Notes()
""")
    kernel = make_assay_kernel(
        plugin(
            "notes",
            register_resources=lambda register: register(
                Lazy(f"{module}:NOTES", name="notes", type="knowledge")
            ),
        )
    )
    assert "notes" in kernel.registry("resources") and module not in sys.modules
    assert "some notes" in kernel.system_prompt()


def test_two_kernels_load_lazy_entries_independently(impl_module):
    module = impl_module(RUNTIME.format(isolated=True))

    def make() -> Kernel:
        return Kernel(
            load_entrypoints=False,
            settings=Settings.from_env(),
            plugins=[
                plugin(
                    "rt",
                    register_sandbox_runtimes=lambda register: register(
                        Lazy(f"{module}:FakeRuntime", name="fake", isolated=True)
                    ),
                )
            ],
        )

    first, second = make(), make()
    first.registry("sandbox_runtimes").get("fake")
    assert type(second.registry("sandbox_runtimes").peek("fake")) is Lazy


def test_settings_provided_sees_the_environment_and_the_config_file(tmp_path, monkeypatch):
    for key in [k for k in __import__("os").environ if k.upper().startswith("ASSAY_HELLO_")]:
        monkeypatch.delenv(key)
    assert Settings.from_env().provided("hello", "ASSAY_HELLO_") is False
    monkeypatch.setenv(
        "assay_hello_greeting", "hi"
    )  # pydantic-settings reads names case-insensitively
    assert Settings.from_env().provided("hello", "ASSAY_HELLO_") is True
    monkeypatch.delenv("assay_hello_greeting")
    config = tmp_path / "assay.toml"
    config.write_text("[hello]\ngreeting = 'hey'\n")
    assert Settings.from_env(config=str(config)).provided("hello", "ASSAY_HELLO_") is True


# What the built-in plugins keep out of start-up: they register descriptors, these load on first use.
DEFERRED = [
    "click",
    "assay.plugins.sandbox",
    "assay.kernel.evidence.catalog",
    "assay.kernel.evidence.capture",
    "assay.kernel.evidence.sink",
    "assay.kernel.evidence.staging",
    "assay.kernel.evidence.records",
    "assay.sandbox_runtimes.docker",
    "assay.sandbox_runtimes.podman",
    "assay.sandbox_runtimes.nerdctl",
    "assay.sandbox_runtimes.local",
    "assay.sandbox_runtimes.cli",
    "assay.plugins.sql.engines",
    "assay.plugins.sql.engines.base",
    "assay.plugins.sql.engines.sqlite",
    "assay.plugins.sql.engines.postgres",
    "assay.plugins.sql.engines.mysql",
    "assay.plugins.sql.engines.duckdb",
    "assay.plugins.sql.tools",
    "assay.plugins.sql.settings",
    "assay.plugins.sql.resource",
    "assay.plugins.sql.execution",
    "assay.plugins.code_interpreter.tool",
    "assay.kernel.evidence.local_store",
    "assay.plugins.artifact_stores.s3_store",
    "assay.plugins.evidence_read_tools",
    "assay.kernel.evidence.kernel_evidence",
    "assay.kernel.evidence",
    "assay.kernel.messages",
    "assay.plugins.models.openai_settings",
    "assay.plugins.models.openai_wire",
    "assay.plugins.models.llm_settings",
]


def test_starting_with_every_builtin_plugin_imports_only_thin_plugin_modules():
    import json
    import os
    import subprocess

    code = (
        "import sys, json, assay; k = assay.Kernel(); k.start(); "
        "print(json.dumps({'failed': [p.name for p in k.plugins() if p.status == 'failed'], "
        "'loaded': len([p for p in k.plugins() if p.status == 'loaded']), "
        f"'imported': [m for m in {DEFERRED!r} if m in sys.modules]}}))"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ASSAY_LOAD_PLUGINS", "ASSAY_DISABLE_PLUGINS", "ASSAY_STRICT_PLUGINS")
        and not k.upper().startswith("ASSAY_SQL_")
    }
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["failed"] == [] and found["loaded"] >= 14
    assert found["imported"] == []


def test_every_builtin_plugin_loads_in_strict_mode():
    import os
    import subprocess

    code = "import assay; k = assay.Kernel(); k.start(); print(len(k.tools))"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ASSAY_LOAD_PLUGINS", "ASSAY_DISABLE_PLUGINS")
        and not k.upper().startswith("ASSAY_SQL_")
    }
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "ASSAY_STRICT_PLUGINS": "1"},
    )
    assert out.returncode == 0, out.stderr  # every lazy path resolves and matches its declaration
    assert int(out.stdout.strip().splitlines()[-1]) >= 10


def test_host_plugin_named_by_module_attr_path_is_resolved_like_a_lazy_entry(make_assay_kernel):
    kernel = make_assay_kernel("assay.sandbox_runtimes.plugins:podman").start()
    runtimes = kernel.registry("sandbox_runtimes")
    assert (
        list(runtimes) == ["podman"] and kernel.provenance("sandbox_runtimes", "podman") == "podman"
    )
    assert type(runtimes.peek("podman")) is Lazy and runtimes.peek("podman").isolated is True
