"""assay: a plugin-based microkernel for data-analysis agents.

The public surface, curated: what host applications and plugin authors
import. Everything else lives in the subpackages:

* :mod:`assay.kernel` - hook specs, registries, tools, evidence, sandbox;
* :mod:`assay.plugins` - the built-in plugins (SQL, code interpreter, ...);
* :mod:`assay.sandbox_runtimes` - the docker, podman, nerdctl and local runtimes.

>>> from assay import Kernel, tool, hookimpl
"""

from __future__ import annotations

from .kernel.context import RunContext
from .kernel.errors import AssayError, ConfigError, PluginError
from .kernel.hookspecs import hookimpl
from .kernel.kernel import Kernel
from .kernel.loader import PluginInfo
from .kernel.registry import Lazy
from .kernel.resources import PromptBudget, Resource, ResourcePack, ResourceType
from .kernel.settings import Settings
from .kernel.tool_result import ArtifactRef, ToolResult
from .kernel.tools import BaseTool, FunctionTool, JsonSchemaTool, tool

__version__ = "0.1.0"  # the one place the version is written (pyproject reads it)

__all__ = [
    "ArtifactRef",
    "AssayError",
    "BaseTool",
    "ConfigError",
    "FunctionTool",
    "JsonSchemaTool",
    "Kernel",
    "Lazy",
    "PluginError",
    "PluginInfo",
    "PromptBudget",
    "Resource",
    "ResourcePack",
    "ResourceType",
    "RunContext",
    "Settings",
    "ToolResult",
    "__version__",
    "hookimpl",
    "tool",
]
