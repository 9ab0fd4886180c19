"""A crash-looping listener pod is replaced with exponential backoff, its deaths counted in status (ARC #4656)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from arc_controllers.api.v1alpha1 import AUTOSCALING_LISTENER
from arc_controllers.controllers.autoscalinglistener.pod import ListenerPod, crash_backoff
from arc_controllers.controllers.autoscalinglistener.resources import ListenerResources
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.testing import FakeClient

NS = "arc-system"
KEY = ObjectKey(NS, "listener")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _listener() -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingListener",
        "metadata": {"name": "listener", "namespace": NS},
        "spec": {},
    }


def _dead_pod(created: datetime, started: datetime, finished: datetime) -> dict[str, Any]:
    terminated = {"exitCode": 1, "startedAt": _stamp(started), "finishedAt": _stamp(finished)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "listener", "namespace": NS, "uid": f"pod-{created.timestamp()}",
                     "creationTimestamp": _stamp(created)},
        "status": {"phase": "Failed", "containerStatuses": [{"name": "listener", "state": {"terminated": terminated}}]},
    }  # fmt: skip


def test_backoff_doubles_from_two_seconds_up_to_five_minutes_arc_4656() -> None:
    assert [crash_backoff(n).total_seconds() for n in range(10)] == [0, 2, 4, 8, 16, 32, 64, 128, 256, 300]
    assert crash_backoff(1000) == timedelta(minutes=5)


async def test_dead_listener_pod_is_kept_for_the_backoff_and_counted_once_arc_4656() -> None:
    """Each death counts once; the wait is counted from finishedAt; 10 min of healthy running resets the count."""
    fake = FakeClient([_listener()])
    now = [T0]
    pod = ListenerPod(resources=ListenerResources(client=fake), clock=lambda: now[0])

    async def remaining(dead: dict[str, Any]) -> float:
        listener = await fake.get(AUTOSCALING_LISTENER, KEY)
        return await pod._crash_backoff_remaining(listener, dead)

    async def status() -> tuple[int, str]:
        got = (await fake.get(AUTOSCALING_LISTENER, KEY)).get("status") or {}
        return got.get("failureCount"), got.get("lastFailureTime")

    first = _dead_pod(T0 - timedelta(seconds=1), T0 - timedelta(seconds=1), T0)
    now[0] = T0 + timedelta(seconds=0.5)
    assert await remaining(first) == 1.5
    now[0] = T0 + timedelta(seconds=1)
    assert await remaining(first) == 1.0  # the same death: not counted again
    assert await status() == (1, _stamp(T0))
    now[0] = T0 + timedelta(seconds=2)
    assert await remaining(first) == 0.0

    second = _dead_pod(T0 + timedelta(seconds=2), T0 + timedelta(seconds=2), T0 + timedelta(seconds=3))
    now[0] = T0 + timedelta(seconds=3)
    assert await remaining(second) == 4.0
    assert await status() == (2, _stamp(T0 + timedelta(seconds=3)))

    healthy = _dead_pod(T0 + timedelta(seconds=10), T0 + timedelta(seconds=10), T0 + timedelta(minutes=11))
    now[0] = T0 + timedelta(minutes=11)
    assert await remaining(healthy) == 2.0
    assert (await status())[0] == 1
