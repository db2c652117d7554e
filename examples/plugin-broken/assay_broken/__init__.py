"""Deliberately broken assay plugins (see pyproject.toml)."""
