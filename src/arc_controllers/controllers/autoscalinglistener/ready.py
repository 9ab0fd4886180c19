"""The listener's Ready condition after a pass that raised nothing: running, starting or crash-looping.

Beyond: ARC #4656: a crash-looping listener showed nothing on any object; its failure count
(`pod.ListenerPod`) now reads as ``Ready=False``, reason ``CrashLoopBackOff``.
"""

from __future__ import annotations

from arc_controllers.api.v1alpha1 import POD, objects
from arc_controllers.api.v1alpha1.condition import ConditionReason
from arc_controllers.controllers.autoscalinglistener.pod import crash_backoff, listener_pod_is_dead
from arc_controllers.controllers.autoscalinglistener.resources import ListenerResources
from arc_controllers.controllers.conditions import ReadyConditions
from arc_controllers.resourcebuilder.listener import LISTENER_CONTAINER_NAME
from reconcilekit.client.interfaces import Object
from reconcilekit.conditions import CONDITION_FALSE, CONDITION_TRUE, CONDITION_UNKNOWN

__all__ = ["listener_container_running", "report_ready"]


def listener_container_running(pod: Object) -> bool:
    """Python only: the pod's ``listener`` container reports ``state.running``."""
    for container in objects.status(pod).get("containerStatuses") or []:
        if container.get("name") == LISTENER_CONTAINER_NAME and (container.get("state") or {}).get("running"):
            return True
    return False


async def report_ready(conditions: ReadyConditions, resources: ListenerResources, listener: Object) -> None:
    """Set the listener's Ready: True while its container runs; False (CrashLoopBackOff) while
    deaths are counted and no pod runs yet; else Unknown (ListenerStarting).

    Reads the pod from the cache; a status patch only when the condition changes.

    Beyond: ARC #4656: the crash count in status becomes a condition a scale set and an operator read.
    """
    name = objects.name(listener)
    pod = await resources.get(POD, objects.namespace(listener), name)
    status = objects.status(listener)
    failures = int(status.get("failureCount") or 0)
    if pod is not None and listener_container_running(pod) and not listener_pod_is_dead(pod):
        await conditions.set(
            listener, status=CONDITION_TRUE, reason=ConditionReason.RUNNING, message=f"listener pod {name} runs"
        )
    elif failures > 0:
        wait = int(crash_backoff(failures).total_seconds())
        await conditions.set(
            listener,
            status=CONDITION_FALSE,
            reason=ConditionReason.CRASH_LOOP_BACK_OFF,
            message=(
                f"AutoscalingListener {objects.namespace(listener)}/{name}: listener pod died {failures} time(s)"
                f" in a row, last at {status.get('lastFailureTime', '?')}; the next pod starts {wait} s after"
                " that death (see the dead pod's listener container log)"
            ),
        )
    else:
        await conditions.set(
            listener,
            status=CONDITION_UNKNOWN,
            reason=ConditionReason.LISTENER_STARTING,
            message=f"listener pod {name} is not running yet",
        )
