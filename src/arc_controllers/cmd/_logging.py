"""Logging set-up for the manager process: structlog to stderr, text or JSON, secrets redacted.

``text`` reads like zap's development console encoder (time, upper-case level, logger,
message, then the key/values); ``json`` uses zap's production keys (``ts``,
``severity``, ``logger``, ``message``).

Python only: ARC builds its loggers with zap (logging.NewLogger) and slog; structlog
plays both roles here.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from arc_controllers._stdlib_logging import route_stdlib_logging
from arc_controllers.actions.redact import REDACTED, TRACEBACKS_WITHOUT_LOCALS, redact

__all__ = ["SECRET_KEYS", "configure_manager_logging", "redact_secrets"]

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}


SECRET_KEYS = frozenset(
    {"authorization", "github_token", "github_app_private_key", "jit_config", "private_key", "token"}
)
"""Event keys whose values never reach a log line."""


def redact_secrets(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """Blank `SECRET_KEYS`; scrub JWTs, PEM blocks and auth headers from every string value. Python only."""
    for key, value in event_dict.items():
        if key in SECRET_KEYS:
            event_dict[key] = REDACTED
        elif isinstance(value, str):
            event_dict[key] = redact(value)
    return event_dict


class _NamedPrintLogger(structlog.PrintLogger):
    """structlog's PrintLogger that remembers the name ``structlog.get_logger(name)`` was given."""

    def __init__(self, file: TextIO, name: str) -> None:
        super().__init__(file)
        self.name = name


class _NamedPrintLoggerFactory:
    """Like structlog.PrintLoggerFactory, keeping the logger's name for zap's ``logger`` key. Python only."""

    def __init__(self, file: TextIO) -> None:
        self._file = file

    def __call__(self, *args: object) -> _NamedPrintLogger:
        return _NamedPrintLogger(self._file, str(args[0]) if args else "")


def _logger_name(logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """zap's ``logger``: the logr name (``AutoscalingRunnerSet``, ``reconcilekit.controller``, ``asyncio``).

    A structlog logger's name is what ``structlog.get_logger`` was given; a standard-library
    record's is its logger's. Python only.
    """
    record = event_dict.get("_record")
    name = record.name if record is not None else getattr(logger, "name", "")
    if name:
        event_dict["logger"] = name
    return event_dict


def _zap_keys(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """Rename structlog's keys to zap's production ones, in zap's order. Python only."""
    record: EventDict = {
        "ts": event_dict.pop("ts", None),
        "severity": str(event_dict.pop("level", "info")).upper(),
    }
    if "logger" in event_dict:
        record["logger"] = event_dict.pop("logger")
    record["message"] = event_dict.pop("event", "")
    record.update(event_dict)
    return record


def configure_manager_logging(level: str, log_format: str, *, stream: TextIO | None = None) -> None:
    """Configure structlog for the whole process.

    Args:
        level: ``debug``, ``info``, ``warn`` or ``error`` (already checked by the option parser).
        log_format: ``text`` or ``json``.
        stream: where lines go; stderr (zap's default sink) when ``None``.

    Standard-library records (aiohttp, asyncio, kubernetes_asyncio) take the same renderer
    and stream, at ``level`` but never below ``info``; every line carries its logger's name
    under ``logger``.

    Raises:
        ValueError: an unknown level or format.

    Ports: logging.NewLogger (the level and format switches)
    """
    try:
        numeric = _LEVELS[level.lower()]
    except KeyError:
        raise ValueError(f"invalid log level: {level}") from None
    processors: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
        _logger_name,
        redact_secrets,
    ]
    renderer: list[Processor]
    if log_format == "json":
        renderer = [_zap_keys, TRACEBACKS_WITHOUT_LOCALS, structlog.processors.JSONRenderer(default=str)]
    elif log_format == "text":
        renderer = [
            structlog.processors.format_exc_info,
            structlog.dev.ConsoleRenderer(colors=False, timestamp_key="ts"),
        ]
    else:
        raise ValueError(f"invalid log format: {log_format}")
    out = stream if stream is not None else sys.stderr
    structlog.configure(
        processors=processors + renderer,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_NamedPrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    # The standard library's DEBUG records are not the manager's debug log (ARC's default level is
    # debug): kubernetes_asyncio logs whole response bodies, Secrets included, and asyncio a
    # selector line before every run. Go ARC's libraries (client-go's klog) stay out of it too.
    stdlib_level = max(numeric, logging.INFO)
    route_stdlib_logging(stream=out, level=stdlib_level, pre_chain=processors, renderer=renderer)
