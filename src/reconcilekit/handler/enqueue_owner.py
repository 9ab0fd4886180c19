"""`enqueue_request_for_owner`: reconcile the owner named in an object's ownerReferences.

Ports: sigs.k8s.io/controller-runtime/pkg/handler/enqueue_owner.go
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from reconcilekit.client.interfaces import GroupVersionKind
from reconcilekit.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from reconcilekit.handler._priority import create_priority, enqueue, update_priority
from reconcilekit.handler.eventhandler import EventHandler, RequestQueue
from reconcilekit.reconcile import Request

__all__ = ["enqueue_request_for_owner"]

_log = structlog.get_logger(__name__)


class _EnqueueRequestForOwner:
    """Python only: the handler `enqueue_request_for_owner` returns."""

    def __init__(self, owner: GroupVersionKind, *, only_controller: bool, namespaced: bool) -> None:
        self._group = owner.group
        self._kind = owner.kind
        self._only_controller = only_controller
        self._namespaced = namespaced

    def create(self, event: CreateEvent, queue: RequestQueue, /) -> None:
        """Ports: enqueueRequestForOwner.Create"""
        enqueue(queue, sorted(self._owners(event.object)), create_priority(event))

    def update(self, event: UpdateEvent, queue: RequestQueue, /) -> None:
        """Owners of the old and of the new object, each once. Ports: enqueueRequestForOwner.Update"""
        owners = self._owners(event.object_old) | self._owners(event.object_new)
        enqueue(queue, sorted(owners), update_priority(event))

    def delete(self, event: DeleteEvent, queue: RequestQueue, /) -> None:
        """Ports: enqueueRequestForOwner.Delete"""
        enqueue(queue, sorted(self._owners(event.object)), 0)

    def generic(self, event: GenericEvent, queue: RequestQueue, /) -> None:
        """Ports: enqueueRequestForOwner.Generic"""
        enqueue(queue, sorted(self._owners(event.object)), 0)

    def _owners(self, obj: Mapping[str, Any] | None) -> set[Request]:
        """Requests for the owners of the owner kind among ``obj``'s ownerReferences.

        Ports: enqueueRequestForOwner.getOwnerReconcileRequest and getOwnersReferences
        """
        if not isinstance(obj, Mapping):
            return set()
        meta = obj.get("metadata") or {}
        refs: list[Mapping[str, Any]] = list(meta.get("ownerReferences") or ())
        if self._only_controller:
            controller = next((ref for ref in refs if ref.get("controller") is True), None)
            refs = [controller] if controller is not None else []
        namespace = str(meta.get("namespace") or "") if self._namespaced else ""
        requests: set[Request] = set()
        for ref in refs:
            api_version = ref.get("apiVersion")
            if not isinstance(api_version, str) or api_version.count("/") > 1:
                _log.error(
                    "could not parse the apiVersion of an owner reference",
                    api_version=api_version,
                    object=meta.get("name"),
                    namespace=meta.get("namespace"),
                )
                return set()
            group = api_version.rpartition("/")[0]
            if ref.get("kind") == self._kind and group == self._group:
                requests.add(Request(namespace, str(ref.get("name") or "")))
        return requests


def enqueue_request_for_owner(
    owner: GroupVersionKind,
    /,
    *,
    only_controller: bool = True,
    namespaced: bool = True,
) -> EventHandler:
    """A handler that enqueues the owners of the ``owner`` kind of each event's object.

    An owner reference matches when its apiVersion's group and its kind equal
    ``owner``'s; the version is ignored. For an update, the owners of the old
    and the new object are enqueued, each once. An unparsable apiVersion
    drops that object's requests (logged). On a priority queue, initial-list
    creates and resyncs go in at low priority.

    Args:
        owner: The owner kind.
        only_controller: Follow only the reference with ``controller: true``
            (the default, what ``owns()`` uses); ``False`` follows every matching one.
        namespaced: Whether the owner kind is namespaced; requests for a
            cluster-scoped owner have namespace ``""``, others the object's namespace.

    Differs: controller-runtime asks the REST mapper whether the owner is
    namespaced; here the caller says so (the builder reads it from the model).

    Ports: handler.EnqueueRequestForOwner (with OnlyControllerOwner)
    """
    return _EnqueueRequestForOwner(owner, only_controller=only_controller, namespaced=namespaced)
