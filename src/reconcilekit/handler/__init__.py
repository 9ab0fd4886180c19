"""Event handlers: turn events into requests on a controller's queue.

Ports: sigs.k8s.io/controller-runtime/pkg/handler
"""

from reconcilekit.handler.enqueue import EnqueueRequestForObject, request_for
from reconcilekit.handler.enqueue_mapped import MapFunc, enqueue_requests_from_map_func
from reconcilekit.handler.enqueue_owner import enqueue_request_for_owner
from reconcilekit.handler.eventhandler import EventHandler, Funcs, RequestQueue

__all__ = [
    "EnqueueRequestForObject",
    "EventHandler",
    "Funcs",
    "MapFunc",
    "RequestQueue",
    "enqueue_request_for_owner",
    "enqueue_requests_from_map_func",
    "request_for",
]
