"""The event broadcaster: queue, create vs patch, retries, the 403 rule, flush on stop, the manager."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from structlog.testing import capture_logs

from reconcilekit.client.interfaces import GroupVersionKind, Object
from reconcilekit.errors import ForbiddenError, InvalidError, TransportError
from reconcilekit.manager import Options, new_manager
from reconcilekit.recorder import (
    EVENT_TYPE_NORMAL,
    EVENT_TYPE_WARNING,
    BroadcasterOptions,
    EventBroadcaster,
    EventRecorder,
)
from reconcilekit.testing import Call, FakeClient, FakeRecorder, InterceptorClient, eventually

EVENT = GroupVersionKind("", "v1", "Event")
T0 = 1_790_000_000.0
CM = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "settings", "namespace": "team-a", "uid": "u-1"},
}


def _in(namespace: str) -> Object:
    return {**CM, "metadata": {**CM["metadata"], "namespace": namespace}}


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def running(broadcaster: EventBroadcaster) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(broadcaster.start(), name="broadcaster")
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _events(fake: FakeClient, namespace: str = "team-a") -> list[Object]:
    return (await fake.list(EVENT, namespace=namespace)).items


def _refusing(fake: FakeClient, refuse: Callable[[Call], bool]) -> InterceptorClient:
    def before(call: Call) -> None:
        if call.kind == "Event" and refuse(call):
            raise ForbiddenError(403, "Forbidden", f'events is forbidden: cannot {call.verb} resource "events"')

    return InterceptorClient(fake, before=before)


async def test_event_is_created_in_the_objects_namespace() -> None:
    """One Event: created in the involved object's namespace, source.component = the recorder's name."""
    fake = FakeClient()
    broadcaster = EventBroadcaster(fake)
    recorder = broadcaster.new_recorder("configmap-controller")
    async with running(broadcaster):
        recorder.event(CM, EVENT_TYPE_NORMAL, "Synced", "all good")
        await eventually(lambda: fake.requests != [])
        [event] = await _events(fake)
    assert event["source"] == {"component": "configmap-controller"}
    assert event["reportingComponent"] == "configmap-controller"
    assert event["involvedObject"]["uid"] == "u-1"
    assert (event["type"], event["reason"], event["message"], event["count"]) == ("Normal", "Synced", "all good", 1)


async def test_repeated_event_patches_the_first_with_count_2() -> None:
    """The same Event twice: one create, one patch, one stored Event with count 2."""
    fake = FakeClient()
    clock = Clock()
    broadcaster = EventBroadcaster(fake, clock=clock)
    recorder = broadcaster.new_recorder("c")
    async with running(broadcaster):
        recorder.event(CM, EVENT_TYPE_WARNING, "Failed", "boom")
        clock.now += 5
        recorder.eventf(CM, EVENT_TYPE_WARNING, "Failed", "b%s", "oom")
        await eventually(lambda: len(fake.requests) >= 2)
    assert [r.verb for r in fake.requests] == ["create", "patch"]
    [event] = await _events(fake)
    assert event["count"] == 2
    assert event["lastTimestamp"] == "2026-09-21T14:13:25Z"
    assert event["firstTimestamp"] == "2026-09-21T14:13:20Z"


async def test_repeat_of_a_deleted_event_is_created_again() -> None:
    """The patch finds no Event (deleted, or expired by its TTL): it is created under the same name."""
    fake = FakeClient()
    broadcaster = EventBroadcaster(fake)
    recorder = broadcaster.new_recorder("c")
    async with running(broadcaster):
        recorder.event(CM, EVENT_TYPE_NORMAL, "Synced", "ok")
        await eventually(lambda: len(fake.requests) == 1)
        [first] = await _events(fake)
        await fake.delete(first)
        recorder.event(CM, EVENT_TYPE_NORMAL, "Synced", "ok")
        await eventually(lambda: [r.verb for r in fake.requests][-2:] == ["patch", "create"])
    [again] = await _events(fake)
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert again["count"] == 2


async def test_full_queue_drops_new_events_and_counts_them() -> None:
    """Recording never waits: past queue_size the new Event is dropped, counted and logged once."""
    broadcaster = EventBroadcaster(FakeClient(), BroadcasterOptions(queue_size=2))
    recorder = broadcaster.new_recorder("c")
    with capture_logs() as logs:
        for i in range(5):
            recorder.event(CM, EVENT_TYPE_NORMAL, "R", str(i))
    assert broadcaster.dropped == {"queue_full": 3}
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["event queue full; dropping events"]


async def test_forbidden_is_logged_once_at_info_and_the_namespace_goes_quiet() -> None:
    """A 403: one info line, no more requests for that namespace; other namespaces still get Events.

    Beyond client-go (an error line per refused Event): ARC's chart grants no rights on events.
    """
    fake = FakeClient()
    client = _refusing(fake, lambda call: call.namespace == "team-a")
    broadcaster = EventBroadcaster(client)
    recorder = broadcaster.new_recorder("c")
    with capture_logs() as logs:
        async with running(broadcaster):
            for i in range(5):
                recorder.event(CM, EVENT_TYPE_WARNING, f"R{i}", "x")
            recorder.event(_in("team-b"), EVENT_TYPE_WARNING, "R", "x")
            await eventually(lambda: client.count("create", "Event") == 2)
            await eventually(lambda: broadcaster.dropped.get("forbidden") == 5)
    assert [(c.verb, c.namespace) for c in client.calls] == [("create", "team-a"), ("create", "team-b")]
    forbidden = [e for e in logs if "forbidden" in e["event"]]
    assert len(forbidden) == 1
    assert forbidden[0]["log_level"] == "info"
    assert forbidden[0]["namespace"] == "team-a"
    assert forbidden[0]["verb"] == "create"
    assert not [e for e in logs if e["log_level"] == "error"]
    assert len(await _events(fake, "team-b")) == 1


async def test_forbidden_namespace_is_probed_again_after_the_quiet_period() -> None:
    """After forbidden_retry_after one Event tries again: still 403 is quiet; allowed resumes with a line."""
    fake = FakeClient()
    allowed = False
    client = _refusing(fake, lambda call: not allowed)
    clock = Clock()
    broadcaster = EventBroadcaster(client, BroadcasterOptions(forbidden_retry_after=60), clock=clock)
    recorder = broadcaster.new_recorder("c")
    with capture_logs() as logs:
        async with running(broadcaster):
            recorder.event(CM, EVENT_TYPE_NORMAL, "A", "x")
            await eventually(lambda: client.count("create", "Event") == 1)
            clock.now += 61
            recorder.event(CM, EVENT_TYPE_NORMAL, "B", "x")
            await eventually(lambda: client.count("create", "Event") == 2)
            recorder.event(CM, EVENT_TYPE_NORMAL, "C", "x")  # quiet again: no request
            await eventually(lambda: broadcaster.dropped.get("forbidden") == 3)
            allowed = True
            clock.now += 61
            recorder.event(CM, EVENT_TYPE_NORMAL, "D", "x")
            await eventually(lambda: len(fake.requests) == 1)
    assert client.count("create", "Event") == 3
    assert [e["event"] for e in logs if e["log_level"] == "info"] == [
        "events forbidden; not recording events in this namespace",
        "events are written again",
    ]


async def test_refused_event_is_not_retried() -> None:
    """A 422 is final: one request, one error line, the next Event is written."""
    fake = FakeClient()

    def before(call: Call) -> None:
        if call.obj is not None and call.obj.get("reason") == "Bad":
            raise InvalidError(422, "Invalid", "Event is invalid")

    client = InterceptorClient(fake, before=before)
    broadcaster = EventBroadcaster(client)
    recorder = broadcaster.new_recorder("c")
    with capture_logs() as logs:
        async with running(broadcaster):
            recorder.event(CM, EVENT_TYPE_NORMAL, "Bad", "x")
            recorder.event(CM, EVENT_TYPE_NORMAL, "Good", "x")
            await eventually(lambda: len(fake.requests) == 1)
    assert client.count("create", "Event") == 2
    assert broadcaster.dropped == {"rejected": 1}
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["server rejected event (will not retry)"]


async def test_unanswered_write_is_retried() -> None:
    """No answer (a transport error) is tried again after retry_sleep, up to max_tries."""
    fake = FakeClient()
    failures = 2

    def before(call: Call) -> None:
        nonlocal failures
        if failures:
            failures -= 1
            raise TransportError("connection reset")

    client = InterceptorClient(fake, before=before)
    broadcaster = EventBroadcaster(client, BroadcasterOptions(retry_sleep=0.01))
    recorder = broadcaster.new_recorder("c")
    with capture_logs():
        async with running(broadcaster):
            recorder.event(CM, EVENT_TYPE_NORMAL, "R", "x")
            await eventually(lambda: len(fake.requests) == 1)
    assert client.count("create", "Event") == 3


async def test_retries_end_after_max_tries() -> None:
    def before(call: Call) -> None:
        raise TransportError("connection refused")

    client = InterceptorClient(FakeClient(), before=before)
    broadcaster = EventBroadcaster(client, BroadcasterOptions(retry_sleep=0.0, max_tries=3))
    with capture_logs() as logs:
        async with running(broadcaster):
            broadcaster.new_recorder("c").event(CM, EVENT_TYPE_NORMAL, "R", "x")
            await eventually(lambda: broadcaster.dropped.get("retries_exhausted") == 1)
    assert client.count("create", "Event") == 3
    assert "unable to write event (retry limit exceeded)" in [e["event"] for e in logs]


async def test_stop_flushes_what_is_queued_then_drops() -> None:
    """Events queued before start and still queued at stop are written; after stop they are dropped."""
    fake = FakeClient()
    broadcaster = EventBroadcaster(fake)
    recorder = broadcaster.new_recorder("c")
    for i in range(3):
        recorder.event(CM, EVENT_TYPE_NORMAL, f"R{i}", "queued before start")
    task = asyncio.create_task(broadcaster.start(), name="broadcaster")
    await asyncio.sleep(0)  # it takes the first and starts writing it
    task.cancel()  # the flush finishes that one and writes the other two
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(await _events(fake)) == 3
    recorder.event(CM, EVENT_TYPE_NORMAL, "Late", "after stop")
    assert broadcaster.dropped == {"stopped": 1}
    with pytest.raises(RuntimeError):
        await broadcaster.start()


async def test_flush_is_bounded() -> None:
    """A sink that hangs cannot hold the stop longer than flush_timeout."""

    async def before(call: Call) -> None:
        await asyncio.sleep(60)

    broadcaster = EventBroadcaster(
        InterceptorClient(FakeClient(), before=before), BroadcasterOptions(flush_timeout=0.1)
    )
    recorder = broadcaster.new_recorder("c")
    for i in range(2):
        recorder.event(CM, EVENT_TYPE_NORMAL, f"R{i}", "x")
    task = asyncio.create_task(broadcaster.start(), name="broadcaster")
    await asyncio.sleep(0)
    task.cancel()
    with capture_logs() as logs, pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert broadcaster.dropped == {"stopped": 2}
    assert "event broadcaster stopped with events unwritten" in [e["event"] for e in logs]


@pytest.mark.parametrize(
    ("obj", "event_type", "logged"),
    [
        ({"metadata": {"name": "x"}}, "Normal", "could not construct reference, will not report event"),
        (CM, "Info", "unsupported event type"),
    ],
)
async def test_bad_object_or_type_is_logged_not_raised(obj: Any, event_type: str, logged: str) -> None:
    broadcaster = EventBroadcaster(FakeClient())
    with capture_logs() as logs:
        broadcaster.new_recorder("c").event(obj, event_type, "R", "x")
    assert [e["event"] for e in logs if e["log_level"] == "error"] == [logged]


async def test_manager_recorder_writes_through_the_managers_broadcaster() -> None:
    """mgr.get_event_recorder_for: Events written while the manager runs; queued ones flushed at stop."""
    fake = FakeClient()
    mgr = new_manager(None, Options(metrics_bind_address="0"), client=fake)
    recorder = mgr.get_event_recorder_for("my-controller")
    recorder.event(CM, EVENT_TYPE_NORMAL, "Early", "before start")
    task = asyncio.create_task(mgr.start(), name="manager")
    try:
        await eventually(lambda: any(r.verb == "create" and r.kind == "Event" for r in fake.requests))
        recorder.annotated_event(CM, {"a": "b"}, EVENT_TYPE_NORMAL, "Annotated", "while running")
        await eventually(lambda: sum(r.kind == "Event" for r in fake.requests) == 2)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    events = {e["reason"]: e for e in await _events(fake)}
    assert set(events) == {"Early", "Annotated"}
    assert events["Annotated"]["metadata"]["annotations"] == {"a": "b"}
    assert events["Early"]["source"] == {"component": "my-controller"}


class _RecordsWhileStopping:
    """A leader-elected runnable that records an Event as it is cancelled (a controller stopping)."""

    def __init__(self, recorder: EventRecorder) -> None:
        self.recorder = recorder
        self.running = asyncio.Event()

    async def start(self) -> None:
        self.running.set()
        try:
            await asyncio.Future()
        finally:
            self.recorder.event(CM, EVENT_TYPE_NORMAL, "Stopping", "recorded while the manager stops")


async def test_manager_stops_the_broadcaster_after_the_controllers() -> None:
    """An Event a controller records while the manager stops is still written (the flush comes later)."""
    fake = FakeClient()
    mgr = new_manager(None, Options(metrics_bind_address="0"), client=fake)
    runnable = _RecordsWhileStopping(mgr.get_event_recorder_for("c"))
    mgr.add(runnable)
    task = asyncio.create_task(mgr.start(), name="manager")
    await asyncio.wait_for(runnable.running.wait(), 10)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert [e["reason"] for e in await _events(fake)] == ["Stopping"]


def test_fake_recorder_keeps_events_in_memory() -> None:
    """FakeRecorder: every call kept, with client-go's "<type> <reason> <message>" strings."""
    recorder = FakeRecorder()
    recorder.event(CM, EVENT_TYPE_NORMAL, "Synced", "ok")
    recorder.eventf(CM, EVENT_TYPE_WARNING, "Failed", "%d tries", 3)
    recorder.annotated_event(CM, {"k": "v"}, EVENT_TYPE_NORMAL, "Noted", "with annotations")
    assert recorder.strings() == ["Normal Synced ok", "Warning Failed 3 tries", "Normal Noted with annotations"]
    assert recorder.events[2].annotations == {"k": "v"}
    assert recorder.events[0].kind == "ConfigMap"
    recorder.clear()
    assert recorder.events == []
