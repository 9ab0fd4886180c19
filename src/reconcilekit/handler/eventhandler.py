"""The event handler role and `Funcs`, a handler built from functions.

An event handler turns an event into zero or more `Request` values on the
controller's queue. It runs synchronously, inside the informer's callback, so
it must be quick and must not block; it may call ``add``, ``add_after`` and
``add_rate_limited`` on the queue it is given.

Ports: sigs.k8s.io/controller-runtime/pkg/handler/eventhandler.go
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from reconcilekit.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from reconcilekit.reconcile import Request
from reconcilekit.workqueue.interfaces import RateLimitingInterface

__all__ = ["EventHandler", "Funcs", "RequestQueue"]

RequestQueue = RateLimitingInterface[Request]
"""The queue a handler adds requests to: the controller's rate-limiting queue."""


class EventHandler(Protocol):
    """**Protocol:** maps events to requests on the controller's queue.

    Ports: handler.EventHandler
    """

    def create(self, event: CreateEvent, queue: RequestQueue, /) -> None:
        """Handle a create event."""
        ...

    def update(self, event: UpdateEvent, queue: RequestQueue, /) -> None:
        """Handle an update event."""
        ...

    def delete(self, event: DeleteEvent, queue: RequestQueue, /) -> None:
        """Handle a delete event."""
        ...

    def generic(self, event: GenericEvent, queue: RequestQueue, /) -> None:
        """Handle a generic event."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Funcs:
    """An event handler from functions; a missing function ignores its events.

    Example::

        Funcs(delete_func=lambda e, q: q.add(Request("ns", "cleanup")))

    Ports: handler.Funcs
    """

    create_func: Callable[[CreateEvent, RequestQueue], None] | None = None
    """Handles create events; ``None`` ignores them."""

    update_func: Callable[[UpdateEvent, RequestQueue], None] | None = None
    """Handles update events; ``None`` ignores them."""

    delete_func: Callable[[DeleteEvent, RequestQueue], None] | None = None
    """Handles delete events; ``None`` ignores them."""

    generic_func: Callable[[GenericEvent, RequestQueue], None] | None = None
    """Handles generic events; ``None`` ignores them."""

    def create(self, event: CreateEvent, queue: RequestQueue, /) -> None:
        """Ports: Funcs.Create"""
        if self.create_func is not None:
            self.create_func(event, queue)

    def update(self, event: UpdateEvent, queue: RequestQueue, /) -> None:
        """Ports: Funcs.Update"""
        if self.update_func is not None:
            self.update_func(event, queue)

    def delete(self, event: DeleteEvent, queue: RequestQueue, /) -> None:
        """Ports: Funcs.Delete"""
        if self.delete_func is not None:
            self.delete_func(event, queue)

    def generic(self, event: GenericEvent, queue: RequestQueue, /) -> None:
        """Ports: Funcs.Generic"""
        if self.generic_func is not None:
            self.generic_func(event, queue)
