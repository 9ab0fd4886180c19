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


def _zap_keys(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """Rename structlog's keys to zap's production ones. Python only."""
    event_dict["severity"] = str(event_dict.pop("level", "info")).upper()
    event_dict["message"] = event_dict.pop("event", "")
    if "logger_name" in event_dict:
        event_dict["logger"] = event_dict.pop("logger_name")
    return event_dict


def configure_manager_logging(level: str, log_format: str, *, stream: TextIO | None = None) -> None:
    """Configure structlog for the whole process.

    Args:
        level: ``debug``, ``info``, ``warn`` or ``error`` (already checked by the option parser).
        log_format: ``text`` or ``json``.
        stream: where lines go; stderr (zap's default sink) when ``None``.

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
        redact_secrets,
    ]
    if log_format == "json":
        processors += [_zap_keys, TRACEBACKS_WITHOUT_LOCALS, structlog.processors.JSONRenderer()]
    elif log_format == "text":
        processors += [
            structlog.processors.format_exc_info,
            structlog.dev.ConsoleRenderer(colors=False, timestamp_key="ts"),
        ]
    else:
        raise ValueError(f"invalid log format: {log_format}")
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(stream if stream is not None else sys.stderr),
        cache_logger_on_first_use=False,
    )
