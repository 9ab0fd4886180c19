"""The delaying layer: ``add_after(item, seconds)`` on top of the deduplicating queue.

Waiting items sit in a min-heap by ready time; one clock timer, set for the
earliest, adds them to the queue when they are due. An item waits at most once:
a second ``add_after`` keeps the earlier ready time, so it never postpones. An
item may wait and be queued at the same time; when its time comes it is added
again and the queue's dedup rules apply.

Ports: k8s.io/client-go/util/workqueue/delaying_queue.go
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from typing import TypeVar

from reconcilekit.workqueue.clock import Clock, TimerHandle
from reconcilekit.workqueue.queue import Queue

__all__ = ["DelayingQueue"]

_T = TypeVar("_T", bound=Hashable)


class DelayingQueue(Queue[_T]):
    """A `Queue` whose items can be added after a delay.

    Differs: client-go runs a goroutine that wakes at the next ready time or
    every 10 s; here one event-loop timer (from the `Clock`) is set for the
    earliest ready time, so no task runs and nothing polls.

    Ports: workqueue.delayingType (NewTypedDelayingQueueWithConfig)
    """

    def __init__(self, *, name: str = "", clock: Clock | None = None) -> None:
        """See `Queue`; ``clock`` also times the delays."""
        super().__init__(name=name, clock=clock)
        self._ready_at: dict[_T, float] = {}
        self._heap: list[tuple[float, int, _T]] = []
        self._seq = itertools.count()
        self._timer: TimerHandle | None = None
        self._timer_at = float("inf")

    def add_after(self, item: _T, delay: float, /) -> None:
        """Add ``item`` once ``delay`` seconds have passed; at once if ``delay <= 0``.

        Ignored after shut down. Counts one retry in ``workqueue_retries_total``
        (even for ``delay <= 0``, as client-go does). If ``item`` already waits,
        the earlier of the two ready times wins.

        Ports: delayingType.AddAfter (and waitingLoop's insert)
        """
        if self.shutting_down():
            return
        if self._metrics is not None:
            self._metrics.retry()
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock.monotonic() + delay
        if self._ready_at.get(item, float("inf")) <= ready_at:
            return
        self._ready_at[item] = ready_at
        heapq.heappush(self._heap, (ready_at, next(self._seq), item))
        if ready_at < self._timer_at:
            self._arm(ready_at)

    def waiting(self) -> int:
        """Python only: how many items wait for their ready time (for tests and debugging)."""
        return len(self._ready_at)

    def _arm(self, ready_at: float) -> None:
        """Python only: (re)set the one timer for ``ready_at``."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = ready_at
        self._timer = self._clock.call_later(ready_at - self._clock.monotonic(), self._fire)

    def _fire(self) -> None:
        """Add every item whose time has come, then set the timer for the next one.

        Ports: delayingType.waitingLoop
        """
        self._timer = None
        self._timer_at = float("inf")
        now = self._clock.monotonic()
        while self._heap and self._heap[0][0] <= now:
            ready_at, _, item = heapq.heappop(self._heap)
            if self._ready_at.get(item) != ready_at:
                continue  # superseded by an earlier ready time, already handled
            del self._ready_at[item]
            self.add(item)
        while self._heap and self._ready_at.get(self._heap[0][2]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        if self._heap and not self.shutting_down():
            self._arm(self._heap[0][0])

    def _on_shut_down(self) -> None:
        """Stop the timer and drop every waiting item. Ports: delayingType.ShutDown"""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = float("inf")
        self._heap.clear()
        self._ready_at.clear()
