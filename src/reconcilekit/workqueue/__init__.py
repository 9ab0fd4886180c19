"""Work queues: deduplicating, delaying and rate-limited queues of keys, and rate limiters.

`PriorityQueue` (controller-runtime's) is what controllers use by default;
`RateLimitingQueue` is client-go's.

Ports: k8s.io/client-go/util/workqueue and controller-runtime's pkg/controller/priorityqueue
"""

from reconcilekit.workqueue.clock import Clock, FakeClock, RealClock, TimerHandle
from reconcilekit.workqueue.delaying import DelayingQueue
from reconcilekit.workqueue.interfaces import DelayingInterface, Interface, RateLimiter, RateLimitingInterface
from reconcilekit.workqueue.priority import LOW_PRIORITY, PriorityQueue, add_with_priority
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
    "LOW_PRIORITY",
    "BucketRateLimiter",
    "Clock",
    "DelayingInterface",
    "DelayingQueue",
    "FakeClock",
    "Interface",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "PriorityQueue",
    "Queue",
    "RateLimiter",
    "RateLimitingInterface",
    "RateLimitingQueue",
    "RealClock",
    "TimerHandle",
    "add_with_priority",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]
