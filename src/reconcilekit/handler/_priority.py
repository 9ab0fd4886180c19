"""The priority rules every built-in handler applies on a priority queue.

Initial-list creates and resyncs (updates with an unchanged resourceVersion)
go in at `LOW_PRIORITY`, so real changes overtake the start-up flood;
everything else at priority 0. On a queue without priorities this is a plain add.

Ports: sigs.k8s.io/controller-runtime/pkg/handler/eventhandler.go (WithLowPriorityWhenUnchanged)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reconcilekit.event import CreateEvent, UpdateEvent
from reconcilekit.handler.eventhandler import RequestQueue
from reconcilekit.reconcile import Request
from reconcilekit.workqueue.priority import LOW_PRIORITY, add_with_priority


def create_priority(event: CreateEvent) -> int:
    """`LOW_PRIORITY` for an object of the informer's initial list, else 0."""
    return LOW_PRIORITY if event.is_in_initial_list else 0


def update_priority(event: UpdateEvent) -> int:
    """`LOW_PRIORITY` when the resourceVersion did not change (a resync), else 0."""
    old, new = event.object_old, event.object_new
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return 0
    old_rv = (old.get("metadata") or {}).get("resourceVersion")
    new_rv = (new.get("metadata") or {}).get("resourceVersion")
    return LOW_PRIORITY if old_rv == new_rv else 0


def enqueue(queue: RequestQueue, requests: Iterable[Request], priority: int) -> None:
    """Add each request with ``priority`` (a plain add when it is 0)."""
    for request in requests:
        if priority:
            add_with_priority(queue, request, priority=priority)
        else:
            queue.add(request)
