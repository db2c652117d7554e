"""Errors with stable codes.

Every failure that can reach a user or a model is an :class:`AssayError`: a
stable ``code`` (safe to branch on), a human ``message`` and a ``hint`` saying
what to do next. Tracebacks never leave the process through this type.
"""

from __future__ import annotations

from typing import Any


class AssayError(Exception):
    """An error with a stable code, a human message and a next-step hint."""

    code: str = "ASSAY_ERROR"

    def __init__(
        self,
        code: str | None = None,
        message: str = "",
        hint: str = "",
        *,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.code = code or type(self).code
        self.message = message or self.code
        self.hint = hint
        self.details = details or {}
        super().__init__(f"{self.code}: {self.message}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message, "hint": self.hint}
        if self.details:
            out["details"] = self.details
        return out


class PluginError(AssayError):
    """A plugin failed to load or to register, or two plugins collided."""

    code = "PLUGIN_ERROR"


class ConfigError(AssayError):
    """Settings that cannot be used as given."""

    code = "CONFIG_INVALID"


# Codes used by the kernel itself. Plugins define their own next to their code;
# the catalogue of all of them is docs/error-codes.md.
TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
TOOL_ARGUMENTS_INVALID = "TOOL_ARGUMENTS_INVALID"
TOOL_EXECUTION_FAILED = "TOOL_EXECUTION_FAILED"
TOOL_ASYNC_ONLY = "TOOL_ASYNC_ONLY"
TOOL_SCHEMA_INVALID = "TOOL_SCHEMA_INVALID"
TOOL_LOAD_FAILED = "TOOL_LOAD_FAILED"
PLUGIN_IMPORT_FAILED = "PLUGIN_IMPORT_FAILED"
PLUGIN_REGISTER_FAILED = "PLUGIN_REGISTER_FAILED"
PLUGIN_LOAD_FAILED = "PLUGIN_LOAD_FAILED"  # a lazy registration could not be imported on first use
PLUGIN_NAME_CONFLICT = "PLUGIN_NAME_CONFLICT"
PLUGIN_UNKNOWN_HOOK = "PLUGIN_UNKNOWN_HOOK"
PLUGIN_HOOK_INVALID = "PLUGIN_HOOK_INVALID"
PLUGIN_DUPLICATE = "PLUGIN_DUPLICATE"
SUBSYSTEM_NOT_FOUND = "SUBSYSTEM_NOT_FOUND"  # kernel.subsystem(name): no loaded plugin provides it
