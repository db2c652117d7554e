"""Entry points of the ``markdown_report``, ``html_report``, ``json_report`` and ``pdf_report``
plugins: thin, so kernel start-up imports no renderer. Each registers its renderer as an
:class:`assay.Lazy` (name and media type now; the module on first use); ``markdown_report`` also
registers the ``render_report`` tool by path (described from the tool definition cache, imported on
its first call), and ``html_report`` adds ``assay report`` (its code loads only when the command line
is built). :mod:`.markdown` itself remains a complete plugin module for hosts that load it by name."""

from __future__ import annotations

from assay import Lazy, hookimpl


class RendererPlugin:
    """The plugin of one report renderer: ``module:RENDERER`` registered lazily as ``name``."""

    def __init__(
        self,
        name: str,
        target: str,
        media_type: str,
        *,
        commands: bool = False,
        tools: tuple[str, ...] = (),
    ) -> None:
        self.name, self.target, self.media_type = name, target, media_type
        if commands:
            self.register_commands = _register_commands
        if tools:

            @hookimpl
            def register_tools(register):
                for path in tools:
                    register(path)  # a Lazy entry: the module loads on first use

            self.register_tools = register_tools

    def __repr__(self) -> str:
        return f"<report renderer plugin {self.name!r}: {self.target}>"

    @hookimpl
    def register_report_renderers(self, register):
        register(Lazy(self.target, name=self.name, media_type=self.media_type))


@hookimpl
def _register_commands(cli, kernel):
    from .cli import add_report_commands

    add_report_commands(cli, kernel)


markdown = RendererPlugin(
    "markdown",
    "assay.plugins.reports.markdown:RENDERER",
    "text/markdown",
    tools=("assay.plugins.reports.markdown:render_report",),
)
html = RendererPlugin("html", "assay.plugins.reports.html:RENDERER", "text/html", commands=True)
json = RendererPlugin("json", "assay.plugins.reports.json_report:RENDERER", "application/json")
pdf = RendererPlugin("pdf", "assay.plugins.reports.pdf:RENDERER", "application/pdf")
