"""reconcilekit.source: informer callbacks become events, predicates run in order, tombstones."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from structlog.testing import capture_logs

from reconcilekit import predicate, source
from reconcilekit.cache.interfaces import DeletedFinalStateUnknown
from reconcilekit.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from reconcilekit.handler import Funcs
from reconcilekit.reconcile import Request
from reconcilekit.workqueue import FakeClock, RateLimitingQueue

from .runtime_fakes import CONFIGMAP, FakeInformer, FakeInformers, obj, settle

Event = CreateEvent | UpdateEvent | DeleteEvent | GenericEvent


def recording() -> tuple[Funcs, list[Event]]:
    seen: list[Event] = []
    handler = Funcs(
        create_func=lambda e, q: seen.append(e),
        update_func=lambda e, q: seen.append(e),
        delete_func=lambda e, q: seen.append(e),
        generic_func=lambda e, q: seen.append(e),
    )
    return handler, seen


@contextlib.asynccontextmanager
async def started(src: source.Source, queue: RateLimitingQueue[Request]) -> Any:
    task = asyncio.create_task(src.start(queue), name="source-under-test")
    await settle()
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_informer_callbacks_become_events() -> None:
    """add, update and delete reach the handler as Create/Update/DeleteEvent."""
    informers = FakeInformers()
    informer = informers.informer_for(CONFIGMAP)
    informer.objects = [obj("initial")]
    handler, seen = recording()
    src = source.kind(informers, CONFIGMAP, handler, clock=FakeClock())
    async with started(src, RateLimitingQueue()):
        await asyncio.wait_for(src.wait_for_sync(), timeout=5)
        informer.add(obj("a"))
        informer.update(obj("a"), obj("a", labels={"x": "y"}))
        informer.delete(obj("a"))
    assert seen == [
        CreateEvent(obj("initial"), is_in_initial_list=True),
        CreateEvent(obj("a"), is_in_initial_list=False),
        UpdateEvent(obj("a"), obj("a", labels={"x": "y"})),
        DeleteEvent(obj("a"), delete_state_unknown=False),
    ]
    assert informer.handlers == {}  # unregistered at stop


async def test_a_tombstone_becomes_a_delete_with_unknown_state() -> None:
    """DeletedFinalStateUnknown: DeleteEvent(its object, delete_state_unknown=True)."""
    informer = FakeInformer()
    handler, seen = recording()
    async with started(source.informer(informer, handler), RateLimitingQueue()):
        informer.delete(DeletedFinalStateUnknown("default/a", obj("a")))
    assert seen == [DeleteEvent(obj("a"), delete_state_unknown=True)]


async def test_a_tombstone_without_an_object_is_dropped() -> None:
    """A nil tombstone never reaches predicates or the handler."""
    informer = FakeInformer()
    handler, seen = recording()
    async with started(source.informer(informer, handler), RateLimitingQueue()):
        informer.delete(DeletedFinalStateUnknown("default/a", None))
        informer.add(None)  # type: ignore[arg-type]
    assert seen == []


async def test_predicates_run_in_order_and_the_first_false_drops_the_event() -> None:
    """Later predicates are not asked once one says no."""
    asked: list[str] = []

    def judge(name: str, answer: bool) -> predicate.Funcs:
        def create(_: CreateEvent) -> bool:
            asked.append(name)
            return answer

        return predicate.Funcs(create_func=create)

    informer = FakeInformer()
    handler, seen = recording()
    src = source.informer(informer, handler, judge("first", True), judge("second", False), judge("third", True))
    async with started(src, RateLimitingQueue()):
        informer.add(obj("a"))
    assert asked == ["first", "second"]
    assert seen == []


async def test_a_failing_predicate_drops_only_that_event() -> None:
    """An exception in a predicate is logged; the informer keeps going."""
    informer = FakeInformer()
    handler, seen = recording()

    def explode(e: CreateEvent) -> bool:
        if e.object["metadata"]["name"] == "bad":
            raise KeyError("boom")
        return True

    src = source.informer(informer, handler, predicate.Funcs(create_func=explode))
    with capture_logs() as logs:
        async with started(src, RateLimitingQueue()):
            informer.add(obj("bad"))
            informer.add(obj("good"))
    assert seen == [CreateEvent(obj("good"))]
    assert [line["log_level"] for line in logs] == ["error"]


async def test_the_kind_source_is_synced_only_when_its_registration_is() -> None:
    """wait_for_sync waits for the handler registration, polled on the clock."""
    clock = FakeClock()
    informers = FakeInformers()
    informer = informers.informer_for(CONFIGMAP)
    informer.synced = False
    handler, _ = recording()
    src = source.kind(informers, CONFIGMAP, handler, clock=clock)
    async with started(src, RateLimitingQueue()):
        waiter = asyncio.create_task(src.wait_for_sync(), name="wait-for-sync")
        await settle()
        assert not waiter.done()
        informer.synced = True
        clock.advance(0.1)
        await asyncio.wait_for(waiter, timeout=5)


async def test_the_channel_source_hands_generic_events_to_the_handler() -> None:
    """Generic events from an asyncio.Queue pass the predicates and reach the handler."""
    events: asyncio.Queue[GenericEvent] = asyncio.Queue()
    handler, seen = recording()
    only_a = predicate.new_predicate_funcs(lambda o: o["metadata"]["name"] == "a")
    async with started(source.channel(events, handler, only_a), RateLimitingQueue()):
        events.put_nowait(GenericEvent(obj("a")))
        events.put_nowait(GenericEvent(obj("b")))
        await asyncio.wait_for(events.join(), timeout=5)
    assert seen == [GenericEvent(obj("a"))]


async def test_the_func_source_runs_until_cancelled() -> None:
    """func(fn) runs fn with the queue; the owner cancels it."""
    queue: RateLimitingQueue[Request] = RateLimitingQueue()

    async def produce(q: Any) -> None:
        q.add(Request("default", "a"))
        await asyncio.Event().wait()

    async with started(source.func(produce), queue):
        assert len(queue) == 1
