"""code_interpreter: Python analysis in the run's sandbox over captured evidence.

The plugin module stays light: the tool's module imports only the kernel;
the sandbox, the evidence store and everything heavy load inside the call.
See docs/code_interpreter.md.
"""

from __future__ import annotations

from kernel import hookimpl


@hookimpl
def register_tools(register):
    from kernel import FunctionTool

    from .tool import code_interpreter

    register(FunctionTool(code_interpreter))
