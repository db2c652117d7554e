"""Fails at import, as a plugin with a missing dependency does."""

import assay_broken_missing_dependency  # noqa: F401  (no such package exists)
