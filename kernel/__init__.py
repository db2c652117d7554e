"""assay.kernel: hook specs, plugin loading, registries, tools, evidence and sandbox.

Its public names are exported once, by :mod:`assay` (``from assay import
Kernel, tool, hookimpl``); subsystems are imported from their modules.
"""
