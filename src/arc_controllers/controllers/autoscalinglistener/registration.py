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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from arc_controllers.api.v1alpha1 import POD, objects
from arc_controllers.controllers.actions_seam import is_actions_not_found
from arc_controllers.controllers.autoscalinglistener.pod import listener_pod_is_dead
from arc_controllers.controllers.autoscalinglistener.resources import ListenerResources
from reconcilekit.client.interfaces import Object
from reconcilekit.errors import NotFoundError
from reconcilekit.reconcile import Result

__all__ = ["RegistrationCheck", "ScaleSetLookup", "ScaleSetLookupFactory"]

log = structlog.get_logger("AutoscalingListener")  # Go's logr name for this reconciler


class ScaleSetLookup(Protocol):
    """**Protocol:** the one Actions call the check makes (`arc_controllers.actions.ActionsClient` has it)."""

    async def get_runner_scale_set_by_id(self, runner_scale_set_id: int, /) -> Any:
        """The scale set; raises ``ActionsNotFoundError`` when the service has none of that id.

        Ports: multiclient.Client.GetRunnerScaleSetByID
        """
        ...


ScaleSetLookupFactory = Callable[[Object], Awaitable[ScaleSetLookup]]
"""Returns the Actions client of an AutoscalingRunnerSet. Ports: SecretResolver.GetActionsService"""


@dataclass(kw_only=True)
class RegistrationCheck:
    """Python only: one scale set lookup per dead listener pod; a listener whose scale set is gone is handed back.

    Beyond: ARC #4370: a scale set deleted on the service left its listener crash-looping forever.
    """

    resources: ListenerResources
    """Reads the listener pod (cached); its client deletes the listener."""

    actions: ScaleSetLookupFactory | None = None
    """Returns the Actions client of a scale set; None turns the check off."""

    _looked_up: dict[str, str] = field(default_factory=dict, repr=False)
    """Listener UID → UID of the last dead pod its scale set was looked up for (this process only)."""

    async def runner_scale_set_gone(self, listener: Object, ars: Object) -> bool:
        """True when the listener's pod is dead, not yet looked up for, and the service says the scale set is gone.

        The lookup (``GetRunnerScaleSetByID`` of ``spec.runnerScaleSetId``) happens at most once
        per dead pod: a crash loop asks once per death, its backoff bounding the rate (2 s, then
        doubling up to 5 min). A controller restart may ask once more for a pod already dead.
        Errors other than not-found (a service outage, a missing config secret) are logged at
        info and answer False: they must not hold up the crash backoff.

        Args:
            listener: The AutoscalingListener, not deleting.
            ars: Its AutoscalingRunnerSet, whose config secret and URL build the client.
        """
        if self.actions is None:
            return False
        pod = await self.resources.get(POD, objects.namespace(listener), objects.name(listener))
        if pod is None or not listener_pod_is_dead(pod):
            return False
        listener_uid, pod_uid = str(objects.meta(listener).get("uid") or ""), str(objects.meta(pod).get("uid") or "")
        if self._looked_up.get(listener_uid) == pod_uid:
            return False
        self._looked_up[listener_uid] = pod_uid
        scale_set_id = int(objects.spec(listener).get("runnerScaleSetId") or 0)
        if scale_set_id <= 0:
            return False
        try:
            client = await self.actions(ars)
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
            await self.resources.client.delete(listener)
        except NotFoundError:
            pass
        return Result()

    def forget(self, listener: Object) -> None:
        """Drop what was looked up for ``listener`` (its finalizer is gone)."""
        self._looked_up.pop(str(objects.meta(listener).get("uid") or ""), None)
