"""Rate limiters: how long an item waits before its next try.

* `ItemExponentialFailureRateLimiter`: ``base * 2**failures``, capped
  (controller-runtime's default: 5 ms doubling up to 1000 s).
* `BucketRateLimiter`: one token bucket shared by every item (10 per second, burst 100).
* `MaxOfRateLimiter`: asks every limiter and waits for the longest.
* `ItemFastSlowRateLimiter`: a fast delay for the first attempts, then a slow one.
* `default_controller_rate_limiter`: max of the exponential and the bucket.

Ports: k8s.io/client-go/util/workqueue/default_rate_limiters.go
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

from reconcilekit.workqueue.clock import Clock, RealClock
from reconcilekit.workqueue.interfaces import RateLimiter

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]

_T = TypeVar("_T", bound=Hashable)


class ItemExponentialFailureRateLimiter(Generic[_T]):
    """Per item: ``base_delay * 2**n`` seconds where n counts the item's failures, capped at ``max_delay``.

    With 5 ms and 1000 s: 0.005, 0.01, 0.02, 0.04, ... and from the 19th
    failure on (2**18 * 5 ms = 1310.72 s) always 1000 s.

    Ports: workqueue.TypedItemExponentialFailureRateLimiter
    """

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        """Args: base_delay, max_delay: seconds; ``base_delay > 0`` and ``max_delay >= base_delay``."""
        if base_delay <= 0 or max_delay < base_delay:
            raise ValueError(f"need 0 < base_delay <= max_delay, got {base_delay} and {max_delay}")
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._failures: dict[_T, int] = {}

    def when(self, item: _T, /) -> float:
        """The delay for ``item``'s next try in seconds; counts one more failure. Ports: When"""
        exponent = self._failures.get(item, 0)
        self._failures[item] = exponent + 1
        if exponent >= 1024:  # 2**1024 overflows a float; long past any sane max_delay anyway
            return self._max_delay
        return min(self._base_delay * 2.0**exponent, self._max_delay)

    def num_requeues(self, item: _T, /) -> int:
        """Failures of ``item`` since it was last forgotten. Ports: NumRequeues"""
        return self._failures.get(item, 0)

    def forget(self, item: _T, /) -> None:
        """Reset ``item``'s failures. Ports: Forget"""
        self._failures.pop(item, None)


class BucketRateLimiter(Generic[_T]):
    """One token bucket for every item: ``qps`` tokens a second, at most ``burst`` saved up.

    `when` takes a token now and returns how long until that token exists
    (``0`` while the bucket has tokens). `forget` does nothing and
    `num_requeues` is always 0.

    Ports: workqueue.TypedBucketRateLimiter over golang.org/x/time/rate.Limiter.Reserve
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        """Args: qps: tokens per second (> 0); burst: bucket size (>= 1); clock: time source."""
        if qps <= 0 or burst < 1:
            raise ValueError(f"need qps > 0 and burst >= 1, got {qps} and {burst}")
        self._qps = qps
        self._burst = burst
        self._clock: Clock = clock or RealClock()
        self._tokens = float(burst)
        self._last: float | None = None

    def when(self, item: _T, /) -> float:
        """Take one token; return the seconds until it is available. Ports: TypedBucketRateLimiter.When"""
        now = self._clock.monotonic()
        if self._last is not None:
            self._tokens = min(float(self._burst), self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    def num_requeues(self, item: _T, /) -> int:
        """Always 0. Ports: TypedBucketRateLimiter.NumRequeues"""
        return 0

    def forget(self, item: _T, /) -> None:
        """Nothing to forget. Ports: TypedBucketRateLimiter.Forget"""


class ItemFastSlowRateLimiter(Generic[_T]):
    """Per item: ``fast_delay`` for the first ``max_fast_attempts`` tries, ``slow_delay`` after.

    Ports: workqueue.TypedItemFastSlowRateLimiter
    """

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        """Args: fast_delay, slow_delay: seconds; max_fast_attempts: tries at the fast delay."""
        self._fast_delay = fast_delay
        self._slow_delay = slow_delay
        self._max_fast_attempts = max_fast_attempts
        self._failures: dict[_T, int] = {}

    def when(self, item: _T, /) -> float:
        """The delay for ``item``'s next try; counts one more failure. Ports: When"""
        failures = self._failures.get(item, 0) + 1
        self._failures[item] = failures
        return self._fast_delay if failures <= self._max_fast_attempts else self._slow_delay

    def num_requeues(self, item: _T, /) -> int:
        """Failures of ``item`` since it was last forgotten. Ports: NumRequeues"""
        return self._failures.get(item, 0)

    def forget(self, item: _T, /) -> None:
        """Reset ``item``'s failures. Ports: Forget"""
        self._failures.pop(item, None)


class MaxOfRateLimiter(Generic[_T]):
    """The longest delay of several limiters; every limiter is asked every time.

    So a bucket among them spends a token on each `when`, even when another
    limiter's delay wins.

    Ports: workqueue.TypedMaxOfRateLimiter
    """

    def __init__(self, *limiters: RateLimiter[_T]) -> None:
        """Args: limiters: at least one."""
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters: Sequence[RateLimiter[_T]] = limiters

    def when(self, item: _T, /) -> float:
        """The maximum of every limiter's delay. Ports: When"""
        return max([limiter.when(item) for limiter in self._limiters])

    def num_requeues(self, item: _T, /) -> int:
        """The maximum of every limiter's count. Ports: NumRequeues"""
        return max(limiter.num_requeues(item) for limiter in self._limiters)

    def forget(self, item: _T, /) -> None:
        """Forget ``item`` in every limiter. Ports: Forget"""
        for limiter in self._limiters:
            limiter.forget(item)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOfRateLimiter[_T]:
    """Per-item exponential (5 ms to 1000 s) together with a 10 qps, burst 100 bucket.

    The limiter of a controller that uses the plain rate-limiting queue.

    Ports: workqueue.DefaultTypedControllerRateLimiter
    """
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0), BucketRateLimiter(10.0, 100, clock=clock))


def default_item_based_rate_limiter() -> ItemExponentialFailureRateLimiter[_T]:
    """Per-item exponential, 5 ms to 1000 s: controller-runtime's limiter for its priority queue.

    Ports: the limiter of controller-runtime's controller.NewTypedUnmanaged with the priority queue
    """
    return ItemExponentialFailureRateLimiter(0.005, 1000.0)
