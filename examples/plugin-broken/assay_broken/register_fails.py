"""Registers a tool, then fails: the kernel must roll the tool back."""

from assay import hookimpl, tool


@tool
def half_registered(x: int) -> int:
    """Never visible: its plugin fails right after registering it."""
    return x


@hookimpl
def register_tools(register):
    register(half_registered)
    raise RuntimeError("assay-broken fails on purpose after registering a tool")
