"""`EnqueueRequestForObject`: reconcile the object the event is about.

Ports: sigs.k8s.io/controller-runtime/pkg/handler/enqueue.go
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from reconcilekit.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from reconcilekit.handler._priority import create_priority, enqueue, update_priority
from reconcilekit.handler.eventhandler import RequestQueue
from reconcilekit.reconcile import Request

__all__ = ["EnqueueRequestForObject", "request_for"]

_log = structlog.get_logger(__name__)


def request_for(obj: Mapping[str, Any]) -> Request:
    """The `Request` naming ``obj``: its namespace ("" if cluster-scoped) and name.

    Python only: the one place that reads an object's key for the handlers.
    """
    meta = obj.get("metadata") or {}
    return Request(str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class EnqueueRequestForObject:
    """Enqueues a request for the event's own object (for updates the new one, else the old one).

    An event without an object is dropped and logged. On a priority queue,
    initial-list creates and resyncs go in at low priority.

    Ports: handler.EnqueueRequestForObject
    """

    def create(self, event: CreateEvent, queue: RequestQueue, /) -> None:
        """Ports: EnqueueRequestForObject.Create"""
        self._add(event.object, queue, "create", create_priority(event))

    def update(self, event: UpdateEvent, queue: RequestQueue, /) -> None:
        """Ports: EnqueueRequestForObject.Update"""
        if isinstance(event.object_new, Mapping):
            enqueue(queue, [request_for(event.object_new)], update_priority(event))
        elif isinstance(event.object_old, Mapping):
            enqueue(queue, [request_for(event.object_old)], update_priority(event))
        else:
            _log.error("update event received with no metadata", handler="EnqueueRequestForObject")

    def delete(self, event: DeleteEvent, queue: RequestQueue, /) -> None:
        """Ports: EnqueueRequestForObject.Delete"""
        self._add(event.object, queue, "delete")

    def generic(self, event: GenericEvent, queue: RequestQueue, /) -> None:
        """Ports: EnqueueRequestForObject.Generic"""
        self._add(event.object, queue, "generic")

    @staticmethod
    def _add(obj: object, queue: RequestQueue, kind: str, priority: int = 0) -> None:
        """Python only: enqueue ``obj``'s request, or log that the event had no object."""
        if isinstance(obj, Mapping):
            enqueue(queue, [request_for(obj)], priority)
        else:
            _log.error(f"{kind} event received with no metadata", handler="EnqueueRequestForObject")
