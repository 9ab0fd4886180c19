"""ARC's event filters: an owned object's update passes only when a field its owner's reconciler reads changed.

Create, delete and generic events always pass. "Reconciled metadata" is generation,
deletionTimestamp, finalizers, labels, annotations and ownerReferences; resourceVersion,
managedFields and the other timestamps never wake a reconciler.

Ports: controllers/actions.github.com/predicates.go
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from arc_controllers.api.v1alpha1.equality import semantic_equal
from reconcilekit.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent

__all__ = [
    "ProjectionPredicate",
    "autoscaling_runner_set_runner_set_predicate",
    "listener_pod_predicate",
    "listener_service_account_predicate",
]

_RECONCILED_METADATA = ("generation", "deletionTimestamp", "finalizers", "labels", "annotations", "ownerReferences")

Projection = Callable[[Mapping[str, Any]], Any]


def _reconciled_metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Python only: the metadata fields a reconciler reads."""
    meta = obj.get("metadata") or {}
    return {key: meta.get(key) for key in _RECONCILED_METADATA}


class ProjectionPredicate:
    """Passes an update when the projection of the old and the new object differ semantically.

    Ports: the projection predicates of predicates.go (updatePredicate)
    """

    def __init__(self, name: str, projection: Projection) -> None:
        """Python only: name the predicate and keep its projection."""
        self.name = name
        self._projection = projection

    def create(self, event: CreateEvent, /) -> bool:
        """Always passes.

        Ports: predicate.Funcs.Create (always true)
        """
        return True

    def delete(self, event: DeleteEvent, /) -> bool:
        """Always passes.

        Ports: predicate.Funcs.Delete (always true)
        """
        return True

    def generic(self, event: GenericEvent, /) -> bool:
        """Always passes.

        Ports: predicate.Funcs.Generic (always true)
        """
        return True

    def update(self, event: UpdateEvent, /) -> bool:
        """Passes when a projected field differs; objects that are not JSON mappings pass.

        Ports: the UpdateFunc of the projection predicates
        """
        old, new = event.object_old, event.object_new
        if not isinstance(old, Mapping) or not isinstance(new, Mapping):
            return True
        return not semantic_equal(self._projection(old), self._projection(new))


def _runner_set_projection(obj: Mapping[str, Any]) -> Any:
    """Python only: the EphemeralRunnerSet fields the AutoscalingRunnerSet reconciler reads."""
    status = obj.get("status") or {}
    return (
        _reconciled_metadata(obj),
        obj.get("spec"),
        status.get("phase"),
        status.get("appliedActionableRevision"),
    )


def _listener_pod_projection(obj: Mapping[str, Any]) -> Any:
    """Python only: the Pod fields the AutoscalingListener reconciler reads."""
    status = obj.get("status") or {}
    return (
        _reconciled_metadata(obj),
        obj.get("spec"),
        status.get("phase"),
        status.get("reason"),
        status.get("message"),
        status.get("containerStatuses"),
    )


def autoscaling_runner_set_runner_set_predicate() -> ProjectionPredicate:
    """ARS ← owned EphemeralRunnerSet: metadata, whole spec, ``status.phase``, ``status.appliedActionableRevision``.

    Not ``finishedRunnerCleanupPatchID``.

    Ports: the AutoscalingRunnerSet ← EphemeralRunnerSet predicate
    """
    return ProjectionPredicate("autoscalingrunnerset-ephemeralrunnerset", _runner_set_projection)


def listener_pod_predicate() -> ProjectionPredicate:
    """Listener ← owned Pod: metadata, whole spec, phase/reason/message, container statuses.

    Ports: the AutoscalingListener ← Pod predicate
    """
    return ProjectionPredicate("autoscalinglistener-pod", _listener_pod_projection)


def listener_service_account_predicate() -> ProjectionPredicate:
    """Listener ← owned ServiceAccount: reconciled metadata only.

    Ports: the AutoscalingListener ← ServiceAccount predicate
    """
    return ProjectionPredicate("autoscalinglistener-serviceaccount", _reconciled_metadata)
