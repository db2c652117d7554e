"""assay's pytest plugin (assay.kernel.testing), run as a plugin author would use it."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import imported_by

PLUGIN_AUTHORS_TESTS = '''
import os
from pathlib import Path

import pytest

from assay import Resource, ResourceType, hookimpl, tool


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


CLOSED = []


class Ledger(Resource):
    name = "ledger"
    type = ResourceType.KNOWLEDGE

    def get_prompt(self, budget=None):
        return "a ledger"

    def close(self):
        CLOSED.append(self)


class ShoutPlugin:
    __name__ = "shout"

    @hookimpl
    def register_tools(self, register):
        register(shout)

    @hookimpl
    def register_resources(self, register):
        register(Ledger())


@pytest.fixture
def assay_plugins():
    return [ShoutPlugin()]


def test_the_kernel_has_just_my_plugin(assay_kernel):
    assert [p.name for p in assay_kernel.plugins()] == ["shout"]
    result = assay_kernel.call_tool("shout", {"text": "hi"})
    assert result.success and result.data == "HI"


def test_home_is_a_fresh_temporary_directory(assay_kernel, assay_home):
    assert os.environ["ASSAY_HOME"] == str(assay_home)
    assert Path(assay_kernel.settings.home) == assay_home and list(assay_home.iterdir()) == []


def test_plugin_controls_are_cleared(assay_env):
    for name in ("ASSAY_LOAD_PLUGINS", "ASSAY_DISABLE_PLUGINS", "ASSAY_STRICT_PLUGINS", "ASSAY_CONFIG"):
        assert name not in os.environ


def test_the_factory_makes_kernels_with_settings(make_assay_kernel):
    kernel = make_assay_kernel(ShoutPlugin(), log_level="ERROR")
    assert kernel.settings.log_level == "ERROR" and "shout" in kernel.tools
    assert "ledger" in kernel.resources


def test_every_kernel_was_closed_after_its_test():
    assert len(CLOSED) == 3  # the tests above made three kernels that loaded the ledger
'''


def test_a_plugin_authors_tests_get_the_fixtures(pytester, monkeypatch):
    monkeypatch.setenv("ASSAY_LOAD_PLUGINS", "leaked_from_the_shell")
    monkeypatch.setenv("ASSAY_CONFIG", "/no/such/file.toml")
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_my_plugin=PLUGIN_AUTHORS_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)


def test_importing_the_plugin_stays_light():
    heavy = [
        "sqlalchemy",
        "docker",
        "podman",
        "pandas",
        "boto3",
        "numpy",
        "assay.plugins.sandbox",
        "assay.plugins",
    ]
    assert imported_by("import assay.kernel.testing", heavy) == []


def test_the_example_plugins_own_tests_pass(pytester):
    example = Path(__file__).resolve().parents[2] / "examples" / "plugin-hello"
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.syspathinsert(example)
    pytester.makepyfile(test_hello=(example / "tests" / "test_hello.py").read_text())
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
