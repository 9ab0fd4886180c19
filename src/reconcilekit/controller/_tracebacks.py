"""Which ``reconciler error`` lines carry a traceback: a repeated error's at most once per interval.

Formatting a traceback is the most expensive part of a failed reconcile (Python 3.11+
compiles each frame's source line to place its carets; a reconcile's frames run deep
through the client and aiohttp), and a request that keeps failing the same way logs the
same traceback on every retry. `TracebackLimiter` lets the first line of an error carry
its traceback and the repeats within the interval carry only the error's text.

Python only: controller-runtime's log lines carry no traceback at all (a Go error has no
stack); here the traceback is kept, rate-limited.
"""

from __future__ import annotations

from collections.abc import Hashable

from reconcilekit.workqueue.clock import Clock

__all__ = ["TracebackLimiter", "error_key"]

MAX_KEYS = 4096
"""How many distinct errors are remembered at once; the least recently logged is forgotten first."""


def error_key(err: BaseException) -> Hashable:
    """What makes two errors "the same": their type, their text and the line that raised them.

    The raising line is the innermost frame of ``err``'s traceback, (file, line number);
    ``None`` for an error that was never raised.
    """
    tb = err.__traceback__
    line: tuple[str, int] | None = None
    if tb is not None:
        while tb.tb_next is not None:
            tb = tb.tb_next
        line = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
    return (type(err).__module__, type(err).__qualname__, str(err), line)


class TracebackLimiter:
    """Decides whether an error's log line carries its traceback.

    Args:
        interval: seconds during which a repeated error (same `error_key`) is logged
            without its traceback after one line that carried it; ``0`` gives every line
            its traceback.
        clock: the time source (the controller's, so tests move it by hand).

    At most `MAX_KEYS` errors are remembered; one forgotten early gets its traceback
    again on its next line, which is never wrong, only louder.
    """

    def __init__(self, interval: float, clock: Clock) -> None:
        if interval < 0:
            raise ValueError(f"interval must be 0 or more seconds, got {interval}")
        self._interval = interval
        self._clock = clock
        self._logged_at: dict[Hashable, float] = {}  # oldest traceback first

    def should_log(self, err: BaseException) -> bool:
        """Whether this line of ``err`` carries its traceback (and, if so, note that it did)."""
        if self._interval == 0:
            return True
        now = self._clock.monotonic()
        key = error_key(err)
        logged_at = self._logged_at.get(key)
        if logged_at is not None and now - logged_at < self._interval:
            return False
        self._logged_at.pop(key, None)
        self._logged_at[key] = now
        self._prune(now)
        return True

    def _prune(self, now: float) -> None:
        """Forget errors whose interval ended, oldest first, and any beyond `MAX_KEYS`."""
        logged = self._logged_at
        while logged:
            oldest = next(iter(logged))
            if len(logged) <= MAX_KEYS and now - logged[oldest] < self._interval:
                return
            del logged[oldest]
