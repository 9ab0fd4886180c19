"""reconcilekit.controller.yield_worker: a reconcile gives its worker back while it awaits slow I/O."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from reconcilekit import source
from reconcilekit.controller import Options, new_controller, yield_worker
from reconcilekit.controller._workers import WorkerSlots
from reconcilekit.handler import EnqueueRequestForObject
from reconcilekit.metrics import REGISTRY
from reconcilekit.reconcile import Request, Result
from reconcilekit.workqueue import FakeClock, ItemExponentialFailureRateLimiter

from .runtime_fakes import CONFIGMAP, FakeInformers, obj, settle

_names = itertools.count()


class SlowService:
    """A reconciler whose every request waits on one "round trip" (a gate) inside `yield_worker`.

    It records how many reconciles are inside the block and outside it at each moment.
    """

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.inside: set[str] = set()
        self.outside: set[str] = set()
        self.peak_inside = 0
        self.peak_outside = 0
        self.calls: list[str] = []
        self.overlaps: list[str] = []
        self.finished: list[str] = []

    def _enter(self, where: set[str], name: str) -> None:
        where.add(name)
        self.peak_inside = max(self.peak_inside, len(self.inside))
        self.peak_outside = max(self.peak_outside, len(self.outside))

    async def reconcile(self, request: Request, /) -> Result:
        name = request.name
        if name in self.inside or name in self.outside:
            self.overlaps.append(name)
        self.calls.append(name)
        self._enter(self.outside, name)
        await asyncio.sleep(0)  # work before the round trip, holding the worker
        self.outside.discard(name)
        self._enter(self.inside, name)
        try:
            async with yield_worker():
                await self.gate.wait()
        finally:
            self.inside.discard(name)
        self._enter(self.outside, name)
        await asyncio.sleep(0)  # work after it, holding a worker again
        self.outside.discard(name)
        self.finished.append(name)
        return Result()


class Env:
    def __init__(self, reconciler: Any, **options: Any) -> None:
        self.informers = FakeInformers()
        self.informer = self.informers.informer_for(CONFIGMAP)
        self.name = f"test_yield_{next(_names)}"
        clock = FakeClock()
        self.controller = new_controller(
            self.name,
            reconciler,
            Options(clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(), **options),
        )
        self.controller.watch(source.kind(self.informers, CONFIGMAP, EnqueueRequestForObject(), clock=clock))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[asyncio.Task[None]]:
        task = asyncio.create_task(self.controller.start())
        await settle()
        try:
            yield task
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def worker_tasks(self) -> list[asyncio.Task[Any]]:
        return [t for t in asyncio.all_tasks() if t.get_name().startswith(f"{self.name}-worker")]

    def active_workers(self) -> float:
        return REGISTRY.get_sample_value("controller_runtime_active_workers", {"controller": self.name}) or 0.0


async def test_two_workers_start_every_round_trip_at_once() -> None:
    """With 2 workers and room for 10 yielded reconciles, 10 requests all wait on the service at once.

    Without `yield_worker` (``max_yielded_reconciles`` 0) the same 10 requests wait 2 at a time:
    10 requests take 5 round trips instead of 1.
    """
    service = SlowService()
    env = Env(service, max_concurrent_reconciles=2, max_yielded_reconciles=10)
    async with env.running():
        for n in range(10):
            env.informer.add(obj(f"r{n}"))
        await settle(100)
        assert len(service.inside) == 10  # one round trip in flight for every request
        assert env.active_workers() == 0  # no worker held while they wait
        service.gate.set()
        await settle(200)
        assert sorted(service.finished) == sorted(f"r{n}" for n in range(10))
        assert env.active_workers() == 0
        assert len(env.worker_tasks()) == 2  # each yielded worker retired once its reconcile ended
    assert service.peak_outside <= 2  # never more than the 2 workers outside the block
    assert service.overlaps == []


async def test_without_room_to_yield_the_block_keeps_the_worker() -> None:
    """The default (0): `yield_worker` is a no-op, 2 workers mean 2 round trips at a time."""
    service = SlowService()
    env = Env(service, max_concurrent_reconciles=2)
    async with env.running():
        for n in range(10):
            env.informer.add(obj(f"r{n}"))
        await settle(100)
        assert len(service.inside) == 2
        assert env.active_workers() == 2
        service.gate.set()
        await settle(300)
        assert len(service.finished) == 10


async def test_yielded_reconciles_are_bounded() -> None:
    """With room for 3, at most 3 wait without a worker; 2 more wait in the block holding theirs."""
    service = SlowService()
    env = Env(service, max_concurrent_reconciles=2, max_yielded_reconciles=3)
    async with env.running():
        for n in range(10):
            env.informer.add(obj(f"r{n}"))
        await settle(100)
        assert len(service.inside) == 5  # 3 yielded + 2 that kept their worker
        assert env.active_workers() == 2
        service.gate.set()
        await settle(400)
        assert len(service.finished) == 10
    assert service.peak_inside == 5
    assert service.peak_outside <= 2


async def test_a_yielded_key_is_not_handed_out_again() -> None:
    """A request waiting in the block is still in flight: re-adding its key starts nothing until it ends."""
    service = SlowService()
    env = Env(service, max_concurrent_reconciles=2, max_yielded_reconciles=10)
    async with env.running():
        env.informer.add(obj("a"))
        await settle()
        assert service.inside == {"a"}
        for _ in range(5):
            env.informer.update(obj("a"), obj("a"))
        env.informer.add(obj("b"))
        await settle(50)
        assert service.calls == ["a", "b"]  # the free workers took b, never a second a
        service.gate.set()
        await settle(200)
    assert service.overlaps == []
    assert service.calls.count("a") == 2  # the adds during processing: exactly one more run


async def test_a_reconcile_coming_back_goes_before_new_requests() -> None:
    """Back from the block, a reconcile waits for a free worker, and new requests wait behind it."""
    order: list[str] = []
    release = {name: asyncio.Event() for name in ("y", "h1", "h2", "n")}

    class Mixed:
        async def reconcile(self, request: Request, /) -> Result:
            name = request.name
            order.append(f"start {name}")
            if name == "y":
                async with yield_worker():
                    await release["y"].wait()
                order.append("y back")
                return Result()
            await release[name].wait()  # holds its worker
            order.append(f"end {name}")
            return Result()

    env = Env(Mixed(), max_concurrent_reconciles=2, max_yielded_reconciles=5)
    async with env.running():
        env.informer.add(obj("y"))
        await settle()
        env.informer.add(obj("h1"))
        env.informer.add(obj("h2"))
        await settle()
        assert order == ["start y", "start h1", "start h2"]  # y yielded: two workers hold h1 and h2
        env.informer.add(obj("n"))
        release["y"].set()
        await settle(50)
        assert order == ["start y", "start h1", "start h2"]  # y waits for a worker, n waits too
        release["h1"].set()
        await settle(50)
        assert order[3:5] == ["end h1", "y back"]  # the freed worker went to y, not to n
        assert "start n" in order[5:]
        release["h2"].set()
        release["n"].set()
        await settle(50)


async def test_an_error_after_the_block_is_handled_as_any_reconcile_error() -> None:
    """An exception raised inside the block takes a worker back and goes through the outcome table."""

    class Failing:
        count = 0

        async def reconcile(self, request: Request, /) -> Result:
            self.count += 1
            if self.count == 1:
                async with yield_worker():
                    await asyncio.sleep(0)
                    raise RuntimeError("service said no")
            return Result()

    failing = Failing()
    env = Env(failing, max_concurrent_reconciles=1, max_yielded_reconciles=5)
    with capture_logs() as logs:
        async with env.running():
            env.informer.add(obj("a"))
            await settle(50)
            # rate-limited requeue after 5 ms on the fake clock: the reconcile ran once, the item waits
            assert failing.count == 1
            assert env.active_workers() == 0
    assert any(line["event"] == "reconciler error" for line in logs)


async def test_a_timeout_inside_the_block_takes_no_worker_and_the_controller_goes_on() -> None:
    """A reconcile cancelled in the block (its timeout) leaves the worker count whole for the next ones."""
    done: list[str] = []

    class Hanging:
        async def reconcile(self, request: Request, /) -> Result:
            if request.name == "hang":
                async with yield_worker():
                    await asyncio.Event().wait()
            done.append(request.name)
            return Result()

    env = Env(Hanging(), max_concurrent_reconciles=1, max_yielded_reconciles=1, reconciliation_timeout=0.02)
    with capture_logs():
        async with env.running():
            env.informer.add(obj("hang"))
            await asyncio.sleep(0.1)
            for n in range(3):
                env.informer.add(obj(f"ok{n}"))
            for _ in range(200):
                if len(done) == 3:
                    break
                await asyncio.sleep(0.005)
            assert done == ["ok0", "ok1", "ok2"]
            assert env.active_workers() == 0


async def test_stop_cancels_yielded_reconciles() -> None:
    """Stopping the controller cancels reconciles waiting in the block; none is left behind."""
    service = SlowService()
    env = Env(service, max_concurrent_reconciles=2, max_yielded_reconciles=10)
    async with env.running():
        for n in range(4):
            env.informer.add(obj(f"r{n}"))
        await settle(50)
        assert len(service.inside) == 4
    assert service.inside == set()
    assert service.finished == []


async def test_outside_a_controller_the_block_changes_nothing() -> None:
    """A reconciler called directly (a unit test) runs the block as plain code."""
    service = SlowService()
    service.gate.set()
    assert await service.reconcile(Request("default", "a")) == Result()
    assert service.finished == ["a"]


async def test_slots_count_holders_and_yielders() -> None:
    """The slot arithmetic: yield frees a worker for a new request; coming back waits for one."""
    started: list[int] = []
    slots = WorkerSlots(workers=1, max_yielded=1, start_substitute=lambda: started.append(1) is None)
    first = await slots.take()
    assert (slots.running, slots.yielded) == (1, 0)
    assert slots.try_yield(first)
    assert started == [1]
    assert (slots.running, slots.yielded) == (0, 1)
    second = await slots.take()
    assert not slots.try_yield(second)  # room for one yielded reconcile only
    back = asyncio.create_task(slots.resume(first))
    await settle()
    assert not back.done()  # the only worker is held by the second request
    slots.give_back(second)
    await settle()
    assert back.done()
    assert first.holds
    assert (slots.running, slots.yielded) == (1, 0)
    slots.give_back(first)
    assert slots.running == 0


@pytest.mark.parametrize("value", [-1])
def test_the_option_rejects_a_negative_bound(value: int) -> None:
    """max_yielded_reconciles is a count."""
    with pytest.raises(ValueError, match="max_yielded_reconciles"):
        Options(max_yielded_reconciles=value)


async def test_a_reconcile_coming_back_after_the_leader_fence_failed_goes_no_further() -> None:
    """Leadership may end during a round trip: the reconcile stops at the end of the block, writing nothing more."""
    from reconcilekit._internal.fence import LEADER_FENCE

    holds = [True]
    after: list[str] = []
    gate = asyncio.Event()

    class Writer:
        async def reconcile(self, request: Request, /) -> Result:
            async with yield_worker():
                await gate.wait()
            after.append(request.name)  # the write only the leader may make
            return Result()

    env = Env(Writer(), max_concurrent_reconciles=1, max_yielded_reconciles=5)
    token = LEADER_FENCE.set(lambda: holds[0])  # the controller's tasks inherit it, as in the manager's group
    try:
        with capture_logs() as logs:
            async with env.running():
                env.informer.add(obj("a"))
                await settle()
                holds[0] = False
                gate.set()
                await settle(50)
                assert after == []
                assert env.active_workers() == 0
        assert any("leader fence failed" in str(line.get("exc_info", "")) for line in logs)
    finally:
        LEADER_FENCE.reset(token)
