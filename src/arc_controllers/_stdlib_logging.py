"""The standard library's log records (aiohttp, asyncio, kubernetes_asyncio) rendered like structlog's.

The manager and the listener each promise one line shape (zap's keys, slog's records);
a library that logs through `logging` would print its own bare text lines in between.
`route_stdlib_logging` gives the root logger one handler whose formatter runs the
process's structlog renderer, at the process's level. Shared by ``arc_controllers.cmd``
and ``arc_controllers.listener`` (both above this module in the import layers).

Python only: Go's libraries log through the process's own logr/slog logger.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

__all__ = ["route_stdlib_logging", "stdlib_logger_name"]


def stdlib_logger_name(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """Name a standard-library record's logger (``aiohttp.access``, ``asyncio``) under ``logger``.

    Python only.
    """
    record = event_dict.get("_record")
    if record is not None:
        event_dict["logger"] = record.name
    return event_dict


def route_stdlib_logging(
    *, stream: TextIO, level: int, pre_chain: Sequence[Processor], renderer: Sequence[Processor]
) -> None:
    """Make the root logger's only handler write to ``stream`` through structlog's processors.

    Args:
        stream: Where lines go (the same stream structlog prints to).
        level: A `logging` level; records below it are dropped, as structlog's filter drops its own.
        pre_chain: Processors run on each record first (log level, time stamp, redaction, ...).
        renderer: The processors that end in the process's renderer; structlog's
            ``_record``/``_from_structlog`` bookkeeping keys are removed before them.

    Python only: see the module docstring.
    """
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=list(pre_chain),
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderer],
            pass_foreign_args=False,
        )
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
