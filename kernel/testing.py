"""Pytest fixtures for plugin authors (and for assay's own tests).

Installed with assay as a pytest plugin (the ``pytest11`` entry point
``assay``), so a plugin's test suite has these fixtures without importing
anything:

* ``assay_home`` - a fresh, empty directory for ``ASSAY_HOME``;
* ``assay_env`` - the environment of an isolated kernel: ``ASSAY_HOME`` set to
  ``assay_home``; ``ASSAY_LOAD_PLUGINS``, ``ASSAY_DISABLE_PLUGINS``,
  ``ASSAY_STRICT_PLUGINS`` and ``ASSAY_CONFIG`` cleared (restored after the
  test). Returns the home directory;
* ``assay_plugins`` - the plugin objects (or module paths) ``assay_kernel``
  loads; empty unless a test module or conftest overrides it;
* ``assay_kernel`` - a fresh :class:`~assay.Kernel` with just
  ``assay_plugins`` (no installed entry points), in ``assay_env``, closed
  after the test;
* ``make_assay_kernel`` - ``make_assay_kernel(*plugins, load_entrypoints=False,
  **settings)`` for tests that need several kernels or settings of their own;
  every kernel it made is closed after the test.

Nothing is autouse: a test suite that wants every test isolated says so in its
conftest (``@pytest.fixture(autouse=True) def _iso(assay_env): ...``).
Importing this module loads only pytest and the standard library; the kernel
is imported when a fixture first builds one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .kernel import Kernel

# The variables that choose which installed plugins load, or name a config file:
# left over from the shell, they would make a test depend on the machine.
PLUGIN_CONTROL_VARIABLES = (
    "ASSAY_LOAD_PLUGINS",
    "ASSAY_DISABLE_PLUGINS",
    "ASSAY_STRICT_PLUGINS",
    "ASSAY_CONFIG",
)


@pytest.fixture
def assay_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh, empty directory to serve as ``ASSAY_HOME``."""
    return tmp_path_factory.mktemp("assay-home")


@pytest.fixture
def assay_env(assay_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``ASSAY_HOME`` is ``assay_home`` and no plugin-control variable is inherited."""
    monkeypatch.setenv("ASSAY_HOME", str(assay_home))
    for name in PLUGIN_CONTROL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return assay_home


@pytest.fixture
def assay_plugins() -> list[Any]:
    """The plugins ``assay_kernel`` loads. Override it to test your own::

    @pytest.fixture
    def assay_plugins():
        return [my_plugin_module]
    """
    return []


@pytest.fixture
def make_assay_kernel(assay_env: Path) -> Iterator[Callable[..., Kernel]]:
    """A factory of isolated kernels: ``make_assay_kernel(*plugins, load_entrypoints=False, **settings)``.

    ``settings`` are keyword overrides of :class:`~assay.Settings` (``log_level="INFO"``,
    ``home=...``). Each kernel is closed when the test ends.
    """
    made: list[Kernel] = []

    def make(*plugins: Any, load_entrypoints: bool = False, **settings: Any) -> Kernel:
        from .kernel import Kernel
        from .settings import Settings

        kernel = Kernel(
            load_entrypoints=load_entrypoints,
            plugins=plugins,
            settings=Settings.from_env(**settings),
        )
        made.append(kernel)
        return kernel

    yield make
    for kernel in reversed(made):
        kernel.close()


@pytest.fixture
def assay_kernel(make_assay_kernel: Callable[..., Kernel], assay_plugins: list[Any]) -> Kernel:
    """A fresh kernel with just ``assay_plugins``, started, closed after the test."""
    return make_assay_kernel(*assay_plugins).start()
