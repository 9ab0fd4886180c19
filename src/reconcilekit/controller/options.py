"""A controller's options, with controller-runtime's defaults.

Ports: sigs.k8s.io/controller-runtime/pkg/controller/controller.go (TypedOptions, DefaultFromConfig)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reconcilekit.reconcile import Request
from reconcilekit.workqueue.clock import Clock
from reconcilekit.workqueue.interfaces import RateLimiter, RateLimitingInterface

__all__ = ["NewQueueFunc", "Options"]

NewQueueFunc = Callable[[str, RateLimiter[Request]], RateLimitingInterface[Request]]
"""Builds a controller's queue from its name and rate limiter. Ports: TypedOptions.NewQueue"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """How a controller runs: workers, timeouts, rate limiting, leader election.

    Ports: controller.TypedOptions
    """

    max_concurrent_reconciles: int = 1
    """Workers, i.e. how many different requests are reconciled at once (never one key twice)."""

    max_yielded_reconciles: int = 0
    """How many reconciles may wait inside `reconcilekit.controller.yield_worker` at once without
    holding a worker, on top of the ``max_concurrent_reconciles`` that hold one.

    A yielded reconcile's request stays in flight (its key is not handed out again). ``0``, the
    default, makes `yield_worker` a no-op: every reconcile keeps its worker throughout, as in
    controller-runtime. Python only.
    """

    cache_sync_timeout: float = 120.0
    """Seconds to wait for every source to sync before the start fails."""

    recover_panic: bool = True
    """Turn a reconcile's non-`Exception` `BaseException` (a "panic") into an error and requeue.

    ``False`` re-raises it, which stops the controller (and the manager).
    """

    need_leader_election: bool = True
    """Run only while the manager holds the leader Lease."""

    use_priority_queue: bool = True
    """Use controller-runtime's `PriorityQueue` (the default); ``False`` uses client-go's `RateLimitingQueue`."""

    rate_limiter: RateLimiter[Request] | None = None
    """Backoff of failed requests. ``None`` means per-item 5 ms doubling to 1000 s with the
    priority queue, and `default_controller_rate_limiter` (that, together with a 10 qps /
    burst 100 bucket) with the client-go queue."""

    new_queue: NewQueueFunc | None = None
    """Builds the queue at start; ``None`` means a queue named after the controller (see `use_priority_queue`)."""

    reconciliation_timeout: float | None = None
    """Seconds one reconcile may take before it is cancelled (and requeued); ``None`` means no limit."""

    skip_name_validation: bool = False
    """Allow a second controller with the same name (their metrics then mix)."""

    log_values: Mapping[str, str] | None = None
    """Python only: extra keys bound into the log context of every reconcile (the builder adds the kind)."""

    clock: Clock | None = None
    """Python only: the time source of the queue and of the metrics; the real clock by default."""

    error_traceback_interval: float = 60.0
    """Python only: seconds during which a repeated reconcile error is logged without its traceback.

    Errors are "the same" when their type, text and raising line are. The first
    ``reconciler error`` line of an error carries its traceback; its repeats within this
    many seconds (of `clock`) carry only ``error`` (the error's text), as every line does.
    ``0`` puts a traceback on every line. Formatting tracebacks is most of the CPU a
    controller spends on a request that keeps failing.
    """

    def __post_init__(self) -> None:
        if self.max_concurrent_reconciles < 1:
            raise ValueError(f"max_concurrent_reconciles must be at least 1, got {self.max_concurrent_reconciles}")
        if self.max_yielded_reconciles < 0:
            raise ValueError(f"max_yielded_reconciles must not be negative, got {self.max_yielded_reconciles}")
        if self.cache_sync_timeout <= 0:
            raise ValueError(f"cache_sync_timeout must be positive, got {self.cache_sync_timeout}")
        if self.reconciliation_timeout is not None and self.reconciliation_timeout <= 0:
            raise ValueError(f"reconciliation_timeout must be positive or None, got {self.reconciliation_timeout}")
        if self.error_traceback_interval < 0:
            raise ValueError(f"error_traceback_interval must be 0 or more, got {self.error_traceback_interval}")
