"""The plugin's own tests, on assay's pytest fixtures (installed with assay)."""

import assay_hello
import pytest


@pytest.fixture
def assay_plugins():
    return [assay_hello]


def test_greet(assay_kernel):
    result = assay_kernel.call_tool("greet", {"name": "Ada", "times": 2})
    assert result.success and result.data == "Hello, Ada! Hello, Ada!"
    assert "hello_guide" in assay_kernel.resources
