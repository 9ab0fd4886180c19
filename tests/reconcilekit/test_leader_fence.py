"""Fenced leader election: the renew-deadline arithmetic, loss on another holder, the blocked-loop
watchdog, and a manager that starts nothing once it stops (issue 16, items 4 and 5)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from reconcilekit.cache import deep_copy
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.leaderelection import (
    BLOCKED_EXIT_CODE,
    LEASE,
    LeaderElectionConfig,
    LeaderElector,
    LeaseLock,
    LoopWatchdog,
    holds_leadership,
)
from reconcilekit.manager import Options, new_manager
from reconcilekit.manager._runnables import Group, RunnableGroup
from reconcilekit.testing import FakeClient, eventually


class Clock:
    """Real monotonic time plus a jump, so a test can "pause" the process without waiting."""

    def __init__(self) -> None:
        self.jump = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.jump


def elector(fake: Any, identity: str, clock: Clock, **timing: float) -> tuple[LeaderElector, asyncio.Event]:
    stopped = asyncio.Event()
    lock = LeaseLock(fake, namespace="ns", name="lock", identity=identity)
    config = LeaderElectionConfig(lock=lock, name="fence", **timing)  # type: ignore[arg-type]
    return (
        LeaderElector(config, on_started_leading=lambda: None, on_stopped_leading=stopped.set, clock=clock),
        stopped,
    )


async def test_fence_holds_only_within_renew_deadline_of_the_last_renewal() -> None:
    clock = Clock()
    le, stopped = elector(FakeClient(), "a", clock, lease_duration=15, renew_deadline=10, retry_period=2)
    assert not le.holds_lease()  # not leading yet
    task = asyncio.create_task(le.run())
    try:
        await eventually(le.holds_lease, timeout=5)
        assert le.renewal_age() < 1.0
        clock.jump = 9.0  # paused 9 s: still inside renew_deadline 10 s (lease 15 s leaves a 5 s margin)
        assert le.holds_lease()
        clock.jump = 10.0 + le.renewal_age() - 9.0  # the age reaches renew_deadline exactly
        assert not le.holds_lease()
        clock.jump = 25.0  # a 25 s SIGSTOP
        assert not le.holds_lease()
        # The renew loop, waking after its retry period, gives up without another attempt.
        await asyncio.wait_for(stopped.wait(), 5)
        assert not le.holds_lease()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_seeing_another_valid_holder_ends_leadership_at_once() -> None:
    fake = FakeClient()
    le, stopped = elector(fake, "a", Clock(), lease_duration=30, renew_deadline=20, retry_period=0.1)
    task = asyncio.create_task(le.run())
    try:
        await eventually(le.holds_lease, timeout=5)
        stored = fake.stored(LEASE, ObjectKey("ns", "lock"))
        assert stored is not None
        lease = deep_copy(stored)
        lease["spec"]["holderIdentity"] = "intruder"
        fake.put_object(lease)
        seen = time.monotonic()
        await asyncio.wait_for(stopped.wait(), 5)
        assert time.monotonic() - seen < 5 < 20  # well before renew_deadline: lost at the first read
        assert not le.holds_lease()
        assert le.get_leader() == "intruder"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_watchdog_exits_when_the_loop_is_blocked_longer_than_its_limit() -> None:
    exits: list[int] = []
    dog = LoopWatchdog(limit=0.3, name="ns/lock", exit=exits.append)
    dog.start()
    try:
        await asyncio.sleep(0.5)  # the loop runs: no exit
        assert exits == []
        time.sleep(0.8)  # noqa: ASYNC251 - the block under test
        assert exits == [BLOCKED_EXIT_CODE]
        assert dog.fired
    finally:
        dog.stop()


def test_watchdog_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        LoopWatchdog(limit=0, name="x")


async def test_a_runnable_group_refuses_to_start_after_stop() -> None:
    started: list[str] = []

    class Runnable:
        async def start(self) -> None:
            started.append("ran")

    group = RunnableGroup(Group.LEADER_ELECTION, on_error=lambda err: None)
    group.add(Runnable())
    assert await group.stop(within=1.0)
    with pytest.raises(RuntimeError, match="stopped and cannot start again"):
        group.start()
    group.add(Runnable())  # queued, never spawned
    await asyncio.sleep(0)
    assert started == []
    assert group.tasks == []


async def test_leader_group_tasks_run_under_the_fence() -> None:
    seen: list[bool] = []
    fence = [True]

    class Runnable:
        async def start(self) -> None:
            seen.append(holds_leadership())
            fence[0] = False
            inner = asyncio.create_task(asyncio.sleep(0, result=None))
            await inner
            seen.append(holds_leadership())

    group = RunnableGroup(Group.LEADER_ELECTION, on_error=lambda err: None, fence=lambda: fence[0])
    group.add(Runnable())
    group.start()
    await asyncio.gather(*group.tasks)
    assert seen == [True, False]
    assert holds_leadership()  # outside the group: no fence


def fenced_options(**more: Any) -> Options:
    return Options(
        metrics_bind_address="0",
        leader_election=True,
        leader_election_id="lock",
        leader_election_namespace="ns",
        lease_duration=2.0,
        renew_deadline=1.0,
        retry_period=0.25,
        exit_on_blocked_leader=False,  # a 1 s limit could end the test runner on a loaded machine
        **more,
    )


class LeaderOnly:
    def __init__(self) -> None:
        self.ran = 0

    async def start(self) -> None:
        self.ran += 1


class SlowToStop:
    """Needs no leader; takes ``seconds`` to stop once cancelled (a slow shutdown)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.running = asyncio.Event()

    def need_leader_election(self) -> bool:
        return False

    async def start(self) -> None:
        self.running.set()
        try:
            await asyncio.Future()
        finally:
            await asyncio.sleep(self.seconds)


async def test_a_manager_cancelled_before_it_leads_never_takes_a_lease_that_frees_up() -> None:
    fake = FakeClient()
    now = "2026-12-02T00:00:00.000000Z"
    await fake.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "lock", "namespace": "ns"},
            "spec": {"holderIdentity": "other", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now},
        }
    )
    leader_only, slow = LeaderOnly(), SlowToStop(3.0)
    mgr = new_manager(None, fenced_options(), client=fake)
    mgr.add(leader_only)
    mgr.add(slow)
    task = asyncio.create_task(mgr.start())
    await asyncio.wait_for(slow.running.wait(), 5)
    task.cancel()  # "other" never renews: its Lease is free ~1 s into our 3 s shutdown
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 15)
    assert leader_only.ran == 0
    assert not mgr.elected().is_set()
    lease = fake.stored(LEASE, ObjectKey("ns", "lock"))
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "other"


def test_winning_while_stopping_starts_nothing() -> None:
    leader_only = LeaderOnly()
    mgr = new_manager(None, fenced_options(), client=FakeClient())
    mgr.add(leader_only)
    mgr._stop.set()  # shutdown has begun when the election is won
    mgr._become_leader()
    assert not mgr._groups[Group.LEADER_ELECTION].started
    assert not mgr.elected().is_set()


async def test_winning_while_stopping_hands_the_lease_back_without_release_on_cancel_issue_16() -> None:
    """The win is a no-op that releases the Lease, even with release on cancel off (the default)."""
    fake = FakeClient()
    leader_only = LeaderOnly()
    mgr = new_manager(None, fenced_options(leader_election_release_on_cancel=False), client=fake)
    mgr.add(leader_only)
    mgr._stop.set()  # shutdown has begun when the election is won
    mgr._start_leader_election()
    assert mgr._elector_task is not None
    await asyncio.wait_for(asyncio.gather(mgr._elector_task, return_exceptions=True), 10)
    lease = fake.stored(LEASE, ObjectKey("ns", "lock"))
    assert lease is not None, "the candidate did win the Lease"
    assert lease["spec"]["holderIdentity"] == ""  # handed back: the next candidate need not wait 2 s
    assert leader_only.ran == 0
    assert not mgr.elected().is_set()
