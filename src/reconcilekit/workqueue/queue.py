"""The deduplicating work queue: a FIFO with a dirty set and a processing set.

Rules (client-go's, exactly):

* ``add(x)`` while ``x`` is dirty does nothing; while ``x`` is being processed it
  only marks ``x`` dirty, and ``done(x)`` queues it again. So an item is never
  handed to two workers at once, and any number of adds during processing cost
  exactly one more round.
* Order is FIFO by the time an item became dirty.
* After `Queue.shut_down`, adds are ignored but `Queue.get` keeps handing out
  what is queued until the FIFO is empty, then returns ``None``.

Ports: k8s.io/client-go/util/workqueue/queue.go
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Hashable
from typing import Generic, TypeVar

from reconcilekit.workqueue.clock import Clock, RealClock
from reconcilekit.workqueue.metrics import QueueMetrics

__all__ = ["Queue"]

_T = TypeVar("_T", bound=Hashable)


class Queue(Generic[_T]):
    """A work queue of hashable items; safe for any number of concurrent workers on one loop.

    Example::

        queue: Queue[Request] = Queue(name="configmap")
        queue.add(Request("default", "a"))
        while (item := await queue.get()) is not None:
            try:
                ...  # process item
            finally:
                queue.done(item)

    Ports: workqueue.Typed (NewTypedWithConfig)
    """

    def __init__(self, *, name: str = "", clock: Clock | None = None) -> None:
        """Make an empty queue.

        Args:
            name: The ``name`` label of the queue's metrics; ``""`` records no metrics.
            clock: Time source for the metrics (and the delaying layers); the real clock by default.
        """
        self.name = name
        """The queue's name, as in its metrics."""
        self._clock: Clock = clock or RealClock()
        self._queue: collections.deque[_T] = collections.deque()
        self._dirty: set[_T] = set()
        self._processing: set[_T] = set()
        self._shutting_down = False
        self._drain = False
        self._getters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._drained: asyncio.Event | None = None
        self._metrics: QueueMetrics[_T] | None = QueueMetrics(name, self._clock) if name else None

    def add(self, item: _T, /) -> None:
        """Mark ``item`` as needing processing.

        A no-op when the queue shuts down or ``item`` is dirty already; while
        ``item`` is processed it is queued again by `done`, not now.

        Ports: Typed.Add
        """
        if self._shutting_down or item in self._dirty:
            return
        if self._metrics is not None:
            self._metrics.add(item)
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        self._wake_one()

    def __len__(self) -> int:
        """Items waiting to be handed out; items being processed are not counted. Ports: Typed.Len"""
        return len(self._queue)

    async def get(self) -> _T | None:
        """Wait for an item, mark it as being processed and return it.

        Returns:
            The oldest dirty item that is not being processed, or ``None`` once
            the queue shut down and every queued item has been handed out.

        Ports: Typed.Get
        """
        while not self._queue and not self._shutting_down:
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
                if self._queue and not waiter.cancelled():
                    self._wake_one()  # we were woken for an item we will not take: pass it on
                raise
        if not self._queue:
            return None
        item = self._queue.popleft()
        if self._metrics is not None:
            self._metrics.get(item)
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: _T, /) -> None:
        """Mark ``item`` as processed; queue it again if it was added meanwhile.

        Ports: Typed.Done
        """
        if self._metrics is not None:
            self._metrics.done(item)
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_one()
        elif not self._processing and self._drained is not None:
            self._drained.set()

    def shut_down(self) -> None:
        """Ignore adds from now on and wake every waiting `get`.

        Queued items are still handed out; `get` returns ``None`` once the FIFO is empty.

        Ports: Typed.ShutDown
        """
        self._drain = False
        self._shut_down()
        if self._drained is not None:
            self._drained.set()  # a pending shut_down_with_drain stops waiting

    async def shut_down_with_drain(self) -> None:
        """`shut_down`, then wait until every item handed out so far is `done`.

        Bound the wait with ``asyncio.timeout`` when a worker may hang.

        Ports: Typed.ShutDownWithDrain
        """
        self._drain = True
        self._shut_down()
        while self._processing and self._drain:
            self._drained = asyncio.Event()
            await self._drained.wait()
        self._drained = None

    def shutting_down(self) -> bool:
        """True once `shut_down` was called. Ports: Typed.ShuttingDown"""
        return self._shutting_down

    def _shut_down(self) -> None:
        """Ports: Typed.shutdown (set the flag, Broadcast)"""
        self._shutting_down = True
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
        self._on_shut_down()

    def _on_shut_down(self) -> None:
        """Python only: a hook for the delaying layer to stop its timer."""

    def _wake_one(self) -> None:
        """Python only: wake the longest-waiting `get` (Go's cond.Signal)."""
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
