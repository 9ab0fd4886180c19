"""Leader election on the FakeClient's Lease: acquire, hand over, release, loss."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.errors import InternalError
from reconcilekit.leaderelection import LEASE, LeaderElectionConfig, LeaderElector, LeaseLock
from reconcilekit.leaderelection.elector import LEADER_GAUGE
from reconcilekit.testing import FakeClient, eventually

FAST = {"lease_duration": 2.0, "renew_deadline": 1.0, "retry_period": 0.25}


class Candidate:
    def __init__(self, client: Any, identity: str, *, release: bool = False) -> None:
        self.leading = asyncio.Event()
        self.stopped = asyncio.Event()
        lock = LeaseLock(client, namespace="ns", name="lock", identity=identity)
        self.elector = LeaderElector(
            LeaderElectionConfig(lock=lock, release_on_cancel=release, name="lock", **FAST),
            on_started_leading=self.leading.set,
            on_stopped_leading=self.stopped.set,
        )
        self.task = asyncio.create_task(self.elector.run(), name=f"elector-{identity}")

    async def cancel(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def test_options_are_validated() -> None:
    lock = LeaseLock(FakeClient(), namespace="ns", name="l", identity="me")
    with pytest.raises(ValueError, match="leaseDuration must be greater than renewDeadline"):
        LeaderElectionConfig(lock=lock, lease_duration=10, renew_deadline=10).validate()
    with pytest.raises(ValueError, match="retryPeriod\\*JitterFactor"):
        LeaderElectionConfig(lock=lock, renew_deadline=2.4, retry_period=2).validate()
    LeaderElectionConfig(lock=lock).validate()  # 15 / 10 / 2


async def test_hand_over_after_lease_duration_and_transitions_counted() -> None:
    fake = FakeClient()
    a = Candidate(fake, "a")
    await asyncio.wait_for(a.leading.wait(), 2)
    assert LEADER_GAUGE.labels(name="lock")._value.get() == 1
    b = Candidate(fake, "b")
    try:
        await asyncio.sleep(1.0)
        assert not b.leading.is_set()
        lease = fake.stored(LEASE, ObjectKey("ns", "lock"))
        assert lease is not None
        assert lease["spec"]["holderIdentity"] == "a"
        assert lease["spec"]["leaseDurationSeconds"] == 2
        assert lease["spec"]["renewTime"].endswith("Z")
        assert len(lease["spec"]["renewTime"]) == 27
        stopped_at = time.monotonic()
        await a.cancel()  # no release: b must wait out the lease
        assert a.stopped.is_set()
        await asyncio.wait_for(b.leading.wait(), 5)
        waited = time.monotonic() - stopped_at
        assert 1.0 <= waited <= 2.0 + 0.25 * 2.2 + 1.5  # lease + jittered retry, with room for a busy CI
        lease = fake.stored(LEASE, ObjectKey("ns", "lock"))
        assert lease is not None
        assert lease["spec"]["holderIdentity"] == "b"
        assert lease["spec"]["leaseTransitions"] == 1
    finally:
        await a.cancel()
        await b.cancel()


async def test_release_on_cancel_lets_the_next_candidate_in_fast() -> None:
    fake = FakeClient()
    a = Candidate(fake, "a", release=True)
    await asyncio.wait_for(a.leading.wait(), 2)
    await a.cancel()
    lease = fake.stored(LEASE, ObjectKey("ns", "lock"))
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == ""
    assert lease["spec"]["leaseDurationSeconds"] == 1
    b = Candidate(fake, "b")
    try:
        await asyncio.wait_for(b.leading.wait(), 1.0)
    finally:
        await b.cancel()


class FailingUpdates(FakeClient):
    fail = False

    async def update(self, obj: Any, /, **kwargs: Any) -> Any:
        if self.fail:
            raise InternalError(500, "InternalError", "etcd is down")
        return await super().update(obj, **kwargs)


async def test_renew_deadline_ends_leadership() -> None:
    fake = FailingUpdates()
    a = Candidate(fake, "a")
    try:
        await asyncio.wait_for(a.leading.wait(), 2)
        fake.fail = True
        started = time.monotonic()
        await asyncio.wait_for(a.stopped.wait(), 4)
        assert time.monotonic() - started >= 1.0  # renew_deadline
        await eventually(lambda: a.task.done())
    finally:
        await a.cancel()
