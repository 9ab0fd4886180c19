"""The listener's Ready condition after a pass that raised nothing: running, starting, failed, crash-looping
or unable to start.

Beyond: ARC #4656: a crash-looping listener showed nothing on any object; its failure count
(`pod.ListenerPod`) now reads as ``Ready=False``: ``ListenerFailed`` after one death,
``CrashLoopBackOff`` from the second in a row. A pod that cannot start (image pull, container
config, scheduling) reads as ``ListenerCannotStart``, so its scale set is not Running.

Ports: none; Beyond: ARC #4656: the listener kind has no conditions upstream.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from arc_controllers.api.v1alpha1 import POD, objects
from arc_controllers.api.v1alpha1.condition import ConditionReason
from arc_controllers.controllers.autoscalinglistener.pod import crash_backoff, listener_pod_is_dead
from arc_controllers.controllers.autoscalinglistener.resources import ListenerResources
from arc_controllers.controllers.conditions import ReadyConditions
from arc_controllers.controllers.runnerstates import parse_time
from arc_controllers.resourcebuilder.listener import LISTENER_CONTAINER_NAME
from reconcilekit.client.interfaces import Object
from reconcilekit.conditions import CONDITION_FALSE, CONDITION_TRUE, CONDITION_UNKNOWN

__all__ = ["CANNOT_START_REASONS", "listener_container_running", "listener_pod_cannot_start", "report_ready"]

CANNOT_START_REASONS: Final = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
"""Waiting reasons of a container that will not start without a change (image, config, node)."""


def listener_container_running(pod: Object) -> bool:
    """Python only: the pod's ``listener`` container reports ``state.running``."""
    for container in objects.status(pod).get("containerStatuses") or []:
        if container.get("name") == LISTENER_CONTAINER_NAME and (container.get("state") or {}).get("running"):
            return True
    return False


def listener_pod_cannot_start(pod: Object) -> str | None:
    """Why the pod cannot start, or None: a container waiting with a reason in `CANNOT_START_REASONS`
    or ``PodScheduled=False`` (Unschedulable). A pod merely pending (no status yet, a slow pull)
    is not counted: without a kubelet or scheduler verdict it may still start.

    Beyond: issue 19 rule 4: the phase is not Running while the listener cannot run.
    """
    status = objects.status(pod)
    containers: list[dict[str, Any]] = [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]
    for container in containers:
        waiting = (container.get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason") or "")
        if reason in CANNOT_START_REASONS:
            detail = f": {waiting['message']}" if waiting.get("message") else ""
            return f"container {container.get('name', '?')} is waiting: {reason}{detail}"
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == CONDITION_FALSE:
            detail = f": {condition['message']}" if condition.get("message") else ""
            return f"pod cannot be scheduled: {condition.get('reason') or 'Unschedulable'}{detail}"
    return None


def _exit_code(pod: Object | None) -> str:
    """Python only: the dead ``listener`` container's exit code, ``?`` when the pod is gone."""
    for container in objects.status(pod or {}).get("containerStatuses") or []:
        if container.get("name") == LISTENER_CONTAINER_NAME:
            terminated = (container.get("state") or {}).get("terminated") or {}
            if "exitCode" in terminated:
                return str(terminated["exitCode"])
    return "?"


def _restart_at(last_failure: str | None, wait: timedelta) -> str:
    """Python only: ``lastFailureTime`` plus the backoff, RFC 3339 (``?`` when unknown)."""
    last = parse_time(last_failure)
    if last is None:
        return "?"
    return (last + wait).strftime("%Y-%m-%dT%H:%M:%SZ")


async def report_ready(conditions: ReadyConditions, resources: ListenerResources, listener: Object) -> None:
    """Set the listener's Ready: True while its container runs; False ``ListenerCannotStart`` while
    its pod cannot start; False ``ListenerFailed`` after one death and ``CrashLoopBackOff`` from
    the second death in a row (while no pod runs); else Unknown (ListenerStarting).

    Reads the pod from the cache; a status patch only when the condition changes.

    Beyond: ARC #4656: the crash count in status becomes a condition a scale set and an operator read.
    """
    name = objects.name(listener)
    subject = f"AutoscalingListener {objects.namespace(listener)}/{name}"
    pod = await resources.get(POD, objects.namespace(listener), name)
    status = objects.status(listener)
    failures = int(status.get("failureCount") or 0)
    cannot_start = None if pod is None or listener_pod_is_dead(pod) else listener_pod_cannot_start(pod)
    if pod is not None and listener_container_running(pod) and not listener_pod_is_dead(pod):
        await conditions.set(
            listener, status=CONDITION_TRUE, reason=ConditionReason.RUNNING, message=f"listener pod {name} runs"
        )
    elif cannot_start is not None:
        await conditions.set(
            listener,
            status=CONDITION_FALSE,
            reason=ConditionReason.LISTENER_CANNOT_START,
            message=f"{subject}: listener pod {name} cannot start: {cannot_start}",
        )
    elif failures > 0:
        wait = crash_backoff(failures)
        last = status.get("lastFailureTime")
        restart = f"the next pod starts at {_restart_at(last, wait)} ({int(wait.total_seconds())} s after that death)"
        if failures == 1:
            reason = ConditionReason.LISTENER_FAILED
            message = (
                f"{subject}: listener pod {name} died at {last or '?'} (exit code {_exit_code(pod)}); {restart}"
                " (see the dead pod's listener container log)"
            )
        else:
            reason = ConditionReason.CRASH_LOOP_BACK_OFF
            message = (
                f"{subject}: listener pod died {failures} time(s) in a row, last at {last or '?'}"
                f" (exit code {_exit_code(pod)}); {restart} (see the dead pod's listener container log)"
            )
        await conditions.set(listener, status=CONDITION_FALSE, reason=reason, message=message)
    else:
        await conditions.set(
            listener,
            status=CONDITION_UNKNOWN,
            reason=ConditionReason.LISTENER_STARTING,
            message=f"listener pod {name} is not running yet",
        )
