"""autoscalinglistener.ready: the listener's Ready reason for each state its pod can be in.

Beyond: ARC #4656 and issue 19 rule 4: one death is ListenerFailed, two in a row
CrashLoopBackOff; a pod that cannot start is ListenerCannotStart (so the scale set is Pending).
"""

from __future__ import annotations

from typing import Any

import pytest

from arc_controllers.controllers.autoscalinglistener.ready import listener_pod_cannot_start, report_ready


class _Conditions:
    def __init__(self) -> None:
        self.set_to: dict[str, Any] = {}

    async def set(self, obj: dict[str, Any], *, status: str, reason: str, message: str) -> bool:
        self.set_to = {"status": status, "reason": reason, "message": message}
        return True


class _Resources:
    def __init__(self, pod: dict[str, Any] | None) -> None:
        self.pod = pod

    async def get(self, gvk: Any, namespace: str, name: str) -> dict[str, Any] | None:
        return self.pod


def listener(**status: Any) -> dict[str, Any]:
    meta = {"name": "l", "namespace": "arc", "uid": "u1", "generation": 1}
    return {"kind": "AutoscalingListener", "metadata": meta, "status": status}


def pod(*, state: dict[str, Any] | None = None, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Pending", "conditions": conditions or []}
    if state is not None:
        status["containerStatuses"] = [{"name": "listener", "state": state}]
    return {"kind": "Pod", "metadata": {"name": "l", "namespace": "arc"}, "status": status}


async def ready_of(the_listener: dict[str, Any], the_pod: dict[str, Any] | None) -> dict[str, Any]:
    conditions = _Conditions()
    await report_ready(conditions, _Resources(the_pod), the_listener)  # type: ignore[arg-type]
    return conditions.set_to


DEAD = {"terminated": {"exitCode": 3, "finishedAt": "2026-12-04T10:00:00Z"}}


async def test_first_death_is_listener_failed_with_exit_code_and_restart_time_arc_4656() -> None:
    condition = await ready_of(listener(failureCount=1, lastFailureTime="2026-12-04T10:00:00Z"), pod(state=DEAD))
    assert (condition["status"], condition["reason"]) == ("False", "ListenerFailed")
    assert "exit code 3" in condition["message"]
    assert "the next pod starts at 2026-12-04T10:00:02Z" in condition["message"]


async def test_second_death_in_a_row_is_crash_loop_back_off_arc_4656() -> None:
    condition = await ready_of(listener(failureCount=2, lastFailureTime="2026-12-04T10:00:00Z"), pod(state=DEAD))
    assert (condition["status"], condition["reason"]) == ("False", "CrashLoopBackOff")
    assert "died 2 time(s) in a row" in condition["message"]
    assert "2026-12-04T10:00:04Z" in condition["message"]


@pytest.mark.parametrize(
    "reason", ["ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "InvalidImageName"]
)
async def test_a_container_that_cannot_start_is_listener_cannot_start(reason: str) -> None:
    waiting = {"waiting": {"reason": reason, "message": "no such image"}}
    condition = await ready_of(listener(), pod(state=waiting))
    assert (condition["status"], condition["reason"]) == ("False", "ListenerCannotStart")
    assert f"container listener is waiting: {reason}: no such image" in condition["message"]


async def test_an_unschedulable_pod_is_listener_cannot_start() -> None:
    scheduled = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
    condition = await ready_of(listener(), pod(conditions=[scheduled]))
    assert (condition["status"], condition["reason"]) == ("False", "ListenerCannotStart")
    assert "pod cannot be scheduled: Unschedulable: 0/3 nodes" in condition["message"]


async def test_a_pod_still_pending_or_creating_is_starting() -> None:
    assert (await ready_of(listener(), pod()))["reason"] == "ListenerStarting"
    creating = {"waiting": {"reason": "ContainerCreating"}}
    assert (await ready_of(listener(), pod(state=creating)))["reason"] == "ListenerStarting"
    assert listener_pod_cannot_start(pod(conditions=[{"type": "PodScheduled", "status": "True"}])) is None
    running = {"running": {"startedAt": "2026-12-04T10:00:00Z"}}
    assert (await ready_of(listener(failureCount=2), pod(state=running)))["reason"] == "Running"
