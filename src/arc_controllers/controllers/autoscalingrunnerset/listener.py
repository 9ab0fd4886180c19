"""The scale set's one AutoscalingListener, in the controller namespace.

A listener is found by the ``.spec.autoscalingRunnerSet`` index, whatever its name, so one
left under an old name (runner group or URL edited) is found and deleted before the new one
is created: a rename is a replacement, never two listeners at once. A listener whose spec or
metadata drifted is deleted (and created again on its delete event); a stopped one is
started again.

Ports: AutoscalingRunnerSetReconciler.createAutoScalingListenerForRunnerSet and the listener
branches of Reconcile
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog

from arc_controllers.api.v1alpha1 import (
    AUTOSCALING_LISTENER,
    AutoscalingListenerPhase,
    AutoscalingRunnerSetPhase,
    objects,
)
from arc_controllers.controllers.autoscalingrunnerset.indexing import (
    AUTOSCALING_RUNNER_SET_OWNER_KEY,
    autoscaling_runner_set_owner_index_value,
)
from arc_controllers.controllers.autoscalingrunnerset.status import ScaleSetStatus
from arc_controllers.controllers.helpers import listener_spec_changed
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.resourcebuilder.listener import (
    ListenerBuildOptions,
    new_autoscaling_listener,
    scale_set_listener_name,
)
from reconcilekit.client.interfaces import Client, Object, ObjectKey
from reconcilekit.errors import AlreadyExistsError, NotFoundError
from reconcilekit.reconcile import Result

__all__ = ["Listeners", "delete_ignoring_not_found", "is_stopped"]

log = structlog.get_logger("AutoscalingRunnerSet")  # Go's logr name for this reconciler


async def delete_ignoring_not_found(client: Client, obj: Object) -> None:
    """Python only: delete ``obj``; already gone is fine."""
    try:
        await client.delete(obj)
    except NotFoundError:
        pass


def is_stopped(listener: Object) -> bool:
    """Python only: the listener's ``spec.phase`` is ``Stopped``."""
    return objects.spec(listener).get("phase") == AutoscalingListenerPhase.STOPPED


@dataclass(frozen=True, kw_only=True)
class Listeners:
    """Python only: finds, builds, creates, replaces and restarts a scale set's listeners."""

    client: Client
    """Reads from the informer cache, writes to the API server."""

    status: ScaleSetStatus
    """Marks the scale set Pending while a drifted listener is replaced."""

    namespace: str
    """Where listeners live (the controller namespace)."""

    image: str
    """The listener pods' image."""

    image_pull_secrets: Sequence[str] = ()
    """Secret names for pulling the listener image."""

    options: ListenerBuildOptions = field(default_factory=ListenerBuildOptions)
    """Label propagation exclusions for the listener."""

    async def of(self, ars: Object) -> list[Object]:
        """Python only: every listener of this scale set, by the index, whatever its name."""
        index_value = autoscaling_runner_set_owner_index_value(objects.namespace(ars), objects.name(ars))
        listed = await self.client.list(
            AUTOSCALING_LISTENER, namespace=self.namespace, fields={AUTOSCALING_RUNNER_SET_OWNER_KEY: index_value}
        )
        return list(listed.items)

    async def get(self, ars: Object) -> Object | None:
        """Python only: the listener under its current name, or None."""
        try:
            return await self.client.get(AUTOSCALING_LISTENER, ObjectKey(self.namespace, scale_set_listener_name(ars)))
        except NotFoundError:
            return None

    def desired(self, ars: Object, runner_set: Object) -> Object:
        """Python only: the desired listener with this controller's namespace, image and pull secrets."""
        return new_autoscaling_listener(
            ars,
            runner_set,
            namespace=self.namespace,
            image=self.image,
            image_pull_secrets=[{"name": name} for name in self.image_pull_secrets],
            options=self.options,
        )

    def desired_or_none(self, ars: Object, runner_set: Object) -> Object | None:
        """Python only: `desired`, or None (logged) when the listener cannot be built."""
        try:
            return self.desired(ars, runner_set)
        except ValueError as err:
            log.error("could not build the desired listener", error=str(err))
            return None

    async def renamed(self, ars: Object) -> list[Object]:
        """Python only: the listeners left under an old name (runner group or URL edited)."""
        current = scale_set_listener_name(ars)
        return [listener for listener in await self.of(ars) if objects.name(listener) != current]

    async def delete_renamed(self, renamed: list[Object]) -> Result:
        """Delete the renamed listeners; the new one is created once they are gone.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the renamed-listener block
        """
        for listener in renamed:
            if not objects.is_deleting(listener):
                log.info("deleting renamed listener", autoscalinglistener=objects.name(listener))
                await delete_ignoring_not_found(self.client, listener)
        return Result()

    async def create(self, ars: Object, runner_set: Object) -> Result:
        """Ports: AutoscalingRunnerSetReconciler.createAutoScalingListenerForRunnerSet

        Differs: AlreadyExists (a cache behind our own create) is not an error.
        """
        desired = self.desired(ars, runner_set)
        try:
            await self.client.create(desired)
        except AlreadyExistsError:
            log.info("listener exists already; waiting for the cache")
            return Result()
        log.info("created listener", autoscalinglistener=desired["metadata"]["name"])
        return Result()

    @staticmethod
    def drifted(listener: Object, desired: Object) -> bool:
        """The spec (phase aside), labels or annotations differ from the desired listener's.

        Checked before the Stopped test, so a parked listener whose spec changed is rebuilt
        rather than restarted with stale config.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the existing-listener drift test
        """
        return (
            listener_spec_changed(listener, desired)
            or objects.labels(listener) != objects.labels(desired)
            or objects.annotations(listener) != objects.annotations(desired)
        )

    async def replace(self, ars: Object, listener: Object) -> Result:
        """Pending meanwhile; delete the drifted listener (its delete event brings the new one).

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the existing-listener drift branch
        """
        await self.status.update(ars, AutoscalingRunnerSetPhase.PENDING)
        log.info("listener is out of date; deleting it", autoscalinglistener=objects.name(listener))
        await delete_ignoring_not_found(self.client, listener)
        return Result()

    async def restart(self, listener: Object) -> Result:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile, the stopped-listener branch"""
        lazy = LazyCopy(listener)
        lazy.mutate().setdefault("spec", {})["phase"] = AutoscalingListenerPhase.RUNNING
        await self.client.patch(listener, lazy.merge_from())
        log.info("restarted stopped listener", autoscalinglistener=objects.name(listener))
        return Result()
