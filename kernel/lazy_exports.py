"""Package namespaces whose names load on first access.

Subsystem packages (``assay.kernel.evidence``, ``assay.kernel.sandbox``) map each public
name to the submodule defining it, so ``import kernel.sandbox`` costs nothing
until a name is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable


def lazy_exports(package: str, where: dict[str, str], namespace: dict[str, Any]) -> tuple[
        Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose names live in the submodules ``where`` names."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__
