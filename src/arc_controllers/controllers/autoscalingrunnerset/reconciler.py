"""The AutoscalingRunnerSet reconciler: Go's decision order on one screen, and its wiring onto a manager.

Ports: controllers/actions.github.com/autoscalingrunnerset_controller.go (AutoscalingRunnerSetReconciler,
its Reconcile and SetupWithManager)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import AUTOSCALING_LISTENER, AUTOSCALING_RUNNER_SET, EPHEMERAL_RUNNER_SET, objects
from arc_controllers.api.v1alpha1.version import is_version_allowed
from arc_controllers.controllers.autoscalingrunnerset.cleanup import ScaleSetCleanup
from arc_controllers.controllers.autoscalingrunnerset.indexing import listener_to_scale_set
from arc_controllers.controllers.autoscalingrunnerset.listener import Listeners, is_stopped
from arc_controllers.controllers.autoscalingrunnerset.parking import Parking
from arc_controllers.controllers.autoscalingrunnerset.ready import ScaleSetReady
from arc_controllers.controllers.autoscalingrunnerset.registration import (
    ScaleSetClientFactory,
    ScaleSetRegistration,
    runner_group_out_of_sync,
    scale_set_name_out_of_sync,
    should_create_scale_set,
)
from arc_controllers.controllers.autoscalingrunnerset.runnerset import RunnerSetPublisher, needs_new_revision
from arc_controllers.controllers.autoscalingrunnerset.status import ScaleSetStatus, is_parked
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.controllers.predicates import autoscaling_runner_set_runner_set_predicate, own_conditions_predicate
from arc_controllers.resourcebuilder.listener import ListenerBuildOptions
from arc_controllers.resourcebuilder.runner import RunnerBuildOptions
from reconcilekit.builder import controller_managed_by
from reconcilekit.client.interfaces import Client, Object
from reconcilekit.controller.options import Options as ControllerOptions
from reconcilekit.controllerutil import add_finalizer, contains_finalizer
from reconcilekit.errors import NotFoundError
from reconcilekit.handler import enqueue_requests_from_map_func
from reconcilekit.manager import Manager
from reconcilekit.predicate import ResourceVersionChangedPredicate
from reconcilekit.reconcile import Request, Result
from reconcilekit.recorder import EventRecorder

__all__ = ["AutoscalingRunnerSetReconciler"]

log = structlog.get_logger("AutoscalingRunnerSet")  # Go's logr name for this reconciler


@dataclass(kw_only=True)
class AutoscalingRunnerSetReconciler:
    """Ports: AutoscalingRunnerSetReconciler

    The parts (`registration`, `runner_sets`, `listeners`, `parking`, `cleanup`, `status`)
    are built from the fields below and take what they need explicitly.
    """

    client: Client
    """Reads from the informer cache (secrets uncached), writes to the API server."""

    actions: ScaleSetClientFactory
    """Returns the Actions client of a scale set. Ports: ResourceBuilder.GetActionsService"""

    controller_namespace: str
    """Where listeners live. Ports: ControllerNamespace (env CONTROLLER_MANAGER_POD_NAMESPACE)"""

    default_listener_image: str
    """The listener pods' image. Ports: DefaultRunnerScaleSetListenerImage"""

    default_listener_image_pull_secrets: Sequence[str] = ()
    """Secret names for pulling the listener image; part of every desired listener.
    Ports: DefaultRunnerScaleSetListenerImagePullSecrets"""

    build_options: RunnerBuildOptions = field(default_factory=RunnerBuildOptions)
    """Label propagation exclusions and the build version (the version gate)."""

    listener_options: ListenerBuildOptions = field(default_factory=ListenerBuildOptions)
    """Label propagation exclusions for the listener."""

    recorder: EventRecorder | None = None
    """Warning Events when the scale set's Ready condition turns False; None records none.
    Beyond: ARC #2633: Go ARC records no Events."""

    status: ScaleSetStatus = field(init=False, repr=False)
    ready: ScaleSetReady = field(init=False, repr=False)
    registration: ScaleSetRegistration = field(init=False, repr=False)
    runner_sets: RunnerSetPublisher = field(init=False, repr=False)
    listeners: Listeners = field(init=False, repr=False)
    parking: Parking = field(init=False, repr=False)
    cleanup: ScaleSetCleanup = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Python only: build the parts from the fields."""
        self.status = ScaleSetStatus(client=self.client)
        self.ready = ScaleSetReady(client=self.client, status=self.status, recorder=self.recorder)
        self.registration = ScaleSetRegistration(client=self.client, actions=self.actions)
        self.runner_sets = RunnerSetPublisher(client=self.client, build_options=self.build_options)
        self.listeners = Listeners(
            client=self.client,
            status=self.status,
            namespace=self.controller_namespace,
            image=self.default_listener_image,
            image_pull_secrets=self.default_listener_image_pull_secrets,
            options=self.listener_options,
        )
        self.parking = Parking(
            client=self.client, status=self.status, runner_sets=self.runner_sets, listeners=self.listeners
        )
        self.cleanup = ScaleSetCleanup(
            client=self.client, registration=self.registration, runner_sets=self.runner_sets, listeners=self.listeners
        )

    async def reconcile(self, request: Request, /) -> Result:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile

        Go's guards in Go's order; every branch returns what its method decides. The one
        write that does not end the pass is Go's too: ``Pending`` for a new generation.
        """
        try:
            ars = await self.client.get(AUTOSCALING_RUNNER_SET, request.key)
        except NotFoundError:
            return Result()
        if objects.is_deleting(ars):
            return await self.cleanup.finalize(ars)
        version = objects.labels(ars).get(constants.LABEL_KEY_KUBERNETES_VERSION, "")
        if not is_version_allowed(version, self.build_options.build_version):
            return await self._delete_disallowed_version(ars)
        if not contains_finalizer(ars, constants.AUTOSCALING_RUNNER_SET_FINALIZER_NAME):
            return await self._add_finalizer(ars)
        try:
            return await self._reconcile_scale_set(ars)
        except Exception as err:  # Beyond: ARC #2633: the cause goes on the object, the retry goes on
            await self.ready.conditions.fail(ars, err, action="reconcile")
            raise

    async def _reconcile_scale_set(self, ars: Object) -> Result:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile, from the un-park test on"""
        parked = is_parked(ars)
        if parked and not await self.runner_sets.outdated_runner_spec_corrected(ars):
            return await self.parking.reconcile_outdated(ars)
        await self.status.mark_pending(ars, unparked=parked)

        if should_create_scale_set(ars):
            return await self.registration.create_runner_scale_set(ars)
        if runner_group_out_of_sync(ars):
            return await self.registration.update_runner_scale_set_runner_group(ars)
        if scale_set_name_out_of_sync(ars):
            return await self.registration.update_runner_scale_set_name(ars)

        runner_set = await self.runner_sets.get(ars)
        if runner_set is None:
            return await self.runner_sets.create(ars)
        await self.runner_sets.delete_older(ars, runner_set)
        if self.runner_sets.rejected(ars, runner_set):
            return await self.parking.park(ars)
        desired_set = self.runner_sets.desired(ars)
        if desired_set is None:
            return Result()
        if needs_new_revision(runner_set, desired_set):
            return await self.runner_sets.publish_runner_spec(runner_set, desired_set)
        if self.runner_sets.metadata_drifted(runner_set, desired_set):
            return await self.runner_sets.update_metadata(runner_set, desired_set)

        renamed = await self.listeners.renamed(ars)
        if renamed:
            return await self.listeners.delete_renamed(renamed)
        listener = await self.listeners.get(ars)
        if listener is None and await self.registration.runner_scale_set_gone(ars):
            return await self.registration.create_runner_scale_set(ars)
        if listener is None:
            return await self.listeners.create(ars, runner_set)
        desired_listener = self.listeners.desired_or_none(ars, runner_set)
        if desired_listener is None:
            return Result()
        if self.listeners.drifted(listener, desired_listener):
            return await self.listeners.replace(ars, listener)
        if is_stopped(listener):
            return await self.listeners.restart(listener)
        return await self.ready.mark(ars, listener)

    async def _add_finalizer(self, ars: Object) -> Result:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile, the "add finalizer" branch"""
        lazy = LazyCopy(ars)
        add_finalizer(lazy.mutate(), constants.AUTOSCALING_RUNNER_SET_FINALIZER_NAME)
        await self.client.patch(ars, lazy.merge_from())
        log.info("added finalizer", autoscalingrunnerset=objects.name(ars))
        return Result()

    async def _delete_disallowed_version(self, ars: Object) -> Result:
        """Delete a scale set labelled with a version this build may not manage; errors are only logged.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the version-gate branch
        """
        log.info("autoscaling runner set version does not match the build version; deleting it")
        try:
            await self.client.delete(ars)
        except Exception as err:  # Go logs the failure and returns no error
            log.error("failed to delete autoscaling runner set on version mismatch", error=str(err))
        return Result()

    def setup_with_manager(self, mgr: Manager, *, options: ControllerOptions | None = None) -> None:
        """``For(AutoscalingRunnerSet).Owns(EphemeralRunnerSet).Watches(AutoscalingListener)``, named.

        Beyond: ARC #2633: an update that changes only the scale set's own conditions is dropped
        (`own_conditions_predicate`): the echo of a failed pass's condition write never cuts its backoff.

        Args:
            options: workers and name validation (the controller defaults when None).

        Ports: AutoscalingRunnerSetReconciler.SetupWithManager
        """
        (
            controller_managed_by(mgr)
            .for_(AUTOSCALING_RUNNER_SET, predicates=[own_conditions_predicate(AUTOSCALING_RUNNER_SET.kind)])
            .owns(EPHEMERAL_RUNNER_SET, predicates=[autoscaling_runner_set_runner_set_predicate()])
            .watches(AUTOSCALING_LISTENER, enqueue_requests_from_map_func(listener_to_scale_set))
            .with_event_filter(ResourceVersionChangedPredicate())
            .with_options(options or ControllerOptions())
            .named("autoscalingrunnerset")
            .complete(self)
        )
