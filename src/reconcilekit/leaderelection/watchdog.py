"""The blocked-leader watchdog: a thread that ends the process when its event loop stops running.

The fence (`LeaderElector.holds_lease`) is checked by code that runs on the event loop, so it
cannot help while the loop itself is blocked (a synchronous call, a CPU-bound step): the
first thing the loop does afterwards may be a write queued before the block. Another replica
can take over lease_duration after this leader's last renewal, and the fence stops work at
renew_deadline; a loop blocked for longer than the difference may already be past both.
So while leading, a heartbeat runs on the loop and a daemon thread watches it: when the
heartbeat is older than ``limit`` seconds, the thread writes one line to stderr and calls
``os._exit(BLOCKED_EXIT_CODE)``. That is a hard exit: no ``finally`` blocks, no ``atexit``
handlers, no flushing of buffered output; the process is gone before the loop can resume.

Python only: client-go's renew runs on its own goroutine and has no such hazard.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable

__all__ = ["BLOCKED_EXIT_CODE", "LoopWatchdog"]

BLOCKED_EXIT_CODE = 70
"""The exit status of a process ended by the watchdog (``EX_SOFTWARE``)."""


class LoopWatchdog:
    """Exits the process when the running loop has not run a heartbeat for ``limit`` seconds.

    Args:
        limit: seconds the loop may go without running (``lease_duration − renew_deadline``).
        name: the Lease, for the message.
        exit: called with `BLOCKED_EXIT_CODE`; ``os._exit`` (tests inject a recorder).
        clock: monotonic seconds.

    Start it on the loop (`start`), stop it from the loop or any thread (`stop`); idempotent.
    """

    def __init__(
        self,
        *,
        limit: float,
        name: str,
        exit: Callable[[int], object] = os._exit,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit <= 0:
            raise ValueError("the watchdog limit must be positive seconds")
        self.limit = limit
        self._name = name
        self._exit = exit
        self._clock = clock
        self._interval = min(limit / 4, 0.5)
        self._beat = clock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._handle: asyncio.TimerHandle | None = None
        self.fired = False
        """Whether the watchdog called ``exit``."""

    def start(self) -> None:
        """Start the heartbeat on the running loop and the watching thread."""
        if self._thread is not None:
            return
        loop = asyncio.get_running_loop()
        self._beat = self._clock()
        self._handle = loop.call_later(self._interval, self._heartbeat, loop)
        self._thread = threading.Thread(target=self._watch, name=f"leader-watchdog-{self._name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (the thread ends within one interval)."""
        self._stopped.set()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _heartbeat(self, loop: asyncio.AbstractEventLoop) -> None:
        self._beat = self._clock()
        if not self._stopped.is_set():
            self._handle = loop.call_later(self._interval, self._heartbeat, loop)

    def _watch(self) -> None:
        while not self._stopped.wait(self._interval):
            blocked = self._clock() - self._beat
            if blocked > self.limit and not self._stopped.is_set():
                self.fired = True
                message = (
                    f"leader election {self._name}: the event loop was blocked {blocked:.1f} s "
                    f"(limit {self.limit:.1f} s) while leading; exiting now\n"
                )
                os.write(2, message.encode())
                self._exit(BLOCKED_EXIT_CODE)
                return
