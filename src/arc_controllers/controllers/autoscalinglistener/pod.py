"""The listener pod: created, replaced when its spec or config moved on or it died, else kept in its metadata.

The listener-up gauge is published once the ``listener`` container runs; listener-down
whenever the pod goes. The only status written is the crash count (our addition, ARC #4656):
a dead pod is kept for the crash backoff before it is replaced. Each dead pod first has its
scale set looked up once (`registration`, ARC #4370): a scale set gone from the service hands
the listener back for a new registration.

Ports: AutoscalingListenerReconciler.Reconcile (the pod block), createListenerPod,
deleteListenerPod and listenerPodIsDead
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from arc_controllers.api.v1alpha1 import POD, objects
from arc_controllers.api.v1alpha1.objects import mutable_status
from arc_controllers.controllers.actions_seam import ScaleSetLookupFactory
from arc_controllers.controllers.autoscalinglistener.registration import RegistrationCheck
from arc_controllers.controllers.autoscalinglistener.resources import ListenerResources
from arc_controllers.controllers.helpers import listener_pod_spec_requires_recreation
from arc_controllers.controllers.metrics import publish_listener_down, publish_listener_up
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.controllers.runnerstates import parse_time
from arc_controllers.resourcebuilder.listener import (
    LISTENER_CONTAINER_NAME,
    ListenerMetricsServerConfig,
    new_scale_set_listener_pod,
)
from reconcilekit.client.interfaces import Object
from reconcilekit.errors import NotFoundError
from reconcilekit.reconcile import Result

__all__ = ["CRASH_BACKOFF_BASE", "CRASH_BACKOFF_CAP", "CRASH_HEALTHY_RESET", "ListenerPod", "listener_pod_is_dead"]

log = structlog.get_logger("AutoscalingListener")  # Go's logr name for this reconciler

CRASH_BACKOFF_BASE = timedelta(seconds=2)
"""Wait after the first death of a listener pod before it is replaced; doubled per consecutive death."""
CRASH_BACKOFF_CAP = timedelta(minutes=5)
"""The longest wait between a listener pod's death and its replacement."""
CRASH_HEALTHY_RESET = timedelta(minutes=10)
"""A pod that ran this long before dying counts as the first failure again."""


def _utcnow() -> datetime:
    """Python only: the default clock (aware UTC)."""
    return datetime.now(UTC)


def _rfc3339(t: datetime) -> str:
    """Python only: a timestamp as the API server writes it (second precision, Z)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _listener_terminated(pod: Object) -> dict[str, Any]:
    """Python only: the ``listener`` container's terminated state, {} when it reports none."""
    for container in objects.status(pod).get("containerStatuses") or []:
        if container.get("name") == LISTENER_CONTAINER_NAME:
            found: dict[str, Any] = (container.get("state") or {}).get("terminated") or {}
            return found
    return {}


def crash_backoff(failures: int) -> timedelta:
    """The wait after the ``failures``-th consecutive death: 2 s, 4 s, 8 s, ... at most 5 min.

    Beyond: ARC #4656: a crash-looping listener was recreated at once, 90 pods in 40 s.
    """
    if failures <= 0:
        return timedelta(0)
    doubled: timedelta = CRASH_BACKOFF_BASE * (1 << min(failures - 1, 16))
    return min(doubled, CRASH_BACKOFF_CAP)


def listener_pod_is_dead(pod: Object) -> bool:
    """Evicted, or its ``listener`` container terminated (restart policy Never: it will not come back).

    Ports: listenerPodIsDead (#4680; without the [UNCONFIRMED] 15 s restart delay)
    """
    status = objects.status(pod)
    if status.get("reason") == "Evicted":
        return True
    for container in status.get("containerStatuses") or []:
        if container.get("name") == LISTENER_CONTAINER_NAME and (container.get("state") or {}).get("terminated"):
            return True
    return False


def _publish_running(listener: Object, pod: Object) -> None:
    """Publish listener-up once the ``listener`` container runs (no status is written).

    Ports: AutoscalingListenerReconciler.Reconcile, the running-metric block
    """
    for container in objects.status(pod).get("containerStatuses") or []:
        if container.get("name") == LISTENER_CONTAINER_NAME and (container.get("state") or {}).get("running"):
            try:
                publish_listener_up(listener)
            except ValueError:
                return


@dataclass(frozen=True, kw_only=True)
class ListenerPod:
    """Python only: creates, replaces and keeps the listener pod."""

    resources: ListenerResources
    """Reads and patches the pod; its client creates and deletes it."""
    clock: Callable[[], datetime] = field(default=_utcnow)
    """Python only: now, aware UTC (the crash backoff)."""
    actions: ScaleSetLookupFactory | None = None
    """Returns a listener's Actions client, to look its scale set up once per death; None: no lookup."""

    @functools.cached_property
    def registration(self) -> RegistrationCheck:
        """Python only: the one-lookup-per-death check (ARC #4370), built once."""
        return RegistrationCheck(client=self.resources.client, actions=self.actions)

    async def reconcile_pod(
        self,
        listener: Object,
        config_secret: Object,
        service_account: Object,
        metrics: ListenerMetricsServerConfig | None,
    ) -> Result:
        """Create the pod; replace it when its spec or config drifted or it died; else fix its metadata.

        Ports: AutoscalingListenerReconciler.Reconcile, the pod block, and createListenerPod
        """
        desired = new_scale_set_listener_pod(
            listener, config_secret, service_account, metrics, options=self.resources.options
        )
        live = await self.resources.get(POD, objects.namespace(listener), objects.name(listener))
        if live is None:
            return await self._create_listener_pod(listener, desired)
        if listener_pod_spec_requires_recreation(live, desired):
            log.info("listener pod spec or config changed; recreating it", pod=objects.name(live))
            return await self.delete_listener_pod(live, listener)
        if listener_pod_is_dead(live):
            if await self.registration.runner_scale_set_gone(listener, live):  # Beyond: ARC #4370
                return await self.registration.hand_back(listener)
            if (wait := await self._crash_backoff_remaining(listener, live)) > 0:
                return Result(requeue_after=wait)
            log.info("listener pod is dead; recreating it", pod=objects.name(live))
            return await self.delete_listener_pod(live, listener)
        if objects.is_deleting(live):
            return Result()
        if self.resources.metadata_differs(live, desired):
            return await self.resources.update_metadata(live, desired)
        _publish_running(listener, live)
        return Result()

    async def _crash_backoff_remaining(self, listener: Object, pod: Object) -> float:
        """Count this death in the listener's status (once), then the seconds the dead pod is kept.

        The wait is `crash_backoff` of the consecutive deaths, counted from the ``listener``
        container's ``finishedAt`` (when it reports none: from when this controller first
        saw the pod dead). A death is counted once: ``status.lastFailureTime`` at or after
        the pod's creation means this pod's death is recorded. A pod that ran
        `CRASH_HEALTHY_RESET` before dying starts the count again at 1.

        Beyond: ARC #4656: a crash-looping listener was recreated at once, with no backoff and no trace.
        """
        status = objects.status(listener)
        terminated = _listener_terminated(pod)
        now = self.clock()
        finished = parse_time(terminated.get("finishedAt")) or now
        created = parse_time(objects.meta(pod).get("creationTimestamp"))
        last = parse_time(status.get("lastFailureTime"))
        failures = int(status.get("failureCount") or 0)
        if last is None or created is None or last < created:
            started = parse_time(terminated.get("startedAt")) or created or finished
            failures = 1 if finished - started >= CRASH_HEALTHY_RESET else failures + 1
            lazy = LazyCopy(listener)
            mutable_status(lazy.mutate()).update(failureCount=failures, lastFailureTime=_rfc3339(finished))
            await self.resources.client.status().patch(listener, lazy.merge_from())
            log.info("listener pod died", pod=objects.name(pod), failures=failures)
            last = finished
        remaining = (last + crash_backoff(failures) - now).total_seconds()
        return max(remaining, 0.0)

    async def _create_listener_pod(self, listener: Object, desired: Object) -> Result:
        """Ports: AutoscalingListenerReconciler.createListenerPod"""
        try:
            publish_listener_down(listener)
        except ValueError as err:
            log.error("config URL cannot be parsed; the listener could never start", error=str(err))
            return Result()
        await self.resources.client.create(desired)
        log.info("created listener pod", pod=desired["metadata"]["name"])
        return Result()

    async def delete_listener_pod(self, pod: Object, listener: Object) -> Result:
        """Ports: AutoscalingListenerReconciler.deleteListenerPod"""
        try:
            publish_listener_down(listener)
        except ValueError as err:  # only logged, as upstream
            log.error("could not publish listener down", error=str(err))
        if not objects.is_deleting(pod):
            try:
                await self.resources.client.delete(pod)
            except NotFoundError:
                pass
        return Result()
