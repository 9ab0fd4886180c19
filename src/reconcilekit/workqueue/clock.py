"""Time as the work queue and the controller see it: a monotonic clock, sleeps and timers.

Everything that waits goes through a `Clock`, so tests replace time with a
`FakeClock` and step it forward instead of sleeping.

Ports: k8s.io/utils/clock (Clock, clock/testing.FakeClock), the parts the work queue uses
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "FakeClock", "RealClock", "TimerHandle"]


class TimerHandle(Protocol):
    """A scheduled callback that can be called off. Ports: clock.Timer (Stop)"""

    def cancel(self) -> None:
        """Do not run the callback; a no-op if it ran already."""
        ...


class Clock(Protocol):
    """**Protocol:** monotonic time, sleeping and timers.

    Ports: clock.WithTicker (Now, Since, NewTimer, Sleep)
    """

    def monotonic(self) -> float:
        """Seconds on a monotonic clock with an arbitrary origin."""
        ...

    async def sleep(self, seconds: float, /) -> None:
        """Return after ``seconds`` seconds of this clock's time."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None], /) -> TimerHandle:
        """Run ``callback`` on the event loop after ``delay`` seconds (now if ``delay <= 0``).

        Must be called from the event loop's thread, with a running loop.
        """
        ...


class RealClock:
    """The event loop's clock. Ports: clock.RealClock"""

    def monotonic(self) -> float:
        """`time.monotonic`, the clock the default event loop runs on."""
        return time.monotonic()

    async def sleep(self, seconds: float, /) -> None:
        """`asyncio.sleep`."""
        await asyncio.sleep(seconds)

    def call_later(self, delay: float, callback: Callable[[], None], /) -> TimerHandle:
        """`loop.call_later` on the running loop."""
        return asyncio.get_running_loop().call_later(max(0.0, delay), callback)


class _FakeTimer:
    """Python only: one pending timer of a `FakeClock`."""

    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that moves only when told to: for tests, so no test waits on real time.

    ``call_later`` callbacks run inside `advance`, in deadline order; ``sleep``
    returns once `advance` has moved the clock past its deadline (a sleep of
    zero or less returns after one loop iteration).

    Ports: k8s.io/utils/clock/testing.FakeClock (Step, HasWaiters)
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        """The clock's current time in seconds."""
        return self._now

    async def sleep(self, seconds: float, /) -> None:
        """Return once the clock reached now + ``seconds``."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        timer = self.call_later(seconds, wake)
        try:
            await future
        finally:
            timer.cancel()

    def call_later(self, delay: float, callback: Callable[[], None], /) -> TimerHandle:
        """Schedule ``callback`` at now + ``delay``; it runs during a later `advance`."""
        timer = _FakeTimer(self._now + max(0.0, delay), callback)
        heapq.heappush(self._timers, (timer.when, next(self._seq), timer))
        return timer

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` and run every timer that became due.

        Timers run in deadline order with the clock set to each one's deadline;
        a timer scheduled by a callback runs too if it falls inside the step.
        """
        target = self._now + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.callback()
        self._now = target

    def has_waiters(self) -> bool:
        """True while a timer or a sleep is pending. Ports: FakeClock.HasWaiters"""
        return any(not timer.cancelled for _, _, timer in self._timers)
