"""Unit tests for the owned-object projection predicates.

Upstream: controllers/actions.github.com/predicates_test.go (at 142132e5). Each table row is
one Go subtest: a field the owning reconciler reads wakes it, the noise it never reads does not.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from arc_controllers import constants
from arc_controllers.api.v1alpha1.ephemeralrunner import EphemeralRunnerStatus
from arc_controllers.api.v1alpha1.ephemeralrunnerset import EphemeralRunnerSetStatus
from arc_controllers.controllers.predicates import (
    ProjectionPredicate,
    autoscaling_runner_set_runner_set_predicate,
    ephemeral_runner_pod_predicate,
    ephemeral_runner_set_runner_predicate,
    listener_pod_predicate,
    listener_service_account_predicate,
    own_conditions_predicate,
)
from reconcilekit.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent

Mutation = Callable[[dict[str, Any]], None]

NOW = "2026-06-01T10:00:00Z"
AN_HOUR_LATER = "2026-06-01T11:00:00Z"


def passes(predicate: ProjectionPredicate, old: dict[str, Any], new: dict[str, Any]) -> bool:
    return predicate.update(UpdateEvent(object_old=old, object_new=new))


def mutated(base: Callable[[], dict[str, Any]], mutate: Mutation) -> tuple[dict[str, Any], dict[str, Any]]:
    old, new = base(), base()
    mutate(new)
    return old, new


def _set(path: str, value: Any) -> Mutation:
    """A mutation that sets the dotted ``path`` (list indexes as numbers) to ``value``."""

    def mutate(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = obj
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target.setdefault(part, {})
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return mutate


def runner_set() -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {
            "name": "runner-set",
            "namespace": "default",
            "generation": 1,
            "labels": {"app": "runner"},
            "annotations": {constants.ANNOTATION_KEY_PATCH_ID: "1"},
            "finalizers": ["finalizer"],
        },
        "spec": {"replicas": 2, "patchID": 3, "actionableRevision": 4, "ephemeralRunnerSpec": {}},
        "status": {"phase": "Running"},
    }


# Upstream: TestAutoscalingRunnerSetOwnedEphemeralRunnerSetPredicate
@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(_set("spec.replicas", 5), id="replicas"),
        pytest.param(_set("spec.patchID", 9), id="patch id"),
        pytest.param(_set("spec.actionableRevision", 7), id="actionable revision"),
        pytest.param(
            _set("spec.ephemeralRunnerSpec.githubConfigUrl", "https://github.com/org"), id="ephemeral runner spec"
        ),
        pytest.param(_set("spec.ephemeralRunnerMetadata", {"labels": {"a": "b"}}), id="ephemeral runner meta"),
        pytest.param(_set("metadata.labels.app", "changed"), id="labels"),
        pytest.param(_set(f"metadata.annotations.{constants.ANNOTATION_KEY_PATCH_ID}", "2"), id="annotations"),
        pytest.param(_set("metadata.finalizers", None), id="finalizers"),
        pytest.param(_set("metadata.deletionTimestamp", NOW), id="deletion timestamp"),
        pytest.param(_set("metadata.generation", 2), id="generation"),
        pytest.param(_set("metadata.ownerReferences", [{"name": "owner"}]), id="owner references"),
        pytest.param(_set("status.phase", "Outdated"), id="phase"),
        pytest.param(_set("status.appliedActionableRevision", 9), id="applied actionable revision"),
    ],
)
def test_autoscaling_runner_set_owned_runner_set_predicate_reconciles_on(mutate: Mutation) -> None:
    """Every EphemeralRunnerSet field the AutoscalingRunnerSet reconciler reads wakes it."""
    assert passes(autoscaling_runner_set_runner_set_predicate(), *mutated(runner_set, mutate))


# Upstream: TestAutoscalingRunnerSetOwnedEphemeralRunnerSetPredicate ("ignores the finished runner cleanup patch id")
def test_autoscaling_runner_set_owned_runner_set_predicate_ignores_cleanup_patch_id() -> None:
    """The finished-runner cleanup marker, rewritten for every patch ID, never wakes the scale set."""
    old, new = runner_set(), runner_set()
    new["status"]["finishedRunnerCleanupPatchID"] = 3
    new["metadata"]["resourceVersion"] = "2"
    assert not passes(autoscaling_runner_set_runner_set_predicate(), old, new)


def test_runner_set_predicate_treats_absent_status_scalars_as_zero() -> None:
    """Python only: an absent phase or revision equals the Go zero value, as Go reads both alike."""
    old, new = runner_set(), runner_set()
    old["status"] = {}
    new["status"] = {"phase": "", "appliedActionableRevision": 0}
    assert not passes(autoscaling_runner_set_runner_set_predicate(), old, new)


def runner() -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {
            "name": "runner",
            "namespace": "default",
            "generation": 1,
            "annotations": {
                constants.ANNOTATION_KEY_PATCH_ID: "1",
                constants.ANNOTATION_KEY_ACTIONABLE_REVISION: "1",
            },
            "finalizers": ["finalizer"],
        },
        "spec": {},
        "status": {"phase": "Running", "runnerId": 42},
    }


# Upstream: TestEphemeralRunnerSetOwnedEphemeralRunnerPredicate
@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(_set("status.phase", "Succeeded"), id="phase"),
        pytest.param(_set("status.runnerId", 43), id="runner id"),
        pytest.param(_set("status.jobId", "job"), id="job id"),
        pytest.param(_set(f"metadata.annotations.{constants.ANNOTATION_KEY_PATCH_ID}", "2"), id="patch id annotation"),
        pytest.param(
            _set(f"metadata.annotations.{constants.ANNOTATION_KEY_ACTIONABLE_REVISION}", "2"), id="actionable revision"
        ),
        pytest.param(_set("metadata.labels", {"a": "b"}), id="labels"),
        pytest.param(_set("metadata.finalizers", None), id="finalizers"),
        pytest.param(_set("metadata.deletionTimestamp", NOW), id="deletion timestamp"),
        pytest.param(_set("metadata.generation", 2), id="generation"),
        pytest.param(_set("spec.githubConfigUrl", "https://github.com/org"), id="spec"),
    ],
)
def test_runner_set_owned_runner_predicate_reconciles_on(mutate: Mutation) -> None:
    """Every EphemeralRunner field the EphemeralRunnerSet reconciler reads wakes it."""
    assert passes(ephemeral_runner_set_runner_predicate(), *mutated(runner, mutate))


# Upstream: TestEphemeralRunnerSetOwnedEphemeralRunnerPredicate ("ignores runner status the runner set never reads")
def test_runner_set_owned_runner_predicate_ignores_unread_status() -> None:
    """Readiness, failures, reason, message and the listener's job details never wake the runner set.

    The four job timing fields (jobEventName, jobQueuedAt, jobScaleSetAssignedAt,
    jobRunnerAssignedAt) came after 142132e5 with the listener's job-started patch; they
    are listener-written job details like the others, so they are ignored too.
    """
    old, new = runner(), runner()
    new["status"].update(
        ready=True,
        reason="reason",
        message="message",
        runnerName="runner-name",
        failures={"pod": NOW},
        jobRequestId=7,
        jobDisplayName="display",
        jobRepositoryName="org/repo",
        jobWorkflowRef="ref",
        workflowRunId=12,
        jobEventName="push",
        jobQueuedAt=NOW,
        jobScaleSetAssignedAt=NOW,
        jobRunnerAssignedAt=NOW,
    )
    new["metadata"]["resourceVersion"] = "2"
    assert not passes(ephemeral_runner_set_runner_predicate(), old, new)


def runner_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "runner", "namespace": "default", "uid": "uid"},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": NOW}],
            "containerStatuses": [{"name": "runner", "ready": True, "state": {"running": {}}}],
            "initContainerStatuses": [{"name": "init", "state": {"terminated": {"exitCode": 0}}}],
        },
    }


# Upstream: TestEphemeralRunnerOwnedPodPredicate
@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(_set("status.phase", "Failed"), id="phase"),
        pytest.param(_set("status.reason", "Evicted"), id="reason"),
        pytest.param(_set("status.message", "evicted"), id="message"),
        pytest.param(_set("metadata.uid", "other"), id="uid"),
        pytest.param(_set("metadata.deletionTimestamp", NOW), id="deletion timestamp"),
        pytest.param(
            _set("status.containerStatuses.0.state", {"terminated": {"exitCode": 1}}), id="runner container terminated"
        ),
        pytest.param(
            _set("status.containerStatuses.0.state", {"terminated": {"exitCode": 7}}), id="runner container exit code"
        ),
        pytest.param(_set("status.containerStatuses.0.ready", False), id="runner container readiness"),
        pytest.param(
            _set("status.initContainerStatuses.0.state", {"terminated": {"exitCode": 1}}), id="init container status"
        ),
        pytest.param(_set("status.conditions.0.status", "False"), id="ready condition"),
    ],
)
def test_runner_owned_pod_predicate_reconciles_on(mutate: Mutation) -> None:
    """Every pod field the EphemeralRunner reconciler branches on wakes it."""
    assert passes(ephemeral_runner_pod_predicate(), *mutated(runner_pod, mutate))


# Upstream: TestEphemeralRunnerOwnedPodPredicate ("ignores pod noise the runner never reads")
def test_runner_owned_pod_predicate_ignores_noise() -> None:
    """Labels, IPs, start time and conditions other than Ready never wake the runner."""
    old, new = runner_pod(), runner_pod()
    new["metadata"]["resourceVersion"] = "2"
    new["metadata"]["labels"] = {"a": "b"}
    new["status"].update(podIP="10.0.0.1", podIPs=[{"ip": "10.0.0.1"}], hostIP="10.0.0.2", startTime=NOW)
    new["status"]["conditions"] += [
        {"type": "PodScheduled", "status": "True"},
        {"type": "ContainersReady", "status": "True"},
    ]
    assert not passes(ephemeral_runner_pod_predicate(), old, new)


# Upstream: TestEphemeralRunnerOwnedPodPredicate ("ready condition transition time alone does not reconcile")
def test_runner_owned_pod_predicate_ignores_ready_transition_time_alone() -> None:
    """A later Ready transition time with the same verdict does not wake the runner."""
    old, new = runner_pod(), runner_pod()
    new["status"]["conditions"][0]["lastTransitionTime"] = AN_HOUR_LATER
    assert not passes(ephemeral_runner_pod_predicate(), old, new)


def test_runner_owned_pod_predicate_reads_the_latest_ready_condition() -> None:
    """Python only: a newer Ready=False condition after an older Ready=True flips the computed readiness."""
    old, new = runner_pod(), runner_pod()
    new["status"]["conditions"].append({"type": "Ready", "status": "False", "lastTransitionTime": AN_HOUR_LATER})
    assert passes(ephemeral_runner_pod_predicate(), old, new)
    older = runner_pod()
    older["status"]["conditions"].append(
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    )
    assert not passes(ephemeral_runner_pod_predicate(), old, older)


def listener_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "listener",
            "namespace": "default",
            "generation": 1,
            "labels": {"app": "listener"},
            "annotations": {constants.ANNOTATION_KEY_LISTENER_CONFIG_RESOURCE_VERSION: "1"},
        },
        "spec": {"serviceAccountName": "listener", "containers": [{"name": "listener", "image": "listener:1"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "listener", "state": {"running": {}}}]},
    }


# Upstream: TestAutoscalingListenerOwnedPodPredicate
@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(_set("status.phase", "Failed"), id="phase"),
        pytest.param(_set("status.reason", "Evicted"), id="reason"),
        pytest.param(_set("status.message", "evicted"), id="message"),
        pytest.param(_set("metadata.labels.app", "changed"), id="labels"),
        pytest.param(
            _set(f"metadata.annotations.{constants.ANNOTATION_KEY_LISTENER_CONFIG_RESOURCE_VERSION}", "2"),
            id="listener config resource version",
        ),
        pytest.param(_set("metadata.deletionTimestamp", NOW), id="deletion timestamp"),
        pytest.param(_set("metadata.generation", 2), id="generation"),
        pytest.param(_set("metadata.ownerReferences", [{"name": "owner"}]), id="owner references"),
        pytest.param(_set("metadata.finalizers", ["finalizer"]), id="finalizers"),
        pytest.param(_set("spec.containers.0.image", "listener:2"), id="image"),
        pytest.param(_set("spec.containers.0.ports", [{"containerPort": 8080}]), id="container ports"),
        pytest.param(_set("spec.serviceAccountName", "other"), id="service account name"),
        pytest.param(
            _set("status.containerStatuses.0.state", {"terminated": {"exitCode": 1}}),
            id="listener container terminated",
        ),
    ],
)
def test_listener_owned_pod_predicate_reconciles_on(mutate: Mutation) -> None:
    """Every listener pod field the AutoscalingListener reconciler branches on wakes it."""
    assert passes(listener_pod_predicate(), *mutated(listener_pod, mutate))


# Upstream: TestAutoscalingListenerOwnedPodPredicate ("ignores pod noise the listener never reads")
def test_listener_owned_pod_predicate_ignores_noise() -> None:
    """IPs, start time, node nomination, QoS class, conditions and init container statuses never wake it."""
    old, new = listener_pod(), listener_pod()
    new["metadata"]["resourceVersion"] = "2"
    new["status"].update(
        podIP="10.0.0.1",
        podIPs=[{"ip": "10.0.0.1"}],
        hostIP="10.0.0.2",
        startTime=NOW,
        nominatedNodeName="node",
        qosClass="BestEffort",
        conditions=[{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
        initContainerStatuses=[{"name": "init", "state": {"terminated": {"exitCode": 0}}}],
    )
    assert not passes(listener_pod_predicate(), old, new)


def service_account() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": "listener",
            "namespace": "default",
            "generation": 1,
            "labels": {"app": "listener"},
            "annotations": {"annotation": "1"},
        },
    }


# Upstream: TestAutoscalingListenerOwnedServiceAccountPredicate
@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(_set("metadata.labels.app", "changed"), id="labels"),
        pytest.param(_set("metadata.annotations.annotation", "2"), id="annotations"),
        pytest.param(_set("metadata.deletionTimestamp", NOW), id="deletion timestamp"),
        pytest.param(_set("metadata.finalizers", ["finalizer"]), id="finalizers"),
        pytest.param(_set("metadata.ownerReferences", [{"name": "owner"}]), id="owner references"),
    ],
)
def test_listener_owned_service_account_predicate_reconciles_on(mutate: Mutation) -> None:
    """The labels and annotations the listener merges back, and the lifecycle metadata, wake it."""
    assert passes(listener_service_account_predicate(), *mutated(service_account, mutate))


# Upstream: TestAutoscalingListenerOwnedServiceAccountPredicate
# ("ignores service account noise the listener never reads")
def test_listener_owned_service_account_predicate_ignores_noise() -> None:
    """Mounted secrets, image pull secrets and the automount flag never wake the listener."""
    old, new = service_account(), service_account()
    new["metadata"]["resourceVersion"] = "2"
    new.update(
        secrets=[{"name": "listener-token"}], imagePullSecrets=[{"name": "pull"}], automountServiceAccountToken=True
    )
    assert not passes(listener_service_account_predicate(), old, new)


ALL_PREDICATES = [
    pytest.param(autoscaling_runner_set_runner_set_predicate, "Pod", id="runner set"),
    pytest.param(ephemeral_runner_set_runner_predicate, "Pod", id="runner"),
    pytest.param(ephemeral_runner_pod_predicate, "EphemeralRunner", id="runner pod"),
    pytest.param(listener_pod_predicate, "AutoscalingListener", id="listener pod"),
    pytest.param(listener_service_account_predicate, "Pod", id="listener service account"),
]


# Upstream: every predicate test's "reconciles on unexpected types"
@pytest.mark.parametrize(("make", "other_kind"), ALL_PREDICATES)
def test_predicates_pass_unexpected_kinds(make: Callable[[], ProjectionPredicate], other_kind: str) -> None:
    """An update of a kind the projection was not written for is let through, not judged irrelevant."""
    assert passes(make(), {"kind": other_kind}, {"kind": other_kind})
    assert make().update(UpdateEvent(object_old=object(), object_new=object()))  # type: ignore[arg-type]


# Upstream: "does not filter create, delete or generic events" (runner set and listener pod tables)
@pytest.mark.parametrize(("make", "other_kind"), ALL_PREDICATES)
def test_predicates_never_filter_create_delete_or_generic(
    make: Callable[[], ProjectionPredicate], other_kind: str
) -> None:
    """Only updates are projected; every other event passes."""
    predicate, obj = make(), {"kind": other_kind}
    assert predicate.create(CreateEvent(object=obj))
    assert predicate.delete(DeleteEvent(object=obj))
    assert predicate.generic(GenericEvent(object=obj))


@pytest.mark.parametrize(
    ("make", "base"),
    [
        pytest.param(autoscaling_runner_set_runner_set_predicate, runner_set, id="runner set"),
        pytest.param(ephemeral_runner_set_runner_predicate, runner, id="runner"),
        pytest.param(ephemeral_runner_pod_predicate, runner_pod, id="runner pod"),
        pytest.param(listener_pod_predicate, listener_pod, id="listener pod"),
        pytest.param(listener_service_account_predicate, service_account, id="listener service account"),
    ],
)
def test_predicates_drop_a_resource_version_only_update(
    make: Callable[[], ProjectionPredicate], base: Callable[[], dict[str, Any]]
) -> None:
    """Python only: an update that changes only bookkeeping (resourceVersion, managedFields) is dropped,
    including one whose objects carry no ``kind`` (list items)."""
    old, new = base(), base()
    new["metadata"].update(resourceVersion="9", managedFields=[{"manager": "kubectl"}])
    assert not passes(make(), old, new)
    old.pop("kind")
    assert not passes(make(), old, copy.deepcopy(new))


def _json_names(model: Any) -> list[str]:
    return sorted(field.alias or field_name for field_name, field in model.model_fields.items())


# Upstream: TestPredicateProjectionsCoverEveryStatusField
def test_predicate_projections_cover_every_status_field() -> None:
    """A status field added to either type must be classified in the tables above before this passes.

    ERS: the three upstream fields. ER: upstream's thirteen (142132e5) plus the four job
    timing fields the listener writes since 0ba3cc92 (see arc-listener-and-actions-api.md),
    which the runner-set predicate ignores like the other listener-written job details.
    """
    assert _json_names(EphemeralRunnerSetStatus) == [
        "appliedActionableRevision",
        "finishedRunnerCleanupPatchID",
        "phase",
    ]
    assert _json_names(EphemeralRunnerStatus) == [
        "failures",
        "jobDisplayName",
        "jobEventName",
        "jobId",
        "jobQueuedAt",
        "jobRepositoryName",
        "jobRequestId",
        "jobRunnerAssignedAt",
        "jobScaleSetAssignedAt",
        "jobWorkflowRef",
        "message",
        "phase",
        "ready",
        "reason",
        "runnerId",
        "runnerName",
        "workflowRunId",
    ]


def test_absent_and_empty_labels_are_the_same_metadata() -> None:
    """Python only: an absent label map and an empty one are the same reconciled metadata (Go: nil ≡ empty)."""
    old, new = service_account(), service_account()
    del old["metadata"]["labels"]
    new["metadata"]["labels"] = {}
    assert not passes(listener_service_account_predicate(), old, new)


def test_own_conditions_predicate_drops_only_a_conditions_echo_arc_2633() -> None:
    """A scale set update that changes only its own conditions does not wake its reconciler;
    a phase, spec or metadata change does (Go's ResourceVersionChangedPredicate otherwise).
    """
    predicate = own_conditions_predicate("AutoscalingRunnerSet")

    def ars() -> dict[str, Any]:
        return {
            "kind": "AutoscalingRunnerSet",
            "metadata": {"name": "a", "resourceVersion": "1", "generation": 1, "annotations": {"x": "1"}},
            "spec": {"maxRunners": 2},
            "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False", "message": "m1"}]},
        }

    def echo(obj: dict[str, Any]) -> None:
        obj["metadata"]["resourceVersion"] = "2"
        obj["status"]["conditions"][0]["message"] = "m2"

    assert not passes(predicate, *mutated(ars, echo))  # type: ignore[arg-type]
    for change in (
        lambda o: o["status"].update(phase="Running"),
        lambda o: o["spec"].update(maxRunners=3),
        lambda o: o["metadata"]["annotations"].update(x="2"),
        lambda o: o["metadata"].update(deletionTimestamp=NOW),
    ):
        assert passes(predicate, *mutated(ars, change))  # type: ignore[arg-type]
    assert predicate.create(CreateEvent(object=ars()))
