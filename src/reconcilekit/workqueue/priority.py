"""controller-runtime's priority queue: one entry per key, priorities, delays inside the queue.

Rules (controller-runtime's):

* A key is in the queue at most once, ready or waiting. Adding it again
  raises its priority to the higher of the two (a ready item then moves to
  the back of its new priority's FIFO) and its ready time to the earlier
  of the two: a ready item stays ready, a waiting one can only become ready
  sooner.
* `PriorityQueue.get` hands out the highest priority first and, within a
  priority, the item that became ready first. A key being processed is
  skipped, never handed out twice; a re-add during processing waits in the
  queue and is handed out after `PriorityQueue.done`.
* After shut down, `get` returns ``None`` at once: queued items are dropped
  (unlike the client-go queue, which drains).

Ports: sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue/priorityqueue.go
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import itertools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from reconcilekit.workqueue.clock import Clock, RealClock, TimerHandle
from reconcilekit.workqueue.interfaces import RateLimiter, RateLimitingInterface
from reconcilekit.workqueue.metrics import QueueMetrics
from reconcilekit.workqueue.rate_limiter import default_item_based_rate_limiter

__all__ = ["LOW_PRIORITY", "PriorityQueue", "add_with_priority"]

_T = TypeVar("_T", bound=Hashable)

LOW_PRIORITY = -100
"""The priority of initial-list creates and of resyncs, so real changes overtake them. Ports: handler.LowPriority"""


@dataclass(slots=True)
class _Entry:
    priority: int
    ready_at: float | None
    """``None`` once ready."""


class PriorityQueue(Generic[_T]):
    """A rate-limiting work queue with priorities, where each key exists once.

    Satisfies `RateLimitingInterface` (``add``, ``add_after`` and
    ``add_rate_limited`` use priority 0) and adds `add_with_opts` and
    `get_with_priority`.

    Differs: ``workqueue_depth`` has no ``priority`` label here (its label set
    is shared with the client-go queue's).

    Ports: priorityqueue.priorityqueue (New)
    """

    def __init__(
        self,
        rate_limiter: RateLimiter[_T] | None = None,
        *,
        name: str = "",
        clock: Clock | None = None,
    ) -> None:
        """Make an empty queue.

        Args:
            rate_limiter: Delays of `add_rate_limited`; per-item 5 ms doubling to 1000 s by default.
            name: The metrics' ``name`` label; ``""`` records no metrics.
            clock: Time source of the delays and metrics; the real clock by default.
        """
        self.name = name
        """The queue's name, as in its metrics."""
        self.rate_limiter: RateLimiter[_T] = rate_limiter or default_item_based_rate_limiter()
        """The limiter behind `add_rate_limited`, `forget` and `num_requeues`."""
        self._clock: Clock = clock or RealClock()
        self._entries: dict[_T, _Entry] = {}
        self._ready: dict[int, dict[_T, None]] = {}
        """Ready keys by priority, each in the order they became ready."""
        self._priorities: list[int] = []
        """The keys of ``_ready``, highest first."""
        self._heap: list[tuple[float, int, _T]] = []
        self._seq = itertools.count()
        self._processing: set[_T] = set()
        self._shutting_down = False
        self._getters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._timer: TimerHandle | None = None
        self._timer_at = float("inf")
        self._metrics: QueueMetrics[_T] | None = QueueMetrics(name, self._clock) if name else None

    def add_with_opts(self, *items: _T, after: float = 0.0, rate_limited: bool = False, priority: int = 0) -> None:
        """Add ``items`` with a delay and a priority.

        Args:
            after: Seconds to wait before the items are ready; ``0`` means now.
            rate_limited: Ask the rate limiter for the delay (counting a failure);
                with ``after > 0`` the shorter of the two delays wins.
            priority: Higher is handed out first; an existing entry keeps the higher one.

        A positive delay counts a retry in ``workqueue_retries_total``.

        Ports: priorityqueue.AddWithOpts
        """
        if self._shutting_down:
            return
        now = self._clock.monotonic()
        for item in items:
            delay = after
            if rate_limited:
                limited = self.rate_limiter.when(item)
                if delay <= 0 or limited < delay:
                    delay = limited
            if delay > 0 and self._metrics is not None:
                self._metrics.retry()
            ready_at = now + delay if delay > 0 else None
            entry = self._entries.get(item)
            if entry is None:
                self._entries[item] = _Entry(priority, ready_at)
                if ready_at is None:
                    self._make_ready(item, priority)
                else:
                    self._wait(item, ready_at)
                continue
            if priority > entry.priority:
                old = entry.priority
                entry.priority = priority
                if entry.ready_at is None:
                    del self._ready[old][item]
                    self._ready_at_back(item, priority)
            if entry.ready_at is None:
                continue  # ready stays ready
            if ready_at is None:
                entry.ready_at = None
                self._make_ready(item, entry.priority)
            elif ready_at < entry.ready_at:
                self._wait(item, ready_at)

    def add(self, item: _T, /) -> None:
        """Add ``item`` now with priority 0. Ports: priorityqueue.Add"""
        self.add_with_opts(item)

    def add_after(self, item: _T, delay: float, /) -> None:
        """Add ``item`` after ``delay`` seconds with priority 0. Ports: priorityqueue.AddAfter"""
        self.add_with_opts(item, after=delay)

    def add_rate_limited(self, item: _T, /) -> None:
        """Add ``item`` after the rate limiter's delay, priority 0. Ports: priorityqueue.AddRateLimited"""
        self.add_with_opts(item, rate_limited=True)

    def forget(self, item: _T, /) -> None:
        """Reset ``item``'s backoff. Ports: priorityqueue.Forget"""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: _T, /) -> int:
        """``rate_limiter.num_requeues(item)``. Ports: priorityqueue.NumRequeues"""
        return self.rate_limiter.num_requeues(item)

    def __len__(self) -> int:
        """Ready items (waiting ones are not counted). Ports: priorityqueue.Len"""
        return sum(len(keys) for keys in self._ready.values())

    def waiting(self) -> int:
        """Python only: items waiting for their ready time (for tests and debugging)."""
        return sum(1 for entry in self._entries.values() if entry.ready_at is not None)

    async def get(self) -> _T | None:
        """The next item, or ``None`` once shut down. Ports: priorityqueue.Get"""
        got = await self.get_with_priority()
        return None if got is None else got[0]

    async def get_with_priority(self) -> tuple[_T, int] | None:
        """Wait for the best ready item not being processed; return it with its priority.

        Returns:
            ``(item, priority)``, or ``None`` as soon as the queue shut down.

        Ports: priorityqueue.GetWithPriority
        """
        while not self._shutting_down:
            got = self._pop()
            if got is not None:
                return got
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except BaseException:
                waiter.cancel()
                try:
                    self._getters.remove(waiter)
                except ValueError:
                    pass
                if not waiter.cancelled():
                    self._wake_one()  # woken for an item we will not take: pass it on
                raise
        return None

    def done(self, item: _T, /) -> None:
        """Mark ``item`` as processed; a re-add made meanwhile becomes available. Ports: priorityqueue.Done"""
        if self._metrics is not None:
            self._metrics.done(item)
        self._processing.discard(item)
        entry = self._entries.get(item)
        if entry is not None and entry.ready_at is None:
            self._wake_one()

    def shut_down(self) -> None:
        """Stop: adds are ignored, every `get` returns ``None`` at once. Ports: priorityqueue.ShutDown"""
        self._shutting_down = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = float("inf")
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def shut_down_with_drain(self) -> None:
        """The same as `shut_down`. Ports: priorityqueue.ShutDownWithDrain"""
        self.shut_down()

    def shutting_down(self) -> bool:
        """True once shut down. Ports: priorityqueue.ShuttingDown"""
        return self._shutting_down

    def _pop(self) -> tuple[_T, int] | None:
        """Take the best ready item whose key is not being processed. Ports: the tree walk of GetWithPriority"""
        for priority in self._priorities:
            for item in self._ready[priority]:
                if item in self._processing:
                    continue
                del self._ready[priority][item]
                del self._entries[item]
                self._processing.add(item)
                if self._metrics is not None:
                    self._metrics.get(item)
                return item, priority
        return None

    def _ready_at_back(self, item: _T, priority: int) -> None:
        """Python only: append ``item`` to its priority's FIFO of ready keys."""
        keys = self._ready.get(priority)
        if keys is None:
            keys = self._ready[priority] = {}
            self._priorities = sorted(self._ready, reverse=True)
        keys[item] = None

    def _make_ready(self, item: _T, priority: int) -> None:
        """Python only: ``item`` became ready: count it and wake a getter if it can be handed out."""
        self._ready_at_back(item, priority)
        if self._metrics is not None:
            self._metrics.add(item)
        if item not in self._processing:
            self._wake_one()

    def _wait(self, item: _T, ready_at: float) -> None:
        """Python only: ``item`` waits until ``ready_at``; the timer is set for the earliest wait."""
        self._entries[item].ready_at = ready_at
        heapq.heappush(self._heap, (ready_at, next(self._seq), item))
        if ready_at < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._timer_at = ready_at
            self._timer = self._clock.call_later(ready_at - self._clock.monotonic(), self._fire)

    def _fire(self) -> None:
        """Make every waiting item whose time has come ready. Ports: priorityqueue.spin (the readyAt part)"""
        self._timer = None
        self._timer_at = float("inf")
        now = self._clock.monotonic()
        while self._heap:
            ready_at, _, item = self._heap[0]
            entry = self._entries.get(item)
            if entry is None or entry.ready_at != ready_at:
                heapq.heappop(self._heap)  # stale: handed out, or moved earlier
                continue
            if ready_at > now:
                break
            heapq.heappop(self._heap)
            entry.ready_at = None
            self._make_ready(item, entry.priority)
        if self._heap and not self._shutting_down:
            self._timer_at = self._heap[0][0]
            self._timer = self._clock.call_later(self._timer_at - now, self._fire)

    def _wake_one(self) -> None:
        """Python only: wake the longest-waiting `get` (Go's cond.Signal)."""
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


def add_with_priority(
    queue: RateLimitingInterface[_T],
    item: _T,
    /,
    *,
    priority: int = 0,
    after: float = 0.0,
    rate_limited: bool = False,
) -> None:
    """Add ``item`` with a priority if ``queue`` has priorities, else as a plain add.

    On a queue without ``add_with_opts`` (the client-go queue) the priority is
    dropped and the call becomes ``add_rate_limited``, ``add_after`` or ``add``.

    Python only: the one place that decides between the two queue flavours, as
    controller-runtime's handlers and controller do with a type assertion.
    """
    add_with_opts = getattr(queue, "add_with_opts", None)
    if add_with_opts is not None:
        add_with_opts(item, after=after, rate_limited=rate_limited, priority=priority)
    elif rate_limited:
        queue.add_rate_limited(item)
    elif after > 0:
        queue.add_after(item, after)
    else:
        queue.add(item)
