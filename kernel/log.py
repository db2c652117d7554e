"""Logging: assay logs like a library, and formats like an application only in its CLI.

Every event goes through a named stdlib logger (``assay.kernel``,
``assay.plugins.sql``, ...), so a host application's ``logging`` set-up
(handlers, levels, filters) sees it as it sees any other library's. The
record's message is the event name and its key/value fields are in
``record.assay``. Nothing here configures logging on import or when a
kernel starts: a host keeps its own structlog and logging configuration.

The ``assay`` command (and ``assay serve`` / ``assay worker``) calls
:func:`configure_logging` once, from ``ASSAY_LOG_LEVEL`` and
``ASSAY_LOG_FORMAT``: one handler on the ``assay`` logger that renders each
event with structlog (JSON off a terminal, readable on one) onto the
*current* ``sys.stderr`` at write time, so redirections and test capture see
it and stdout stays clean for command output such as ``assay tools --json``.
A host that wants the same output may call it too.

:func:`get_logger` returns a thin logger that asks the stdlib logger whether
the level is enabled before doing any work: a filtered event (the tool-call
line at the default WARNING level) costs one cached level check.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

ROOT_LOGGER = "assay"
_LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}
_LEVEL_NAMES = {number: name.lower() for name, number in _LEVELS.items()}


def level_number(level: str) -> int:
    return _LEVELS.get(str(level).upper(), logging.WARNING)


class _StructlogFormatter(logging.Formatter):
    """Renders an assay record (event name + ``record.assay`` fields) with a structlog renderer.

    structlog is imported at the first record formatted (~75 ms, measured):
    a CLI process that prints no log line never pays for it.
    """

    def __init__(self, console: bool) -> None:
        super().__init__()
        self._console = console
        self._chain: tuple[Any, Any] | None = None

    def _processors(self) -> tuple[Any, Any]:
        if self._chain is None:
            import structlog

            renderer = (
                structlog.dev.ConsoleRenderer(colors=False)
                if self._console
                else structlog.processors.JSONRenderer()
            )
            self._chain = (structlog.processors.TimeStamper(fmt="iso", utc=True), renderer)
        return self._chain

    def format(self, record: logging.LogRecord) -> str:
        stamp, render = self._processors()
        event: dict[str, Any] = {"event": record.getMessage(), **getattr(record, "assay", {})}
        event.setdefault("logger", record.name)
        event["level"] = _LEVEL_NAMES.get(record.levelno, record.levelname.lower())
        return render(None, event["level"], stamp(None, event["level"], event))


class _CurrentStderrHandler(logging.Handler):
    """Writes each record to whatever ``sys.stderr`` is when it is written."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # noqa: BLE001 - logging must never break the caller
            self.handleError(record)


def configure_logging(level: str = "WARNING", fmt: str = "auto") -> None:
    """The CLI's output: the ``assay`` logger's level and one stderr handler of ours.

    ``fmt``: ``"json"``, ``"console"``, or ``"auto"`` (console when stderr is
    a terminal). Calling it again replaces the handler it installed before;
    handlers anyone else added are left alone.
    """
    use_console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    logger = logging.getLogger(ROOT_LOGGER)
    _remove_own_handlers(logger)
    handler = _CurrentStderrHandler()
    handler.setFormatter(_StructlogFormatter(use_console))
    handler._assay_own = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level_number(level))
    logger.propagate = False  # the CLI's one handler; nothing printed twice through the root


def reset_logging() -> None:
    """Undo :func:`configure_logging`: assay's loggers back to a library's defaults."""
    logger = logging.getLogger(ROOT_LOGGER)
    _remove_own_handlers(logger)
    logger.setLevel(logging.NOTSET)
    logger.propagate = True


def _remove_own_handlers(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        if getattr(handler, "_assay_own", False):
            logger.removeHandler(handler)


def enabled(level: int, name: str = ROOT_LOGGER) -> bool:
    """Whether an event at ``level`` (a logging.* number) on logger ``name`` would be handled."""
    return logging.getLogger(name).isEnabledFor(level)


class Logger:
    """A named logger; events below the logger's level cost one cached check."""

    __slots__ = ("name", "_std")

    def __init__(self, name: str) -> None:
        self.name = name
        self._std = logging.getLogger(name)

    def _emit(self, level: int, event: str, fields: dict[str, Any]) -> None:
        if self._std.isEnabledFor(level):
            self._std.log(level, event, extra={"assay": fields})

    def debug(self, event: str, **fields: Any) -> None:
        self._emit(logging.DEBUG, event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._emit(logging.INFO, event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit(logging.WARNING, event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit(logging.ERROR, event, fields)


def get_logger(name: str) -> Logger:
    return Logger(name)
