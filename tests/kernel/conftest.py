"""Fixtures for the kernel tests: fake installed distributions with entry points."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from assay import Kernel


@pytest.fixture
def make_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., dict[str, str]]:
    """Install a fake distribution on sys.path: ``make_dist(name, {ep_name: source})``.

    Each entry point gets its own module (a unique name, removed from
    sys.modules afterwards). Returns ``{ep_name: module_name}``. Importlib's
    metadata finder sees it exactly as it sees a pip-installed package.
    """
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    monkeypatch.syspath_prepend(str(site))
    created: list[str] = []

    def make(dist: str, plugins: dict[str, str], version: str = "1.0") -> dict[str, str]:
        modules = {}
        lines = ["[assay]"]
        for ep_name, source in plugins.items():
            module = f"fakeplug_{ep_name}_{uuid.uuid4().hex[:8]}"
            (site / f"{module}.py").write_text(textwrap.dedent(source))
            lines.append(f"{ep_name} = {module}")
            modules[ep_name] = module
            created.append(module)
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        return modules

    yield make
    for module in created:
        sys.modules.pop(module, None)


@pytest.fixture
def only(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """``only("a", "b")``: load just those entry points (keeps tests independent of other plugins)."""

    def restrict(*names: str) -> None:
        monkeypatch.setenv("ASSAY_LOAD_PLUGINS", ",".join(names))

    return restrict


# A fresh kernel with no entry points, just given plugins: the ``make_assay_kernel``
# fixture of assay's pytest plugin (assay.kernel.testing), closed after each test.


TOOL_PLUGIN = '''
from assay import hookimpl, tool

@tool
def {name}(x: int) -> int:
    """Double x."""
    return 2 * x

@hookimpl
def register_tools(register):
    register({name})
'''


def plugin_info(kernel: Kernel, name: str):
    return {i.name: i for i in kernel.plugins()}[name]
