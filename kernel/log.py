"""Logging: structlog key/value events, JSON off a terminal, readable on one.

Events go to the *current* ``sys.stderr`` when they are written (not the one
seen at configuration time), so redirections and test capture see them and
stdout stays clean for command output such as ``assay tools --json``.

:func:`get_logger` returns a thin logger that compares the event's level with
the configured one before doing any work: a filtered event (the tool-call log
line at the default WARNING level) costs one integer comparison, which keeps
tool dispatch cheap.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

_LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}

_state: dict[str, Any] = {"level": logging.WARNING, "key": None, "applied": None}


class _StderrWriter:
    """structlog's output end: one line per event on whatever sys.stderr is now."""

    def _write(self, message: str) -> None:
        stream = sys.stderr
        stream.write(message + "\n")
        stream.flush()

    msg = debug = info = warning = warn = error = critical = exception = fatal = log = _write


def level_number(level: str) -> int:
    return _LEVELS.get(str(level).upper(), logging.WARNING)


def configure_logging(level: str = "WARNING", fmt: str = "auto") -> None:
    """Set the process's log level and format (logging is process-wide by nature).

    ``fmt``: ``"json"``, ``"console"``, or ``"auto"`` (console when stderr is
    a terminal). structlog itself is imported and configured only when the
    first event at an enabled level is written, so a quiet start-up never
    pays for it.
    """
    key = (level_number(level), fmt)
    if _state["key"] == key:
        return
    _state["level"], _state["key"], _state["applied"] = key[0], key, None


def _apply() -> None:
    """Configure structlog for the current (level, format), once per change."""
    import structlog

    level, fmt = _state["key"] or (logging.WARNING, "auto")
    use_console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    renderer = structlog.dev.ConsoleRenderer(colors=False) if use_console else structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=lambda *args: _StderrWriter(),
        cache_logger_on_first_use=False,
    )
    _state["applied"] = _state["key"]


def enabled(level: int) -> bool:
    """Whether an event at ``level`` (a logging.* number) would be written."""
    return level >= _state["level"]


class Logger:
    """A named logger; events below the configured level cost almost nothing."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _emit(self, level: int, method: str, event: str, fields: dict[str, Any]) -> None:
        if level < _state["level"]:
            return
        if _state["key"] is None:  # never configured: the defaults (never structlog's stdout)
            configure_logging()
        if _state["applied"] != _state["key"]:
            _apply()
        import structlog

        getattr(structlog.get_logger(self.name), method)(event, logger=self.name, **fields)

    def debug(self, event: str, **fields: Any) -> None:
        self._emit(10, "debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._emit(20, "info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit(30, "warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit(40, "error", event, fields)


def get_logger(name: str) -> Logger:
    return Logger(name)
