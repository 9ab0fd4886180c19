"""The work queue's roles as Protocols: the queue, its delaying and rate-limiting layers, and rate limiters.

Items must be hashable: equal items are one item. The queue guarantees that
an item is never handed to two workers at once and that any number of adds
while it is being processed cause exactly one more round after `Queue.done`.

Ports: k8s.io/client-go/util/workqueue (TypedInterface, TypedDelayingInterface,
TypedRateLimitingInterface, TypedRateLimiter)
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol, TypeVar

__all__ = ["DelayingInterface", "Interface", "RateLimiter", "RateLimitingInterface"]

_T = TypeVar("_T", bound=Hashable)
_T_contra = TypeVar("_T_contra", bound=Hashable, contravariant=True)


class Interface(Protocol[_T]):
    """**Protocol:** a deduplicating FIFO of keys with a processing set.

    Ports: workqueue.TypedInterface
    """

    def add(self, item: _T, /) -> None:
        """Mark ``item`` as needing processing; a no-op if it already does or the queue shut down."""
        ...

    def __len__(self) -> int:
        """Items waiting to be handed out (items being processed are not counted)."""
        ...

    async def get(self) -> _T | None:
        """Wait for the next item and mark it as being processed; ``None`` once shut down and empty."""
        ...

    def done(self, item: _T, /) -> None:
        """Mark ``item`` as processed; if it was added meanwhile, queue it again now."""
        ...

    def shut_down(self) -> None:
        """Refuse new adds and wake every waiting `get`."""
        ...

    async def shut_down_with_drain(self) -> None:
        """`shut_down`, then wait until every handed-out item is `done`."""
        ...

    def shutting_down(self) -> bool:
        """True once `shut_down` was called."""
        ...


class DelayingInterface(Interface[_T], Protocol[_T]):
    """**Protocol:** a queue that can add an item later. Ports: workqueue.TypedDelayingInterface"""

    def add_after(self, item: _T, delay: float, /) -> None:
        """Add ``item`` after ``delay`` seconds (now if ``delay <= 0``).

        An item already waiting keeps the earlier of its two ready times.
        """
        ...


class RateLimitingInterface(DelayingInterface[_T], Protocol[_T]):
    """**Protocol:** a delaying queue with per-item backoff. Ports: workqueue.TypedRateLimitingInterface"""

    def add_rate_limited(self, item: _T, /) -> None:
        """Add ``item`` after the delay the rate limiter chooses for it."""
        ...

    def forget(self, item: _T, /) -> None:
        """Reset ``item``'s failure count in the rate limiter (it stays in the queue)."""
        ...

    def num_requeues(self, item: _T, /) -> int:
        """How many times ``item`` has been rate-limited since it was last forgotten."""
        ...


class RateLimiter(Protocol[_T_contra]):
    """**Protocol:** decides how long an item waits before its next try.

    Ports: workqueue.TypedRateLimiter
    """

    def when(self, item: _T_contra, /) -> float:
        """Seconds ``item`` must wait now; counts one more failure for it."""
        ...

    def forget(self, item: _T_contra, /) -> None:
        """Stop tracking ``item``: its next `when` starts from scratch."""
        ...

    def num_requeues(self, item: _T_contra, /) -> int:
        """Failures counted for ``item`` since it was last forgotten."""
        ...
