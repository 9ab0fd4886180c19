"""Work queues: deduplicating, delaying and rate-limited queues of keys, and rate limiters.

Ports: k8s.io/client-go/util/workqueue
"""

from reconcilekit.workqueue.clock import Clock, FakeClock, RealClock, TimerHandle
from reconcilekit.workqueue.delaying import DelayingQueue
from reconcilekit.workqueue.interfaces import DelayingInterface, Interface, RateLimiter, RateLimitingInterface
from reconcilekit.workqueue.queue import Queue
from reconcilekit.workqueue.rate_limiter import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from reconcilekit.workqueue.rate_limiting import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "Clock",
    "DelayingInterface",
    "DelayingQueue",
    "FakeClock",
    "Interface",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "Queue",
    "RateLimiter",
    "RateLimitingInterface",
    "RateLimitingQueue",
    "RealClock",
    "TimerHandle",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]
