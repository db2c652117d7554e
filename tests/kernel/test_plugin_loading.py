"""Plugin discovery and loading: entry points, env controls, isolation, rollback."""

from __future__ import annotations

import pytest

from assay import Kernel, PluginError
from tests.kernel.conftest import TOOL_PLUGIN, plugin_info


def test_entry_point_plugin_is_discovered_with_distribution_and_version(make_dist):
    make_dist("acme-tools", {"acme": TOOL_PLUGIN.format(name="acme_double")}, version="2.3")
    kernel = Kernel()
    info = {i.name: i for i in kernel.plugins()}["acme"]
    assert (info.status, info.distribution, info.version, info.builtin) == (
        "loaded",
        "acme-tools",
        "2.3",
        False,
    )
    assert info.hooks == ["register_tools"]
    assert info.registered == {"tools": ["acme_double"]}
    assert kernel.provenance("tools", "acme_double") == "acme"
    assert kernel.call_tool("acme_double", {"x": 4}).data == 8


def test_builtin_plugins_go_through_entry_points(only):
    only("builtin_tools")
    info = {i.name: i for i in Kernel().plugins()}["builtin_tools"]
    assert (info.distribution, info.builtin, info.status) == ("assay", True, "loaded")


def test_load_plugins_empty_string_loads_none(make_dist, monkeypatch):
    make_dist("acme-tools", {"acme": TOOL_PLUGIN.format(name="acme_double")})
    monkeypatch.setenv("ASSAY_LOAD_PLUGINS", "")
    kernel = Kernel()
    assert kernel.tools == {}
    assert {i.status for i in kernel.plugins()} == {"disabled"}


def test_load_plugins_list_loads_only_those(make_dist, monkeypatch):
    make_dist(
        "acme-tools",
        {
            "a": TOOL_PLUGIN.format(name="tool_a"),
            "b": TOOL_PLUGIN.format(name="tool_b"),
            "c": TOOL_PLUGIN.format(name="tool_c"),
        },
    )
    monkeypatch.setenv("ASSAY_LOAD_PLUGINS", "a, c")
    kernel = Kernel()
    assert sorted(kernel.tools) == ["tool_a", "tool_c"]
    statuses = {i.name: i.status for i in kernel.plugins()}
    assert statuses["b"] == "disabled" and statuses["builtin_tools"] == "disabled"


def test_load_plugins_accepts_distribution_names(make_dist, monkeypatch):
    make_dist(
        "acme-tools",
        {"a": TOOL_PLUGIN.format(name="tool_a"), "b": TOOL_PLUGIN.format(name="tool_b")},
    )
    monkeypatch.setenv("ASSAY_LOAD_PLUGINS", "acme-tools")
    assert sorted(Kernel().tools) == ["tool_a", "tool_b"]
    monkeypatch.setenv("ASSAY_LOAD_PLUGINS", "Acme_Tools")  # normalized like distribution names
    assert sorted(Kernel().tools) == ["tool_a", "tool_b"]


def test_disable_plugins_blocks_listed_plugins(make_dist, monkeypatch, only):
    make_dist(
        "acme-tools",
        {"a": TOOL_PLUGIN.format(name="tool_a"), "b": TOOL_PLUGIN.format(name="tool_b")},
    )
    monkeypatch.setenv("ASSAY_DISABLE_PLUGINS", "b,builtin_tools")
    kernel = Kernel()
    assert (
        "tool_a" in kernel.tools
        and "tool_b" not in kernel.tools
        and "arithmetic" not in kernel.tools
    )
    assert {i.name: i.status for i in kernel.plugins()}["b"] == "disabled"


def test_host_plugins_are_not_subject_to_env_controls(monkeypatch):
    import types

    plugin = types.ModuleType("host_plugin")
    exec(TOOL_PLUGIN.format(name="host_tool"), plugin.__dict__)
    monkeypatch.setenv("ASSAY_LOAD_PLUGINS", "")
    assert "host_tool" in Kernel(plugins=[plugin]).tools


def test_import_failure_is_isolated_and_recorded(make_dist, only):
    make_dist(
        "acme",
        {"good": TOOL_PLUGIN.format(name="good_tool"), "bad": "import not_a_module_anywhere_xyz\n"},
    )
    only("good", "bad")
    kernel = Kernel()
    assert "good_tool" in kernel.tools
    bad = {i.name: i for i in kernel.plugins()}["bad"]
    assert bad.status == "failed" and bad.error["code"] == "PLUGIN_IMPORT_FAILED"
    assert "not_a_module_anywhere_xyz" in bad.error["message"]
    assert kernel.health()["ok"] is False


def test_import_failure_rolls_back_partial_registrations(make_dist, only):
    # The module defines a working hook, then fails at import: nothing of it may remain.
    make_dist(
        "acme",
        {"half": TOOL_PLUGIN.format(name="half_tool") + "\nraise RuntimeError('boom at import')\n"},
    )
    only("half")
    kernel = Kernel()
    assert kernel.tools == {}
    assert {i.name: i for i in kernel.plugins()}["half"].error["code"] == "PLUGIN_IMPORT_FAILED"


def test_register_failure_rolls_back_everything_the_plugin_registered(make_dist, only):
    source = '''
from assay import hookimpl, tool, Resource

class Notes(Resource):
    name = "half_notes"
    def get_prompt(self, budget=None):
        return "notes"

@tool
def half_tool(x: int) -> int:
    """Half."""
    return x // 2

@hookimpl
def register_resources(register):
    register(Notes())

@hookimpl
def register_tools(register):
    register(half_tool)
    raise RuntimeError("failed after registering one tool")
'''
    make_dist("acme", {"half": source, "good": TOOL_PLUGIN.format(name="good_tool")})
    only("half", "good")
    kernel = Kernel()
    assert list(kernel.tools) == ["good_tool"]
    assert kernel.resources == {}
    info = {i.name: i for i in kernel.plugins()}["half"]
    assert info.status == "failed" and info.error["code"] == "PLUGIN_REGISTER_FAILED"
    assert "RuntimeError: failed after registering one tool" in info.error["message"]
    assert info.registered == {}


def test_register_rejects_invalid_objects_as_plugin_failure(make_dist, only):
    source = """
from assay import hookimpl

@hookimpl
def register_resources(register):
    register("not a resource")
"""
    make_dist("acme", {"wrong": source})
    only("wrong")
    info = plugin_info(Kernel(), "wrong")
    assert info.status == "failed" and "takes Resource instances" in info.error["message"]


def test_strict_mode_makes_a_failing_plugin_abort_start_up(make_dist, only, monkeypatch):
    make_dist("acme", {"bad": "raise ImportError('missing dependency')\n"})
    only("bad")
    monkeypatch.setenv("ASSAY_STRICT_PLUGINS", "1")
    kernel = Kernel()
    with pytest.raises(PluginError) as caught:
        kernel.start()
    assert (
        caught.value.code == "PLUGIN_IMPORT_FAILED" and "missing dependency" in caught.value.message
    )
    assert not kernel.started
    with pytest.raises(PluginError):  # a retry fails the same way, from a clean state
        kernel.start()


def test_duplicate_name_across_plugins_is_a_start_up_error_naming_both(make_dist, only):
    make_dist("acme", {"first": TOOL_PLUGIN.format(name="same_tool")})
    make_dist("other", {"second": TOOL_PLUGIN.format(name="same_tool")})
    only("first", "second")
    with pytest.raises(PluginError) as caught:
        Kernel().start()
    assert caught.value.code == "PLUGIN_NAME_CONFLICT"
    assert "'first'" in caught.value.message and "'second'" in caught.value.message
    assert caught.value.details["plugins"] == ["first", "second"]


def test_same_plugin_registering_a_name_twice_is_its_own_failure(make_assay_kernel):
    import types

    plugin = types.ModuleType("twice")
    exec(
        TOOL_PLUGIN.format(name="twice_tool").replace(
            "register(twice_tool)", "register(twice_tool); register(twice_tool)"
        ),
        plugin.__dict__,
    )
    kernel = make_assay_kernel(plugin)
    assert kernel.tools == {}
    assert kernel.plugins()[0].error["code"] == "PLUGIN_REGISTER_FAILED"


def test_misspelled_hook_implementation_is_caught(make_dist, only):
    source = """
from assay import hookimpl

@hookimpl
def register_tool(register):  # missing "s"
    pass
"""
    make_dist("acme", {"typo": source})
    only("typo")
    info = plugin_info(Kernel(), "typo")
    assert info.status == "failed" and info.error["code"] == "PLUGIN_UNKNOWN_HOOK"
    assert "register_tool" in info.error["message"]


def test_hook_implementation_with_undeclared_argument_is_isolated(make_dist, only):
    source = """
from assay import hookimpl

@hookimpl
def register_tools(register, database):
    pass
"""
    make_dist("acme", {"badargs": source})
    only("badargs")
    info = plugin_info(Kernel(), "badargs")
    assert info.status == "failed" and info.error["code"] == "PLUGIN_HOOK_INVALID"


def test_hook_implementations_receive_only_declared_arguments(make_assay_kernel):
    import types

    seen = {}
    plugin = types.ModuleType("argplug")
    from assay import hookimpl

    @hookimpl
    def register_tools(kernel, settings):
        seen["kernel"], seen["settings"] = kernel, settings

    plugin.register_tools = register_tools
    kernel = make_assay_kernel(plugin)
    kernel.start()
    assert seen == {"kernel": kernel, "settings": kernel.settings}


def test_two_kernels_in_one_process_share_no_state(make_assay_kernel):
    import types

    from assay import Resource, ResourceType

    class Db(Resource):
        type = ResourceType.DATABASE

        def __init__(self, name):
            self.name = name

        def get_prompt(self, budget=None):
            return self.name

    plugin = types.ModuleType("one")
    exec(TOOL_PLUGIN.format(name="only_in_one"), plugin.__dict__)
    first, second = make_assay_kernel(plugin), make_assay_kernel()
    first.attach(Db("db_one"))
    assert "only_in_one" in first.tools and second.tools == {}
    assert "db_one" in first.resources and second.resources == {}
    assert second.call_tool("only_in_one", {"x": 1}).error_code == "TOOL_NOT_FOUND"
    assert first.registry("tools") is not second.registry("tools")


def test_start_is_lazy_and_idempotent(make_dist, only):
    modules = make_dist(
        "acme",
        {
            "counted": """
from assay import hookimpl
CALLS = []

@hookimpl
def register_tools(register):
    CALLS.append(1)
"""
        },
    )
    only("counted")
    import sys

    kernel = Kernel()
    assert not kernel.started and modules["counted"] not in sys.modules
    kernel.tools  # first use starts it
    assert kernel.started
    kernel.start()
    kernel.start()
    assert sys.modules[modules["counted"]].CALLS == [1]


def _ordered_plugin(name: str, seen: list, **marker):
    import types

    from assay import hookimpl

    plugin = types.ModuleType(name)

    @hookimpl(**marker)
    def register_tools(register):
        seen.append(name)

    plugin.register_tools = register_tools
    return plugin


def test_tryfirst_and_trylast_order_the_hook_calls(make_assay_kernel):
    seen: list = []
    plugins = [
        _ordered_plugin("late", seen, trylast=True),
        _ordered_plugin("plain_a", seen),
        _ordered_plugin("early", seen, tryfirst=True),
        _ordered_plugin("plain_b", seen),
    ]
    make_assay_kernel(*plugins).start()
    assert seen == ["early", "plain_a", "plain_b", "late"]


@pytest.mark.parametrize("marker", [{"wrapper": True}, {"hookwrapper": True}])
def test_a_hook_wrapper_is_refused_at_load_not_reported_loaded(make_assay_kernel, marker):
    import types

    from assay import hookimpl

    plugin = types.ModuleType("wrapping")

    @hookimpl(**marker)
    def register_tools(register):
        yield

    plugin.register_tools = register_tools
    kernel = make_assay_kernel(plugin)
    info = plugin_info(kernel, "wrapping")
    assert info.status == "failed" and info.error["code"] == "PLUGIN_HOOK_INVALID"
    assert "register_tools" in info.error["message"]
