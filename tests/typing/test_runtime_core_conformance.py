"""The work queue, controller, handlers, predicates and sources satisfy their Protocols.

Checked by mypy (``mypy tests/typing``), as controller-runtime checks with ``var _ Interface = &impl{}``;
pytest only imports it.
"""

from __future__ import annotations

from reconcilekit import predicate
from reconcilekit.cache.interfaces import ResourceEventHandler
from reconcilekit.controller import Controller
from reconcilekit.controller._controller import Controller as ControllerImpl
from reconcilekit.handler import EnqueueRequestForObject, EventHandler, Funcs
from reconcilekit.manager.interfaces import LeaderElectionRunnable, Runnable
from reconcilekit.reconcile import Request
from reconcilekit.source._event_handler import EventHandlerAdapter
from reconcilekit.source._kind import Kind
from reconcilekit.source.source import SyncingSource
from reconcilekit.workqueue import (
    BucketRateLimiter,
    Clock,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    PriorityQueue,
    RateLimiter,
    RateLimitingInterface,
    RateLimitingQueue,
    RealClock,
)


def _rate_limiting_queue(q: RateLimitingQueue[Request]) -> RateLimitingInterface[Request]:
    return q


def _priority_queue(q: PriorityQueue[Request]) -> RateLimitingInterface[Request]:
    return q


def _limiters(
    a: ItemExponentialFailureRateLimiter[Request], b: BucketRateLimiter[Request], c: MaxOfRateLimiter[Request]
) -> list[RateLimiter[Request]]:
    return [a, b, c]


def _clocks(a: RealClock, b: FakeClock) -> list[Clock]:
    return [a, b]


def _controller(c: ControllerImpl) -> tuple[Controller, Runnable, LeaderElectionRunnable]:
    return c, c, c


def _handlers(a: EnqueueRequestForObject, b: Funcs) -> list[EventHandler]:
    return [a, b]


def _predicates(
    a: predicate.Funcs, b: predicate.GenerationChangedPredicate, c: predicate.AnnotationChangedPredicate
) -> list[predicate.Predicate]:
    return [a, b, c]


def _adapter(a: EventHandlerAdapter) -> ResourceEventHandler:
    return a


def _kind(k: Kind) -> SyncingSource:
    return k


def test_conformance_module_imports() -> None:
    """The real check is mypy's; this keeps pytest honest about the imports."""
