"""Resources, packs and the system prompt built from them."""

from __future__ import annotations

import pytest

from assay import PromptBudget, Resource, ResourcePack, ResourceType


class Db(Resource):
    type = ResourceType.DATABASE

    def __init__(self, name: str, text: str = "") -> None:
        self.name, self.text = name, text or f"database {name}: tables orders, customers"

    def get_prompt(self, budget=None):
        return self.text


def test_resource_pack_bundles_sub_resources():
    pack = ResourcePack("warehouse", [Db("sales"), Db("hr")], description="The warehouse.")
    assert pack.is_pack and pack.type == ResourceType.PACK
    assert [r.name for r in pack.sub_resources] == ["sales", "hr"]
    prompt = pack.get_prompt()
    assert (
        prompt.startswith("The warehouse.")
        and "[database:sales]" in prompt
        and "[database:hr]" in prompt
    )
    assert not hasattr(
        pack, "execute"
    )  # a pack, like any resource, is worked through the tools it provides


def test_system_prompt_is_built_from_attached_resources(make_assay_kernel):
    kernel = make_assay_kernel()
    kernel.attach(Db("sales"))
    kernel.attach(ResourcePack("docs", [Db("wiki", "how revenue is defined")]))
    prompt = kernel.system_prompt()
    assert prompt.startswith("You can use these resources:")
    assert "[database:sales]\ndatabase sales: tables orders, customers" in prompt
    assert "[pack:docs]" in prompt and "how revenue is defined" in prompt
    assert kernel.provenance("resources", "sales") == "host"


def test_system_prompt_budget_names_resources_that_did_not_fit(make_assay_kernel):
    kernel = make_assay_kernel()
    kernel.attach(Db("big", "x" * 500))
    kernel.attach(Db("late"))
    prompt = kernel.system_prompt(budget=PromptBudget(max_chars=300))
    assert "[database:late] (description omitted: prompt budget exhausted)" in prompt


def test_detach_removes_only_host_resources(make_assay_kernel):
    kernel = make_assay_kernel()
    kernel.attach(Db("sales"))
    kernel.detach("sales")
    assert "sales" not in kernel.resources
    with pytest.raises(KeyError):
        kernel.detach("sales")


def test_attaching_a_taken_name_is_an_error(make_assay_kernel):
    from assay import PluginError

    kernel = make_assay_kernel()
    kernel.attach(Db("sales"))
    with pytest.raises(PluginError):
        kernel.attach(Db("sales"))


def test_resources_describe_themselves_and_tools_are_not_resources():
    from assay import BaseTool, tool

    @tool
    def count(sql: str) -> int:
        """Count rows."""
        return 0

    assert not isinstance(count, Resource) and isinstance(count, BaseTool)
    for name in ("execute", "async_execute", "is_async"):
        assert not hasattr(Db("s"), name)
    assert not hasattr(count, "execute") and not hasattr(count, "get_prompt")
    assert Db("s").get_prompt() == "database s: tables orders, customers"


def test_each_resource_gets_a_fair_share_of_the_prompt_budget(make_assay_kernel):
    class Sized(Resource):
        type = ResourceType.DATABASE

        def __init__(self, name: str) -> None:
            self.name = name

        def get_prompt(self, budget=None):
            return "y" * budget.max_chars  # uses all it is given

    kernel = make_assay_kernel()
    for name in ("first", "second", "third"):
        kernel.attach(Sized(name))
    prompt = kernel.system_prompt(budget=PromptBudget(max_chars=3000))
    assert len(prompt) <= 3000 and "budget exhausted" not in prompt
    blocks = prompt.split("\n\n")[1:]
    assert [b.split("]")[0] for b in blocks] == [
        "[database:first",
        "[database:second",
        "[database:third",
    ]
    assert all(len(b) > 800 for b in blocks)
