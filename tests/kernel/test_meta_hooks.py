"""Every hook spec has a test and a documentation heading (after datasette's meta-test)."""

from __future__ import annotations

import re
from pathlib import Path

import pluggy
import pytest

from assay.kernel import hookspecs

ROOT = Path(__file__).resolve().parents[2]
SPEC_ATTR = pluggy.HookspecMarker("assay").project_name + "_spec"  # set by @hookspec
HOOKS = sorted(
    name for name, fn in vars(hookspecs).items() if callable(fn) and hasattr(fn, SPEC_ATTR)
)


def test_hook_list_is_not_empty():
    assert "register_tools" in HOOKS and len(HOOKS) >= 8


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test(hook):
    test_names = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        test_names.update(re.findall(r"^(?:async )?def (test_\w+)", path.read_text(), re.M))
    assert any(hook in name for name in test_names), f"no test function mentions {hook}"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_documentation_heading(hook):
    docs = (ROOT / "docs" / "plugins.md").read_text()
    assert re.search(rf"^#+ .*\b{hook}\b", docs, re.M), f"docs/plugins.md has no heading for {hook}"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_docstring_stating_register(hook):
    doc = getattr(hookspecs, hook).__doc__ or ""
    assert doc.strip(), f"{hook} has no docstring"
