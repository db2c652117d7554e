"""assay: a plugin-based microkernel for data-analysis agents.

The public surface of the kernel; everything else is a plugin.
"""

from .context import RunContext
from .errors import AssayError, ConfigError, PluginError
from .hookspecs import hookimpl
from .kernel import Kernel
from .loader import PluginInfo
from .registry import Lazy
from .resources import PromptBudget, Resource, ResourcePack, ResourceType
from .tool_result import ArtifactRef, ToolResult
from .settings import Settings
from .tools import BaseTool, FunctionTool, JsonSchemaTool, tool

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
    "hookimpl",
    "tool",
]
