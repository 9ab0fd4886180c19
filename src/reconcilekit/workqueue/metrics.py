"""The work queue's Prometheus metrics, with client-go's names, on reconcilekit's registry.

Every series carries the labels ``name`` and ``controller``, both the queue's
name, as controller-runtime's metrics provider sets them. A queue without a
name records nothing, as client-go's queues without a name do.

Ports: k8s.io/client-go/util/workqueue/metrics.go and
sigs.k8s.io/controller-runtime/pkg/metrics/workqueue.go
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from prometheus_client import Counter, Gauge, Histogram

from reconcilekit.metrics import REGISTRY
from reconcilekit.workqueue.clock import Clock

__all__ = [
    "ADDS",
    "DEPTH",
    "LATENCY",
    "LONGEST_RUNNING_PROCESSOR",
    "RETRIES",
    "UNFINISHED_WORK",
    "WORK_DURATION",
    "QueueMetrics",
]

_T = TypeVar("_T", bound=Hashable)

_LABELS = ("name", "controller")
_BUCKETS = tuple(10.0**exponent for exponent in range(-8, 4))
"""10 ns to 1000 s: exponential buckets, start 1e-8, factor 10, 12 buckets (client-go's)."""

DEPTH = Gauge("workqueue_depth", "Current depth of workqueue", _LABELS, registry=REGISTRY)
ADDS = Counter("workqueue_adds", "Total number of adds handled by workqueue", _LABELS, registry=REGISTRY)
LATENCY = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    _LABELS,
    buckets=_BUCKETS,
    registry=REGISTRY,
)
WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    _LABELS,
    buckets=_BUCKETS,
    registry=REGISTRY,
)
UNFINISHED_WORK = Gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. "
    "Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate "
    "at which this increases.",
    _LABELS,
    registry=REGISTRY,
)
LONGEST_RUNNING_PROCESSOR = Gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    _LABELS,
    registry=REGISTRY,
)
RETRIES = Counter("workqueue_retries", "Total number of retries handled by workqueue", _LABELS, registry=REGISTRY)


class QueueMetrics(Generic[_T]):
    """One queue's metrics: depth, adds, time in queue, time in processing, retries.

    The two in-progress gauges are computed when scraped, from the start times
    of the items being processed, so no timer task is needed.

    Ports: workqueue.queueMetrics (add, get, done, updateUnfinishedWork) and retryMetrics
    """

    def __init__(self, name: str, clock: Clock) -> None:
        self._clock = clock
        self._add_times: dict[_T, float] = {}
        self._processing_start_times: dict[_T, float] = {}
        self._depth = DEPTH.labels(name, name)
        self._adds = ADDS.labels(name, name)
        self._latency = LATENCY.labels(name, name)
        self._work_duration = WORK_DURATION.labels(name, name)
        self._retries = RETRIES.labels(name, name)
        ref = weakref.ref(self)
        UNFINISHED_WORK.labels(name, name).set_function(_measure(ref, _unfinished))
        LONGEST_RUNNING_PROCESSOR.labels(name, name).set_function(_measure(ref, _longest))

    def add(self, item: _T) -> None:
        """An item became dirty. Ports: queueMetrics.add"""
        self._adds.inc()
        self._depth.inc()
        self._add_times.setdefault(item, self._clock.monotonic())

    def get(self, item: _T) -> None:
        """An item was handed to a worker. Ports: queueMetrics.get"""
        now = self._clock.monotonic()
        self._depth.dec()
        self._processing_start_times[item] = now
        added = self._add_times.pop(item, None)
        if added is not None:
            self._latency.observe(now - added)

    def done(self, item: _T) -> None:
        """A worker finished an item. Ports: queueMetrics.done"""
        started = self._processing_start_times.pop(item, None)
        if started is not None:
            self._work_duration.observe(self._clock.monotonic() - started)

    def retry(self) -> None:
        """An add_after was asked for. Ports: retryMetrics.retry"""
        self._retries.inc()

    def in_progress(self) -> tuple[float, ...]:
        """Seconds each item being processed has been processed so far."""
        now = self._clock.monotonic()
        return tuple(now - started for started in tuple(self._processing_start_times.values()))


def _unfinished(durations: tuple[float, ...]) -> float:
    return sum(durations)


def _longest(durations: tuple[float, ...]) -> float:
    return max(durations, default=0.0)


def _measure(ref: weakref.ref[QueueMetrics[_T]], reduce: Callable[[tuple[float, ...]], float]) -> Callable[[], float]:
    """Python only: a scrape-time gauge function that does not keep the queue alive."""

    def measure() -> float:
        metrics = ref()
        return reduce(metrics.in_progress()) if metrics is not None else 0.0

    return measure
