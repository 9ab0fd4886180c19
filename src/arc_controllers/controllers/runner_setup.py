"""Wiring the two runner reconcilers into a manager: field indexers, watches, options.

Ports: EphemeralRunnerSetReconciler.SetupWithManager, EphemeralRunnerReconciler.SetupWithManager,
and the runner part of SetupIndexers (indexer.go)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arc_controllers._runner_constants import API_VERSION, EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET, POD
from arc_controllers.controllers.actions_seam import ActionsClientFactory
from arc_controllers.controllers.ephemeralrunner import EphemeralRunnerReconciler
from arc_controllers.controllers.ephemeralrunnerset import RESOURCE_OWNER_KEY, EphemeralRunnerSetReconciler
from arc_controllers.controllers.predicates import ephemeral_runner_pod_predicate, ephemeral_runner_set_runner_predicate
from arc_controllers.controllers.unregistration import RunnerUnregistrationQueue
from arc_controllers.resourcebuilder.runner import RunnerBuildOptions
from reconcilekit.builder import controller_managed_by
from reconcilekit.client.interfaces import Object
from reconcilekit.controller.options import Options as ControllerOptions
from reconcilekit.manager import Manager
from reconcilekit.predicate import ResourceVersionChangedPredicate

__all__ = [
    "DEFAULT_EPHEMERAL_RUNNER_CONCURRENCY",
    "DEFAULT_EPHEMERAL_RUNNER_SET_CONCURRENCY",
    "setup_ephemeral_runner_reconciler",
    "setup_ephemeral_runner_set_reconciler",
    "setup_runner_indexers",
]

DEFAULT_EPHEMERAL_RUNNER_SET_CONCURRENCY = 2
DEFAULT_EPHEMERAL_RUNNER_CONCURRENCY = 4

_OWNER_KINDS: dict[str, tuple[str, ...]] = {
    "Pod": ("EphemeralRunner", "AutoscalingListener"),
    "EphemeralRunner": ("EphemeralRunnerSet",),
}


def _controller_owner_index(allowed: Sequence[str]) -> Any:
    """Python only: the index function for one object type's allowed controller owner kinds."""

    def extract(obj: Object) -> list[str]:
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("controller"):
                if ref.get("apiVersion") == API_VERSION and ref.get("kind") in allowed:
                    return [str(ref.get("name"))]
                return []
        return []

    return extract


async def setup_runner_indexers(mgr: Manager) -> None:
    """Index Pods and EphemeralRunners by their controller owner's name under ``.metadata.controller``.

    Ports: SetupIndexers (the Pod and EphemeralRunner entries)
    """
    cache = mgr.get_cache()
    for gvk in (POD, EPHEMERAL_RUNNER):
        await cache.index_field(gvk, RESOURCE_OWNER_KEY, _controller_owner_index(_OWNER_KINDS[gvk.kind]))


def setup_ephemeral_runner_set_reconciler(
    mgr: Manager,
    *,
    actions: ActionsClientFactory,
    build_options: RunnerBuildOptions | None = None,
    max_concurrent_reconciles: int = DEFAULT_EPHEMERAL_RUNNER_SET_CONCURRENCY,
    skip_name_validation: bool = False,
) -> EphemeralRunnerSetReconciler:
    """``For(EphemeralRunnerSet).Owns(EphemeralRunner)`` with the resource-version filter and the runner projection.

    Ports: EphemeralRunnerSetReconciler.SetupWithManager
    """
    reconciler = EphemeralRunnerSetReconciler(
        client=mgr.get_client(),
        api_reader=mgr.get_api_reader(),
        actions=actions,
        build_options=build_options or RunnerBuildOptions(),
    )
    (
        controller_managed_by(mgr)
        .for_(EPHEMERAL_RUNNER_SET)
        .owns(EPHEMERAL_RUNNER, predicates=[ephemeral_runner_set_runner_predicate()])
        .with_event_filter(ResourceVersionChangedPredicate())
        .with_options(
            ControllerOptions(
                max_concurrent_reconciles=max(max_concurrent_reconciles, 1),
                skip_name_validation=skip_name_validation,
            )
        )
        .named("ephemeralrunnerset")
        .complete(reconciler)
    )
    return reconciler


def setup_ephemeral_runner_reconciler(
    mgr: Manager,
    *,
    actions: ActionsClientFactory,
    build_options: RunnerBuildOptions | None = None,
    unregistration_queue: RunnerUnregistrationQueue | None = None,
    terminated_pod_grace_period_seconds: int = 0,
    max_concurrent_reconciles: int = DEFAULT_EPHEMERAL_RUNNER_CONCURRENCY,
    skip_name_validation: bool = False,
    publish_metrics: bool = False,
) -> EphemeralRunnerReconciler:
    """``For(EphemeralRunner).Owns(Pod)`` with the pod projection.

    Creates and registers the unregistration queue when none is given.

    ``publish_metrics`` turns on the runner phase gauges (spec §3.8).

    Ports: EphemeralRunnerReconciler.SetupWithManager
    """
    if unregistration_queue is None:
        unregistration_queue = RunnerUnregistrationQueue(actions=actions)
        mgr.add(unregistration_queue)
    reconciler = EphemeralRunnerReconciler(
        client=mgr.get_client(),
        actions=actions,
        unregistration_queue=unregistration_queue,
        build_options=build_options or RunnerBuildOptions(),
        terminated_pod_grace_period_seconds=terminated_pod_grace_period_seconds,
        publish_metrics=publish_metrics,
    )
    (
        controller_managed_by(mgr)
        .for_(EPHEMERAL_RUNNER)
        .owns(POD, predicates=[ephemeral_runner_pod_predicate()])
        .with_event_filter(ResourceVersionChangedPredicate())
        .with_options(
            ControllerOptions(
                max_concurrent_reconciles=max(max_concurrent_reconciles, 1),
                skip_name_validation=skip_name_validation,
            )
        )
        .named("ephemeralrunner")
        .complete(reconciler)
    )
    return reconciler
