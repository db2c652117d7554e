"""Subsystems: objects one per kernel that a plugin provides, made on first use and closed with the kernel.

A plugin registers a :class:`Subsystem` with ``register_subsystems``: a name
and a factory, called with the kernel the first time ``kernel.subsystem(name)``
(or ``kernel.<name>``) is used. The kernel keeps the object, makes it again
when it reports itself ``closed``, and closes it in :meth:`Kernel.close`. So
the kernel reaches the runs store (``kernel.runs``) and the sandbox manager
(``kernel.sandbox``) without importing the plugins that own them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .registry import resolve_path


@dataclass(frozen=True)
class Subsystem:
    """``name`` (``kernel.<name>``) and ``factory``: a callable taking the kernel, or its ``"package.module:attr"`` path."""

    name: str
    factory: str | Callable[[Any], Any]

    def make(self, kernel: Any) -> Any:
        """A new instance for ``kernel`` (the factory's module is imported now)."""
        factory = resolve_path(self.factory) if isinstance(self.factory, str) else self.factory
        return factory(kernel)


def is_closed(obj: Any) -> bool:
    """Whether a subsystem says it is closed (then the kernel makes it again on next use)."""
    return bool(getattr(obj, "closed", False))
