"""structlog set-up: JSON when not on a terminal, readable on a terminal."""

from __future__ import annotations

import logging
import sys

import structlog

_configured: tuple[str, str] | None = None


def configure_logging(level: str = "WARNING", fmt: str = "auto") -> None:
    """Configure structlog once per (level, format); later calls with the same values are free."""
    global _configured
    key = (level.upper(), fmt)
    if _configured == key:
        return
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.WARNING
    use_console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    renderer = structlog.dev.ConsoleRenderer() if use_console else structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    _configured = key


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    return structlog.get_logger(name)
