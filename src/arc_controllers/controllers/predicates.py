"""ARC's event filters: an owned object's update passes only when a field its owner's reconciler reads changed.

Create, delete and generic events always pass, and so does an update of an object of
another kind than the predicate reasons about. "Reconciled metadata" is generation,
deletionTimestamp, finalizers, labels, annotations and ownerReferences; resourceVersion,
managedFields and the other timestamps never wake a reconciler. Status scalars compare
with absent and the zero value alike (Go reads both as the zero value).

Ports: controllers/actions.github.com/predicates.go
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from arc_controllers.api.v1alpha1 import POD, Kind, objects
from arc_controllers.api.v1alpha1.equality import semantic_equal
from arc_controllers.controllers.runnerstates import pod_ready
from reconcilekit.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent

__all__ = [
    "ProjectionPredicate",
    "autoscaling_runner_set_runner_set_predicate",
    "ephemeral_runner_pod_predicate",
    "ephemeral_runner_set_runner_predicate",
    "listener_pod_predicate",
    "listener_service_account_predicate",
    "own_conditions_predicate",
]

_RECONCILED_METADATA = ("generation", "deletionTimestamp", "finalizers", "labels", "annotations", "ownerReferences")

Projection = Callable[[Mapping[str, Any]], Any]


def _reconciled_metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Python only: the metadata fields a reconciler reads."""
    meta = objects.meta(obj)
    return {key: meta.get(key) for key in _RECONCILED_METADATA}


class ProjectionPredicate:
    """Passes an update when the projection of the old and the new object differ semantically.

    Ports: the projection predicates of predicates.go (updatePredicate)
    """

    def __init__(self, name: str, projection: Projection, *, kind: str | None = None) -> None:
        """Python only: name the predicate, keep its projection and the kind it reasons about.

        Args:
            name: for logs and tests.
            projection: the fields the owning reconciler reads, as one comparable value.
            kind: the object kind the projection is written for; an update whose objects name
                another ``kind`` passes unfiltered (Go: the failed type assertion). Objects
                without a ``kind`` (list items may lack it) are taken to be of this kind.
        """
        self.name = name
        self._projection = projection
        self._kind = kind

    def _of_kind(self, obj: Mapping[str, Any]) -> bool:
        """Python only: the object is of the kind the projection reasons about (or names no kind)."""
        kind = obj.get("kind")
        return self._kind is None or not kind or kind == self._kind

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
        if not (self._of_kind(old) and self._of_kind(new)):
            return True
        return not semantic_equal(self._projection(old), self._projection(new))


def _runner_set_projection(obj: Mapping[str, Any]) -> Any:
    """Python only: the EphemeralRunnerSet fields the AutoscalingRunnerSet reconciler reads."""
    status = objects.status(obj)
    return (
        _reconciled_metadata(obj),
        obj.get("spec"),
        status.get("phase") or "",
        status.get("appliedActionableRevision") or 0,
    )


def _runner_projection(obj: Mapping[str, Any]) -> Any:
    """Python only: the EphemeralRunner fields the EphemeralRunnerSet reconciler reads."""
    status = objects.status(obj)
    return (
        _reconciled_metadata(obj),
        obj.get("spec"),
        status.get("phase") or "",
        status.get("runnerId") or 0,
        status.get("jobId") or "",
    )


def _runner_pod_projection(obj: Mapping[str, Any]) -> Any:
    """Python only: the Pod fields the EphemeralRunner reconciler reads (no labels, no spec)."""
    meta, status = objects.meta(obj), objects.status(obj)
    return (
        meta.get("uid") or "",
        meta.get("deletionTimestamp"),
        status.get("phase") or "",
        status.get("reason") or "",
        status.get("message") or "",
        status.get("containerStatuses"),
        status.get("initContainerStatuses"),
        pod_ready(obj),
    )


def _listener_pod_projection(obj: Mapping[str, Any]) -> Any:
    """Python only: the Pod fields the AutoscalingListener reconciler reads."""
    status = objects.status(obj)
    return (
        _reconciled_metadata(obj),
        obj.get("spec"),
        status.get("phase") or "",
        status.get("reason") or "",
        status.get("message") or "",
        status.get("containerStatuses"),
        _unschedulable(obj),
    )


def _unschedulable(obj: Mapping[str, Any]) -> str:
    """Python only: the reason of a ``PodScheduled=False`` condition, ``""`` when scheduled or not yet judged.

    Beyond: issue 19 rule 4: an unschedulable listener pod changes only this condition; the
    listener reconciler reads it to say the pod cannot start.
    """
    for condition in objects.status(obj).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("reason") or "Unschedulable")
    return ""


def autoscaling_runner_set_runner_set_predicate() -> ProjectionPredicate:
    """ARS ← owned EphemeralRunnerSet: metadata, whole spec, ``status.phase``, ``status.appliedActionableRevision``.

    Not ``finishedRunnerCleanupPatchID``.

    Ports: autoscalingRunnerSetOwnedEphemeralRunnerSetPredicate
    """
    return ProjectionPredicate(
        "autoscalingrunnerset-ephemeralrunnerset", _runner_set_projection, kind=Kind.EPHEMERAL_RUNNER_SET
    )


def ephemeral_runner_set_runner_predicate() -> ProjectionPredicate:
    """ERS ← owned EphemeralRunner: metadata, whole spec, ``status.phase``, ``status.runnerId``, ``status.jobId``.

    Not ready, failures, reason, message or the other job fields the listener writes.

    Ports: ephemeralRunnerSetOwnedEphemeralRunnerPredicate
    """
    return ProjectionPredicate("ephemeralrunnerset-ephemeralrunner", _runner_projection, kind=Kind.EPHEMERAL_RUNNER)


def ephemeral_runner_pod_predicate() -> ProjectionPredicate:
    """ER ← owned Pod: UID, deletion, phase/reason/message, (init) container statuses, computed Ready.

    Not labels, IPs, node, start time, other conditions, nor a Ready transition time alone.

    Ports: ephemeralRunnerOwnedPodPredicate
    """
    return ProjectionPredicate("ephemeralrunner-pod", _runner_pod_projection, kind=POD.kind)


def listener_pod_predicate() -> ProjectionPredicate:
    """Listener ← owned Pod: metadata, whole spec, phase/reason/message, container statuses,
    and (beyond Go) a ``PodScheduled=False`` reason.

    Ports: autoscalingListenerOwnedPodPredicate
    """
    return ProjectionPredicate("autoscalinglistener-pod", _listener_pod_projection, kind=POD.kind)


def listener_service_account_predicate() -> ProjectionPredicate:
    """Listener ← owned ServiceAccount: reconciled metadata only.

    Ports: autoscalingListenerOwnedServiceAccountPredicate
    """
    return ProjectionPredicate("autoscalinglistener-serviceaccount", _reconciled_metadata, kind="ServiceAccount")


_VOLATILE_METADATA = ("resourceVersion", "managedFields")


def _without_own_conditions(obj: Mapping[str, Any]) -> Any:
    """Python only: the object minus ``status.conditions``, ``resourceVersion`` and ``managedFields``."""
    meta = {key: value for key, value in objects.meta(obj).items() if key not in _VOLATILE_METADATA}
    status = {key: value for key, value in objects.status(obj).items() if key != "conditions"}
    rest = {key: value for key, value in obj.items() if key not in ("metadata", "status")}
    return (meta, status, rest)


def own_conditions_predicate(kind: str) -> ProjectionPredicate:
    """A reconciled kind's own updates: pass unless only ``status.conditions`` changed.

    Only the reconciler of ``kind`` writes these conditions and none of its decisions reads
    them, so such an update is its own echo: passing it would enqueue the object at once and
    cut the work queue's backoff short after a failed pass that wrote its cause. Every other
    change (spec, metadata, phase) passes as with Go's ``ResourceVersionChangedPredicate``.

    Beyond: ARC #2633: the Ready condition is ours (Go ARC writes none); its write must not
    turn a failing reconcile into a hot loop.
    """
    return ProjectionPredicate(f"{kind.lower()}-own-conditions", _without_own_conditions, kind=kind)
