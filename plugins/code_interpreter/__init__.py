"""code_interpreter: Python analysis in the run's sandbox over captured evidence.

The plugin module stays light: it registers the tool by path, so the tool's
module loads when the tool is first described or called, and the sandbox,
the evidence store and everything heavy load inside the call.
See docs/code_interpreter.md.
"""

from __future__ import annotations

from assay import hookimpl


@hookimpl
def register_tools(register):
    register(
        "assay.plugins.code_interpreter.tool:code_interpreter"
    )  # a Lazy entry: the module loads on first use
