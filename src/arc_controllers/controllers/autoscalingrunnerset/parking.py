"""Parking: a scale set whose runners rejected the runner spec stays ``Outdated`` until the spec changes.

While parked the listeners are stopped and the runner set is pinned to zero runners (the
only place this controller writes ``replicas`` and ``patchID``). Edits that are not a
recovery signal (min/max runners, names, labels) still reach the stopped listener and the
runner set's labels and annotations.

Ports: AutoscalingRunnerSetReconciler.reconcileOutdated, stopListener,
propagateToStoppedListener and createStoppedListener
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import structlog

from arc_controllers.api.v1alpha1 import AutoscalingListenerPhase, objects
from arc_controllers.controllers.autoscalingrunnerset.listener import (
    Listeners,
    delete_ignoring_not_found,
    is_stopped,
)
from arc_controllers.controllers.autoscalingrunnerset.runnerset import RunnerSetPublisher, merged_metadata
from arc_controllers.controllers.autoscalingrunnerset.status import ScaleSetStatus
from arc_controllers.controllers.helpers import listener_spec_changed
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.resourcebuilder.listener import scale_set_listener_name
from arc_controllers.resourcebuilder.runnerset import new_ephemeral_runner_set
from reconcilekit.client.interfaces import Client, Object
from reconcilekit.errors import AlreadyExistsError
from reconcilekit.reconcile import Result

__all__ = ["Parking"]

log = structlog.get_logger("AutoscalingRunnerSet")  # Go's logr name for this reconciler


def _pinned(runner_set: Object) -> bool:
    """Python only: ``spec.replicas`` and ``spec.patchID`` are both zero (or unset)."""
    spec = objects.spec(runner_set)
    return int(spec.get("replicas") or 0) == 0 and int(spec.get("patchID") or 0) == 0


@dataclass(frozen=True, kw_only=True)
class Parking:
    """Python only: parks a scale set and keeps it parked."""

    client: Client
    """Reads from the informer cache, writes to the API server."""

    status: ScaleSetStatus
    """Writes the ``Outdated`` phase."""

    runner_sets: RunnerSetPublisher
    """Reads the runner set and merges its metadata."""

    listeners: Listeners
    """Finds and builds the listeners."""

    async def park(self, ars: Object) -> Result:
        """Mark the scale set ``Outdated``, then keep it parked.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the park branch
        """
        await self.status.park(ars)
        return await self.reconcile_outdated(ars)

    async def reconcile_outdated(self, ars: Object) -> Result:
        """Keep a parked scale set parked: listeners stopped, the runner set pinned to zero runners.

        Ports: AutoscalingRunnerSetReconciler.reconcileOutdated
        """
        await self.stop_listener(ars)
        runner_set = await self.runner_sets.get(ars)
        if runner_set is None or objects.is_deleting(runner_set):
            return Result()
        await self.propagate_to_stopped_listener(ars, runner_set)
        desired = new_ephemeral_runner_set(ars, options=self.runner_sets.build_options)
        labels, annotations = self.runner_sets.merged_metadata(runner_set, desired)
        if (
            _pinned(runner_set)
            and labels == objects.labels(runner_set)
            and annotations == objects.annotations(runner_set)
        ):
            return Result()
        lazy = LazyCopy(runner_set)
        live = lazy.mutate()
        spec = live.setdefault("spec", {})
        spec["replicas"] = 0
        spec["patchID"] = 0
        objects.mutable_meta(live)["labels"] = labels
        objects.mutable_meta(live)["annotations"] = annotations
        await self.client.patch(runner_set, lazy.merge_from())
        log.info("pinned outdated ephemeral runner set to zero", ephemeralrunnerset=objects.name(runner_set))
        return Result()

    async def stop_listener(self, ars: Object) -> None:
        """Set ``spec.phase: Stopped`` on every listener of this scale set.

        Ports: AutoscalingRunnerSetReconciler.stopListener
        """
        for listener in await self.listeners.of(ars):
            if objects.is_deleting(listener) or is_stopped(listener):
                continue
            lazy = LazyCopy(listener)
            lazy.mutate().setdefault("spec", {})["phase"] = AutoscalingListenerPhase.STOPPED
            await self.client.patch(listener, lazy.merge_from())
            log.info("stopped listener", autoscalinglistener=objects.name(listener))

    async def propagate_to_stopped_listener(self, ars: Object, runner_set: Object) -> None:
        """Carry non-recovery edits to the stopped listener; replace a renamed one by a stopped one.

        Ports: AutoscalingRunnerSetReconciler.propagateToStoppedListener
        """
        listeners = await self.listeners.of(ars)
        if not listeners:
            return
        name = scale_set_listener_name(ars)
        current = next((item for item in listeners if objects.name(item) == name), None)
        if current is None:
            await self.create_stopped_listener(ars, runner_set)
        elif not objects.is_deleting(current):
            await self._update_stopped_listener(current, self.listeners.desired(ars, runner_set))
        for listener in listeners:
            if objects.name(listener) != name and not objects.is_deleting(listener):
                await delete_ignoring_not_found(self.client, listener)

    async def _update_stopped_listener(self, current: Object, desired: Object) -> None:
        """Ports: AutoscalingRunnerSetReconciler.propagateToStoppedListener, the update of the current listener"""
        labels, annotations = merged_metadata(
            current, desired, self.listeners.options.exclude_label_propagation_prefixes
        )
        if (
            not listener_spec_changed(current, desired)
            and labels == objects.labels(current)
            and annotations == objects.annotations(current)
        ):
            return
        lazy = LazyCopy(current)
        live = lazy.mutate()
        spec = copy.deepcopy(objects.spec(desired))
        spec["phase"] = AutoscalingListenerPhase.STOPPED
        live["spec"] = spec
        objects.mutable_meta(live)["labels"] = labels
        objects.mutable_meta(live)["annotations"] = annotations
        await self.client.patch(current, lazy.merge_from())
        log.info("updated stopped listener", autoscalinglistener=objects.name(current))

    async def create_stopped_listener(self, ars: Object, runner_set: Object) -> None:
        """Ports: AutoscalingRunnerSetReconciler.createStoppedListener"""
        desired = copy.deepcopy(self.listeners.desired(ars, runner_set))
        desired["spec"]["phase"] = AutoscalingListenerPhase.STOPPED
        try:
            await self.client.create(desired)
        except AlreadyExistsError:
            return
        log.info("created stopped listener", autoscalinglistener=desired["metadata"]["name"])
