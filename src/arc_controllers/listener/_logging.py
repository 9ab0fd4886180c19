"""Logging set-up for the listener process: structlog to stdout, secrets redacted.

Python only: Go's logger.New (slog with a level and a ``json``/``text`` handler).
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from arc_controllers.actions.redact import TRACEBACKS_WITHOUT_LOCALS

__all__ = ["SECRET_KEYS", "configure_logging", "parse_log_level", "redact_secrets"]

SECRET_KEYS = frozenset(
    {
        "authorization",
        "encoded_jit_config",
        "github_app_private_key",
        "github_token",
        "jit_config",
        "message_queue_access_token",
        "private_key",
        "queue_token",
        "token",
    }
)
"""Event keys whose values never reach a log line."""

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}


def redact_secrets(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """Replace the value of every key in `SECRET_KEYS` with ``"[redacted]"``. Python only: no Go counterpart."""
    for key in SECRET_KEYS & event_dict.keys():
        event_dict[key] = "[redacted]"
    return event_dict


def parse_log_level(level: str) -> int:
    """``debug``/``info``/``warn``/``error`` in any case, as a logging level.

    Raises:
        ValueError: ``invalid log level: <level>`` (an empty level included).

    Ports: the level switch of logger.New
    """
    try:
        return _LEVELS[level.lower()]
    except KeyError:
        raise ValueError(f"invalid log level: {level}") from None


def configure_logging(level: str, log_format: str, *, stream: TextIO | None = None) -> None:
    """Configure structlog once for the process, writing to stdout.

    Args:
        level: See `parse_log_level`.
        log_format: ``json`` (one object per line) or ``text`` (key=value), case-sensitive.

    Raises:
        ValueError: ``invalid log level: …`` or ``invalid log format: …``.

    Ports: logger.New
    """
    numeric = parse_log_level(level)
    processors: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]
    if log_format == "json":
        processors += [TRACEBACKS_WITHOUT_LOCALS, structlog.processors.JSONRenderer()]
    elif log_format == "text":
        processors += [structlog.processors.format_exc_info, structlog.processors.LogfmtRenderer()]
    else:
        raise ValueError(f"invalid log format: {log_format}")
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(stream or sys.stdout),
        cache_logger_on_first_use=True,
    )
