"""`enqueue_requests_from_map_func`: reconcile whatever a function maps an object to.

Ports: sigs.k8s.io/controller-runtime/pkg/handler/enqueue_mapped.go
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from reconcilekit.client.interfaces import Object
from reconcilekit.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from reconcilekit.handler._priority import create_priority, enqueue, update_priority
from reconcilekit.handler.eventhandler import EventHandler, RequestQueue
from reconcilekit.reconcile import Request

__all__ = ["MapFunc", "enqueue_requests_from_map_func"]

MapFunc = Callable[[Object], Iterable[Request]]
"""Maps one (cached, read-only) object to the requests to enqueue. Ports: handler.MapFunc"""


class _EnqueueRequestsFromMapFunc:
    """Python only: the handler `enqueue_requests_from_map_func` returns."""

    def __init__(self, fn: MapFunc) -> None:
        self._fn = fn

    def create(self, event: CreateEvent, queue: RequestQueue, /) -> None:
        """Ports: enqueueRequestsFromMapFunc.Create"""
        self._map_and_enqueue(queue, create_priority(event), event.object)

    def update(self, event: UpdateEvent, queue: RequestQueue, /) -> None:
        """Maps the old and the new object. Ports: enqueueRequestsFromMapFunc.Update"""
        self._map_and_enqueue(queue, update_priority(event), event.object_old, event.object_new)

    def delete(self, event: DeleteEvent, queue: RequestQueue, /) -> None:
        """Ports: enqueueRequestsFromMapFunc.Delete"""
        self._map_and_enqueue(queue, 0, event.object)

    def generic(self, event: GenericEvent, queue: RequestQueue, /) -> None:
        """Ports: enqueueRequestsFromMapFunc.Generic"""
        self._map_and_enqueue(queue, 0, event.object)

    def _map_and_enqueue(self, queue: RequestQueue, priority: int, *objects: Object) -> None:
        """Ports: enqueueRequestsFromMapFunc.mapAndEnqueue"""
        requests: dict[Request, None] = {}
        for obj in objects:
            if isinstance(obj, Mapping):
                requests.update(dict.fromkeys(self._fn(obj)))
        enqueue(queue, requests, priority)


def enqueue_requests_from_map_func(fn: MapFunc, /) -> EventHandler:
    """A handler that enqueues the requests ``fn`` returns for each event's object.

    For an update ``fn`` is called on the old and on the new object; each
    request is enqueued once per event (at low priority for initial-list
    creates and resyncs on a priority queue). ``fn`` runs inside the informer's
    callback: keep it fast and never change the object it is given.

    Ports: handler.EnqueueRequestsFromMapFunc
    """
    return _EnqueueRequestsFromMapFunc(fn)
