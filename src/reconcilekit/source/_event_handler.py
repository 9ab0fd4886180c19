"""The bridge from an informer's callbacks to predicates and an event handler.

Ports: sigs.k8s.io/controller-runtime/pkg/internal/source/event_handler.go
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import structlog

from reconcilekit.cache.interfaces import DeletedFinalStateUnknown
from reconcilekit.client.interfaces import Object
from reconcilekit.event import CreateEvent, DeleteEvent, UpdateEvent
from reconcilekit.handler.eventhandler import EventHandler, RequestQueue
from reconcilekit.predicate import Predicate

_log = structlog.get_logger(__name__)


class EventHandlerAdapter:
    """A `ResourceEventHandler` that builds events, filters them and hands them to a handler.

    A tombstone becomes a delete with ``delete_state_unknown=True``; a tombstone
    without an object, or anything that is not an object, is dropped and logged.
    An exception from a predicate or the handler is logged and the event dropped,
    so one bad filter cannot stop the informer that calls us.

    Ports: internal/source.EventHandler (OnAdd, OnUpdate, OnDelete)
    """

    def __init__(self, handler: EventHandler, predicates: Sequence[Predicate], queue: RequestQueue) -> None:
        self._handler = handler
        self._predicates = tuple(predicates)
        self._queue = queue

    def on_add(self, obj: Object, is_in_initial_list: bool, /) -> None:
        """Ports: EventHandler.OnAdd"""
        if not isinstance(obj, Mapping):
            _log.error("OnAdd missing Object", object_type=type(obj).__name__)
            return
        event = CreateEvent(obj, is_in_initial_list)
        try:
            if all(p.create(event) for p in self._predicates):
                self._handler.create(event, self._queue)
        except Exception:
            _log.exception("create event dropped: a predicate or the event handler failed")

    def on_update(self, old: Object, new: Object, /) -> None:
        """Ports: EventHandler.OnUpdate"""
        if not isinstance(old, Mapping):
            _log.error("OnUpdate missing ObjectOld", object_type=type(old).__name__)
            return
        if not isinstance(new, Mapping):
            _log.error("OnUpdate missing ObjectNew", object_type=type(new).__name__)
            return
        event = UpdateEvent(old, new)
        try:
            if all(p.update(event) for p in self._predicates):
                self._handler.update(event, self._queue)
        except Exception:
            _log.exception("update event dropped: a predicate or the event handler failed")

    def on_delete(self, obj: Object | DeletedFinalStateUnknown, /) -> None:
        """Ports: EventHandler.OnDelete"""
        delete_state_unknown = False
        if isinstance(obj, DeletedFinalStateUnknown):
            if obj.obj is None:
                _log.error("tombstone without an object dropped", key=obj.key)
                return
            delete_state_unknown = True
            obj = obj.obj
        if not isinstance(obj, Mapping):
            _log.error("OnDelete missing Object", object_type=type(obj).__name__)
            return
        event = DeleteEvent(obj, delete_state_unknown)
        try:
            if all(p.delete(event) for p in self._predicates):
                self._handler.delete(event, self._queue)
        except Exception:
            _log.exception("delete event dropped: a predicate or the event handler failed")
