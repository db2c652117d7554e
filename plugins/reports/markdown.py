"""The ``markdown_report`` plugin: the ``markdown`` report renderer and the ``render_report`` tool.

Thin on purpose (kernel start-up imports it): both live in
:mod:`assay.plugins.reports.markdown_renderer` and load on first use.
"""

from __future__ import annotations

from typing import Any

from assay import Lazy, hookimpl

_IMPL = "assay.plugins.reports.markdown_renderer"
_PUBLIC = ("MarkdownRenderer", "REPORT_CITATION_INVALID", "ReportDocument", "render_report")


def __getattr__(name: str) -> Any:  # the renderer's public names, for code that imports them from here
    if name in _PUBLIC:
        from . import markdown_renderer

        return getattr(markdown_renderer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def register_report_renderers(register):
    register(Lazy(f"{_IMPL}:RENDERER", name="markdown"))


@hookimpl
def register_tools(register):
    register(f"{_IMPL}:render_report")
