"""Artifact content stores: local filesystem (default) and S3-compatible."""
