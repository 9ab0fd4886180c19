"""Sources: where a controller's events come from.

A source runs until cancelled (its owner, the controller, cancels it at stop)
and puts requests on the queue it is started with, through an event handler.
A *syncing* source can also say when it has delivered its initial state.

Ports: sigs.k8s.io/controller-runtime/pkg/source (source.go)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

import structlog

from reconcilekit.cache.interfaces import Informer, Informers
from reconcilekit.client.interfaces import GroupVersionKind
from reconcilekit.event import GenericEvent
from reconcilekit.handler.eventhandler import EventHandler, RequestQueue
from reconcilekit.predicate import Predicate
from reconcilekit.source._event_handler import EventHandlerAdapter
from reconcilekit.source._kind import Kind
from reconcilekit.workqueue.clock import Clock, RealClock

__all__ = ["Source", "SyncingSource", "channel", "func", "informer", "kind"]

_log = structlog.get_logger(__name__)


class Source(Protocol):
    """**Protocol:** produces requests for a controller.

    Differs: upstream's Start returns at once; here ``start`` runs until
    cancelled, so the controller owns whatever the source runs.

    Ports: source.Source
    """

    async def start(self, queue: RequestQueue, /) -> None:
        """Put requests on ``queue`` until cancelled."""
        ...


@runtime_checkable
class SyncingSource(Source, Protocol):
    """**Protocol:** a source that can say when its initial state is on the queue.

    Ports: source.SyncingSource
    """

    async def wait_for_sync(self) -> None:
        """Return once every initial event was handled; the caller bounds the wait."""
        ...


def kind(
    cache: Informers,
    gvk: GroupVersionKind,
    handler: EventHandler,
    *predicates: Predicate,
    clock: Clock | None = None,
) -> SyncingSource:
    """Events of the kind ``gvk`` from ``cache``'s shared informer, filtered by ``predicates`` in order.

    Ports: source.Kind
    """
    return Kind(cache, gvk, handler, predicates, clock=clock)


class _Informer:
    """Python only: the value `informer` returns."""

    def __init__(
        self, informer: Informer, handler: EventHandler, predicates: Sequence[Predicate], clock: Clock
    ) -> None:
        self._informer = informer
        self._handler = handler
        self._predicates = tuple(predicates)
        self._clock = clock
        self._registered = asyncio.Event()
        self._has_synced: Callable[[], bool] = lambda: False

    async def start(self, queue: RequestQueue, /) -> None:
        """Ports: Informer.Start"""
        registration = self._informer.add_event_handler(EventHandlerAdapter(self._handler, self._predicates, queue))
        self._has_synced = registration.has_synced
        self._registered.set()
        try:
            await asyncio.Event().wait()
        finally:
            self._informer.remove_event_handler(registration)

    async def wait_for_sync(self) -> None:
        """Ports: Informer.WaitForSync"""
        await self._registered.wait()
        while not self._has_synced():
            await self._clock.sleep(0.1)


def informer(
    informer: Informer, handler: EventHandler, *predicates: Predicate, clock: Clock | None = None
) -> SyncingSource:
    """Events from an informer you bring, filtered by ``predicates`` in order.

    Ports: source.Informer
    """
    return _Informer(informer, handler, predicates, clock or RealClock())


class _Channel:
    """Python only: the value `channel` returns."""

    def __init__(
        self, events: asyncio.Queue[GenericEvent], handler: EventHandler, predicates: Sequence[Predicate]
    ) -> None:
        self._events = events
        self._handler = handler
        self._predicates = tuple(predicates)

    async def start(self, queue: RequestQueue, /) -> None:
        """Ports: Channel.Start"""
        while True:
            event = await self._events.get()
            try:
                if not isinstance(event, GenericEvent) or not isinstance(event.object, dict):
                    _log.error("channel source dropped a value that is not a GenericEvent with an object")
                elif all(p.generic(event) for p in self._predicates):
                    self._handler.generic(event, queue)
            except Exception:
                _log.exception("generic event dropped: a predicate or the event handler failed")
            finally:
                self._events.task_done()


def channel(events: asyncio.Queue[GenericEvent], handler: EventHandler, *predicates: Predicate) -> Source:
    """Generic events put on ``events`` (by anything outside the cluster), filtered, to ``handler``.

    Differs: upstream fans one channel out to every controller it is given to,
    with a 1024-event buffer; here one source consumes the queue, so give each
    controller its own ``asyncio.Queue`` (and choose its ``maxsize``).

    Ports: source.Channel
    """
    return _Channel(events, handler, predicates)


class _Func:
    """Python only: the value `func` returns."""

    def __init__(self, fn: Callable[[RequestQueue], Awaitable[None]]) -> None:
        self._fn = fn

    async def start(self, queue: RequestQueue, /) -> None:
        """Ports: Func.Start"""
        await self._fn(queue)


def func(fn: Callable[[RequestQueue], Awaitable[None]], /) -> Source:
    """A source from a coroutine function that adds to the queue; cancelled at stop.

    Ports: source.Func
    """
    return _Func(fn)
