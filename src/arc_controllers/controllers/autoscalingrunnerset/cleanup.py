"""Deleting a scale set: listeners, runner set and registered scale set first, then the finalizers.

Each pass deletes what is still there and comes back (on the dependents' delete events, or
after `AUTOSCALING_RUNNER_SET_DELETION_REQUEUE`) until nothing is left; then the cleanup
finalizer comes off the chart's dependent objects and the scale set's own finalizer last.

Ports: AutoscalingRunnerSetReconciler.cleanUpResources, cleanupListener,
removeFinalizersFromDependentResources and autoscalingRunnerSetFinalizerDependencyCleaner
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import ROLE, ROLE_BINDING, SECRET, SERVICE_ACCOUNT, objects
from arc_controllers.controllers.autoscalingrunnerset.listener import Listeners, delete_ignoring_not_found
from arc_controllers.controllers.autoscalingrunnerset.registration import ScaleSetRegistration
from arc_controllers.controllers.autoscalingrunnerset.runnerset import RunnerSetPublisher
from arc_controllers.controllers.patching import LazyCopy
from reconcilekit.client.interfaces import Client, GroupVersionKind, Object, ObjectKey
from reconcilekit.controllerutil import contains_finalizer, remove_finalizer
from reconcilekit.errors import ForbiddenError, NotFoundError
from reconcilekit.reconcile import Result

__all__ = ["ScaleSetCleanup"]

log = structlog.get_logger("AutoscalingRunnerSet")  # Go's logr name for this reconciler

_DEPENDENTS: tuple[tuple[GroupVersionKind, str], ...] = (
    (ROLE_BINDING, constants.ANNOTATION_KEY_KUBERNETES_MODE_ROLE_BINDING_NAME),
    (ROLE, constants.ANNOTATION_KEY_KUBERNETES_MODE_ROLE_NAME),
    (SERVICE_ACCOUNT, constants.ANNOTATION_KEY_KUBERNETES_MODE_SERVICE_ACCOUNT_NAME),
    (SERVICE_ACCOUNT, constants.ANNOTATION_KEY_NO_PERMISSION_SERVICE_ACCOUNT_NAME),
    (SECRET, constants.ANNOTATION_KEY_GITHUB_SECRET_NAME),
    (ROLE_BINDING, constants.ANNOTATION_KEY_MANAGER_ROLE_BINDING_NAME),
    (ROLE, constants.ANNOTATION_KEY_MANAGER_ROLE_NAME),
)
"""The chart's objects that carry ``actions.github.com/cleanup-protection``, in Go's order."""


@dataclass(frozen=True, kw_only=True)
class ScaleSetCleanup:
    """Python only: the deletion branch of the AutoscalingRunnerSet reconciler."""

    client: Client
    """Reads from the informer cache (secrets uncached), writes to the API server."""

    registration: ScaleSetRegistration
    """Unregisters the scale set."""

    runner_sets: RunnerSetPublisher
    """Finds the runner set."""

    listeners: Listeners
    """Finds the listeners."""

    async def finalize(self, ars: Object) -> Result:
        """Listener(s), runner set and registered scale set first; then the dependents' finalizers, then ours.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the deletion branch
        """
        if not contains_finalizer(ars, constants.AUTOSCALING_RUNNER_SET_FINALIZER_NAME):
            return Result()
        if not await self.clean_up_resources(ars):
            return Result(requeue_after=constants.AUTOSCALING_RUNNER_SET_DELETION_REQUEUE)
        await self.remove_finalizers_from_dependent_resources(ars)
        lazy = LazyCopy(ars)
        remove_finalizer(lazy.mutate(), constants.AUTOSCALING_RUNNER_SET_FINALIZER_NAME)
        try:
            await self.client.patch(ars, lazy.merge_from())
        except NotFoundError:
            pass
        log.info("removed finalizer", autoscalingrunnerset=objects.name(ars))
        return Result()

    async def clean_up_resources(self, ars: Object) -> bool:
        """True once no listener, no runner set and no registered scale set remain.

        Ports: AutoscalingRunnerSetReconciler.cleanUpResources
        """
        if not await self.cleanup_listener(ars):
            return False
        if not await self.cleanup_ephemeral_runner_set(ars):
            return False
        await self.registration.delete_runner_scale_set(ars)
        return True

    async def cleanup_listener(self, ars: Object) -> bool:
        """Delete every listener of this scale set, whatever its name; done when none is left.

        Ports: AutoscalingRunnerSetReconciler.cleanupListener
        """
        listeners = await self.listeners.of(ars)
        if not listeners:
            return True
        for listener in listeners:
            if not objects.is_deleting(listener):
                await delete_ignoring_not_found(self.client, listener)
        return False

    async def cleanup_ephemeral_runner_set(self, ars: Object) -> bool:
        """Ports: AutoscalingRunnerSetReconciler.cleanUpResources, the EphemeralRunnerSet step"""
        runner_set = await self.runner_sets.get(ars)
        if runner_set is None:
            return True
        if not objects.is_deleting(runner_set):
            await delete_ignoring_not_found(self.client, runner_set)
        return False

    async def remove_finalizers_from_dependent_resources(self, ars: Object) -> None:
        """Take ``actions.github.com/cleanup-protection`` off the chart's objects, in Go's order.

        The first failure stops the chain.

        Ports: AutoscalingRunnerSetReconciler.removeFinalizersFromDependentResources
        """
        for gvk, annotation in _DEPENDENTS:
            await self._remove_dependent_finalizer(ars, gvk, annotation)

    async def _remove_dependent_finalizer(self, ars: Object, gvk: GroupVersionKind, annotation: str) -> None:
        """Ports: the body shared by autoscalingRunnerSetFinalizerDependencyCleaner's remove*Finalizer methods"""
        name = objects.annotations(ars).get(annotation)
        if not name:
            return
        try:
            dependent = await self.client.get(gvk, ObjectKey(objects.namespace(ars), name))
        except NotFoundError:
            return
        except ForbiddenError:
            if gvk != SECRET:
                raise
            log.info("not allowed to read the GitHub secret; skipping its finalizer", secret=name)
            return
        if not contains_finalizer(dependent, constants.AUTOSCALING_RUNNER_SET_CLEANUP_FINALIZER_NAME):
            return
        lazy = LazyCopy(dependent)
        remove_finalizer(lazy.mutate(), constants.AUTOSCALING_RUNNER_SET_CLEANUP_FINALIZER_NAME)
        await self.client.patch(dependent, lazy.merge_from())
        log.info("removed cleanup finalizer", kind=gvk.kind, name=name)
