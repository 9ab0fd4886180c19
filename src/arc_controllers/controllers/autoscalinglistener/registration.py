"""A listener pod that died is checked against the service once: a scale set gone from it is registered again.

Upstream registers a scale set again only when the AutoscalingRunnerSet finds no listener
(``runnerScaleSetGone`` before ``createAutoScalingListenerForRunnerSet``). A scale set removed on
the service while its listener exists (an admin deleted it, or the service lost it) never gets
there: the listener pod dies (session create 404, scale set not found) and is recreated under
the stale ``runner-scale-set-id`` for good.

Here each dead listener pod (one lookup per pod UID, whatever the reconciles in between) asks the
service for the listener's scale set by id. A not-found answer deletes the AutoscalingListener;
the AutoscalingRunnerSet, finding no listener, takes upstream's path: ``runnerScaleSetGone``,
``createRunnerScaleSet`` (a new id in the annotation), a new revision of the runner set, and a
listener created with the new id. Any other answer, an error included, leaves the crash backoff
as it is; the next death asks again.

Python only. Beyond: ARC #4370: a scale set deleted on the service left its listener crash-looping forever.

Ports: none; Beyond: ARC #4370 (open upstream); the re-registration itself is upstream's
``runnerScaleSetGone`` path in the AutoscalingRunnerSet reconciler.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from arc_controllers.api.v1alpha1 import objects
from arc_controllers.controllers.actions_seam import ScaleSetLookupFactory, is_actions_not_found
from reconcilekit.client.interfaces import Client, Object
from reconcilekit.errors import NotFoundError
from reconcilekit.reconcile import Result

__all__ = ["RegistrationCheck"]

log = structlog.get_logger("AutoscalingListener")  # Go's logr name for this reconciler


@dataclass(kw_only=True)
class RegistrationCheck:
    """Python only: one scale set lookup per dead listener pod; a listener whose scale set is gone is handed back.

    Beyond: ARC #4370: a scale set deleted on the service left its listener crash-looping forever.
    """

    client: Client
    """Deletes the listener whose scale set is gone."""

    actions: ScaleSetLookupFactory | None = None
    """Returns the Actions client of a listener's scale set; None turns the check off."""

    _looked_up: dict[str, str] = field(default_factory=dict, repr=False)
    """Listener UID → UID of the last dead pod its scale set was looked up for (this process only)."""

    async def runner_scale_set_gone(self, listener: Object, dead_pod: Object) -> bool:
        """True when ``dead_pod`` was not looked up for yet and the service says the listener's scale set is gone.

        The lookup (``GetRunnerScaleSetByID`` of ``spec.runnerScaleSetId``) happens at most once
        per dead pod: a crash loop asks once per death, its backoff bounding the rate (2 s, then
        doubling up to 5 min). A controller restart may ask once more for a pod already dead.
        Errors other than not-found (a service outage, a missing config secret) are logged at
        info and answer False: they must not hold the crash backoff up.

        Args:
            listener: The AutoscalingListener, not deleting; its spec builds the Actions client.
            dead_pod: Its listener pod, dead (`listener_pod_is_dead`).
        """
        if self.actions is None:
            return False
        listener_uid = str(objects.meta(listener).get("uid") or "")
        pod_uid = str(objects.meta(dead_pod).get("uid") or "")
        if self._looked_up.get(listener_uid) == pod_uid:
            return False
        self._looked_up[listener_uid] = pod_uid
        scale_set_id = int(objects.spec(listener).get("runnerScaleSetId") or 0)
        if scale_set_id <= 0:
            return False
        try:
            client = await self.actions(listener)
            await client.get_runner_scale_set_by_id(scale_set_id)
        except Exception as err:
            if is_actions_not_found(err):
                log.info(
                    "runner scale set is gone from the service; handing the listener back for a new registration",
                    autoscalinglistener=objects.name(listener),
                    runner_scale_set_id=scale_set_id,
                )
                return True
            log.info("could not look the runner scale set up after a listener death", error=str(err))
        return False

    async def hand_back(self, listener: Object) -> Result:
        """Delete the listener: its scale set, finding none, checks the service and registers again.

        The listener's finalizer removes its pod and the rest first, as for any deletion.
        """
        try:
            await self.client.delete(listener)
        except NotFoundError:
            pass
        return Result()

    def forget(self, listener: Object) -> None:
        """Drop what was looked up for ``listener`` (its finalizer is gone)."""
        self._looked_up.pop(str(objects.meta(listener).get("uid") or ""), None)
