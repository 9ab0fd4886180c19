"""Logging set-up for the listener process: slog's JSON or text records on stdout, secrets redacted.

Go's listener logs through log/slog (``logger.New``): with ``json`` one object per line
with ``time``, ``level`` (``INFO``...), ``source``, ``msg`` and the attributes (the
``component`` each part binds: ``listener``, ``worker``, ``metrics exporter``); with
``text`` the same as ``key=value`` pairs. Log pipelines parse listener pods by those keys,
so every line the process prints, the standard library's included, takes that shape.

Python only: Go's logger.New (slog with a level and a ``json``/``text`` handler).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from arc_controllers._stdlib_logging import route_stdlib_logging, stdlib_logger_name
from arc_controllers.actions.redact import TRACEBACKS_WITHOUT_LOCALS

__all__ = [
    "SECRET_KEYS",
    "configure_logging",
    "go_quote",
    "parse_log_level",
    "redact_secrets",
    "render_slog_text",
    "slog_needs_quoting",
]

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


_SLOG_LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARN", "warn": "WARN", "error": "ERROR"}
_SLOG_LEVELS.update(critical="ERROR", exception="ERROR")
_CALLSITE = structlog.processors.CallsiteParameterAdder(
    [
        structlog.processors.CallsiteParameter.MODULE,
        structlog.processors.CallsiteParameter.FUNC_NAME,
        structlog.processors.CallsiteParameter.PATHNAME,
        structlog.processors.CallsiteParameter.LINENO,
    ]
)
_CALLSITE_KEYS = ("module", "func_name", "pathname", "lineno")


def _slog_record(_logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
    """Reorder structlog's keys into slog's: ``time``, ``level``, ``source``, ``msg``, then the attributes.

    ``level`` is slog's spelling (``DEBUG``, ``INFO``, ``WARN``, ``ERROR``); ``source`` is the
    call site (``function``, ``file``, ``line``), as Go's handler writes it with ``AddSource``.
    Standard-library records (aiohttp, asyncio, ...) carry their logger's name as ``logger``.

    Python only: Go's slog handlers order the keys themselves.
    """
    event_dict.pop("_record", None)
    event_dict.pop("_from_structlog", None)
    level = str(event_dict.pop("level", method)).lower()
    callsite = {key: event_dict.pop(key, None) for key in _CALLSITE_KEYS}
    record: EventDict = {"time": event_dict.pop("time", None), "level": _SLOG_LEVELS.get(level, level.upper())}
    if callsite["pathname"] is not None:
        record["source"] = {
            "function": f"{callsite['module']}.{callsite['func_name']}",
            "file": callsite["pathname"],
            "line": callsite["lineno"],
        }
    record["msg"] = str(event_dict.pop("event", ""))
    record.update(event_dict)
    return record


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
_GO_ESCAPES.update({'"': '\\"', "\\": "\\\\"})


def go_quote(text: str) -> str:
    """``text`` as Go's strconv.Quote writes it: printable runes as they are, the rest escaped.

    ``\\"`` and ``\\\\``; ``\\a \\b \\f \\n \\r \\t \\v``; other ASCII controls and DEL as
    ``\\xNN``; other non-printables (U+0085, U+00A0, U+2028, ...) as ``\\uNNNN`` or
    ``\\UNNNNNNNN``, lower-case hex. A lone surrogate (invalid UTF-8 to Go) becomes ``\\ufffd``.
    "Printable" is Go's unicode.IsPrint, which is Python's `str.isprintable` (categories
    L, M, N, P, S and the ASCII space).

    Ports: strconv.Quote
    """
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def slog_needs_quoting(text: str) -> bool:
    """Whether slog's text handler quotes ``text``: empty, or a rune that would break ``key=value``.

    ASCII: a space, ``=``, ``"`` or a control byte (what a JSON string escapes; a backslash
    and DEL do not count). Beyond ASCII: any Unicode space (U+0085, U+00A0, U+2028, ...)
    or non-printable rune.

    Ports: log/slog's needsQuoting (text_handler.go)
    """
    if not text:
        return True
    for char in text:
        if char < "\x80":
            if char in ' ="' or char < " ":
                return True
        elif char.isspace() or not char.isprintable():
            return True
    return False


def _text_value(value: object) -> str:
    """One value as slog's text handler writes it: bare when safe, else Go-quoted. Python only."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = value if isinstance(value, str) else json.dumps(value, default=str, separators=(",", ":"))
    return go_quote(text) if slog_needs_quoting(text) else text


def render_slog_text(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> str:
    """``time=... level=INFO source=file:line msg="..." key=value``: slog's TextHandler layout.

    Python only: Go's slog.NewTextHandler.
    """
    parts = []
    for key, value in event_dict.items():
        if key == "source" and isinstance(value, dict):
            value = f"{value['file']}:{value['line']}"
        parts.append(f"{_text_value(str(key))}={_text_value(value)}")
    return " ".join(parts)


def _timestamper(*, text: bool) -> Processor:
    """UTC time under ``time``: RFC 3339 with microseconds (JSON) or milliseconds (text), like slog's.

    Python only.
    """

    def stamp(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
        now = datetime.now(UTC)
        spec = "milliseconds" if text else "microseconds"
        event_dict["time"] = now.isoformat(timespec=spec).replace("+00:00", "Z")
        return event_dict

    return stamp


def configure_logging(level: str, log_format: str, *, stream: TextIO | None = None) -> None:
    """Configure structlog and the standard library's logging once for the process, writing to stdout.

    Every line is one slog record: with ``json`` one JSON object (``time``, ``level``,
    ``source``, ``msg``, then the attributes such as ``component``), with ``text`` slog's
    ``key=value`` layout. ``level`` filters structlog's loggers and the standard library's
    (aiohttp, asyncio) alike; their records go through the same renderer.

    Args:
        level: See `parse_log_level`.
        log_format: ``json`` or ``text``, case-sensitive.
        stream: Where lines go; stdout when ``None``.

    Raises:
        ValueError: ``invalid log level: …`` or ``invalid log format: …``.

    Ports: logger.New
    """
    numeric = parse_log_level(level)
    if log_format not in ("json", "text"):
        raise ValueError(f"invalid log format: {log_format}")
    text = log_format == "text"
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _timestamper(text=text),
        _CALLSITE,
        redact_secrets,
    ]
    renderer: list[Processor]
    if text:
        renderer = [structlog.processors.format_exc_info, _slog_record, render_slog_text]
    else:
        renderer = [TRACEBACKS_WITHOUT_LOCALS, _slog_record, structlog.processors.JSONRenderer(default=str)]
    out = stream or sys.stdout
    structlog.configure(
        processors=shared + renderer,
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    route_stdlib_logging(stream=out, level=numeric, pre_chain=[*shared, stdlib_logger_name], renderer=renderer)
