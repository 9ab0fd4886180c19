"""The rate-limiting layer: ``add_rate_limited``, ``forget`` and ``num_requeues`` over the delaying queue.

Ports: k8s.io/client-go/util/workqueue/rate_limiting_queue.go
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from reconcilekit.workqueue.clock import Clock
from reconcilekit.workqueue.delaying import DelayingQueue
from reconcilekit.workqueue.interfaces import RateLimiter
from reconcilekit.workqueue.rate_limiter import default_controller_rate_limiter

__all__ = ["RateLimitingQueue"]

_T = TypeVar("_T", bound=Hashable)


class RateLimitingQueue(DelayingQueue[_T]):
    """A `DelayingQueue` that asks a `RateLimiter` how long a failed item waits.

    Example::

        queue: RateLimitingQueue[Request] = RateLimitingQueue(name="configmap")
        queue.add_rate_limited(request)  # 5 ms, then 10 ms, 20 ms, ... until forget(request)

    Ports: workqueue.rateLimitingType (NewTypedRateLimitingQueueWithConfig)
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
            rate_limiter: Chooses each failed item's delay; `default_controller_rate_limiter` by default.
            name: The metrics' ``name`` label; ``""`` records no metrics.
            clock: Time source of the delays and the metrics; the real clock by default.
        """
        super().__init__(name=name, clock=clock)
        self.rate_limiter: RateLimiter[_T] = rate_limiter or default_controller_rate_limiter(clock=clock)
        """The limiter behind `add_rate_limited`, `forget` and `num_requeues`."""

    def add_rate_limited(self, item: _T, /) -> None:
        """``add_after(item, rate_limiter.when(item))``. Ports: rateLimitingType.AddRateLimited"""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: _T, /) -> None:
        """Reset ``item``'s backoff; the item stays queued if it is. Ports: rateLimitingType.Forget"""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: _T, /) -> int:
        """``rate_limiter.num_requeues(item)``. Ports: rateLimitingType.NumRequeues"""
        return self.rate_limiter.num_requeues(item)
