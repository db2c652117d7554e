"""Sandbox runtimes: docker, podman, nerdctl and local, each a plugin."""
