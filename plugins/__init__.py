"""assay's built-in plugins. Each is loaded through its entry point like any third-party plugin."""
