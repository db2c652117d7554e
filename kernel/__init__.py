"""assay.kernel: hook specs, plugin loading, registries, tools, evidence and the sandbox runtimes' contract.

Its public names are exported once, by :mod:`assay` (``from assay import
Kernel, tool, hookimpl``); subsystems are imported from their modules. The
kernel imports no plugin (``[tool.importlinter]`` in pyproject.toml).
"""
