"""The manager on the FakeClient: start order, probes, metrics, errors, leader election."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from reconcilekit.cache import deep_copy
from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey
from reconcilekit.manager import LeaderElectionLostError, Options, new_manager
from reconcilekit.testing import FakeClient, eventually

CM = GroupVersionKind("", "v1", "ConfigMap")
LOOPBACK = "127.0.0.1:0"


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


class Recording:
    """A runnable that records what it saw when it started."""

    def __init__(self, manager: Any, *, leader: bool = True, fail: bool = False) -> None:
        self.manager = manager
        self.leader = leader
        self.fail = fail
        self.started = asyncio.Event()
        self.saw_synced: bool | None = None

    def need_leader_election(self) -> bool:
        return self.leader

    async def start(self) -> None:
        informer = await self.manager.get_cache().get_informer(CM)
        self.saw_synced = informer.has_synced()
        self.started.set()
        if self.fail:
            raise RuntimeError("boom")
        await asyncio.Future()


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_runnables_start_after_caches_synced_and_read_through_the_cache() -> None:
    fake = FakeClient([cm("a")])
    mgr = new_manager(None, Options(metrics_bind_address="0"), client=fake)
    await mgr.get_cache().get_informer(CM)  # registered before start: synced before runnables
    run = Recording(mgr)
    other = Recording(mgr, leader=False)
    mgr.add(run)
    mgr.add(other)
    task = asyncio.create_task(mgr.start())
    try:
        await asyncio.wait_for(run.started.wait(), 5)
        assert run.saw_synced
        assert other.saw_synced
        assert mgr.elected().is_set()
        gets = fake.count("get")
        got = await mgr.get_client().get(CM, ObjectKey("default", "a"))
        assert got["metadata"]["name"] == "a"
        assert fake.count("get") == gets  # served from the cache
        await mgr.get_api_reader().get(CM, ObjectKey("default", "a"))
        assert fake.count("get") == gets + 1
    finally:
        await stop(task)
    with pytest.raises(RuntimeError, match="already started"):
        await mgr.start()


async def test_a_failing_runnable_stops_the_manager_with_its_error() -> None:
    mgr = new_manager(None, Options(metrics_bind_address="0"), client=FakeClient())
    mgr.add(Recording(mgr, fail=True))
    with pytest.raises(RuntimeError, match="boom"):
        await asyncio.wait_for(mgr.start(), 5)


async def test_health_probes_bodies() -> None:
    mgr = new_manager(
        None, Options(metrics_bind_address=LOOPBACK, health_probe_bind_address=LOOPBACK), client=FakeClient()
    )

    async def ok() -> None:
        return None

    async def broken() -> None:
        raise RuntimeError("disk on fire")

    mgr.add_healthz_check("ping", ok)
    mgr.add_readyz_check("ping", ok)
    mgr.add_readyz_check("db", broken)
    task = asyncio.create_task(mgr.start())
    try:
        await eventually(lambda: mgr.health_probe_address is not None and mgr.elected().is_set())
        with pytest.raises(RuntimeError):
            mgr.add_healthz_check("late", ok)
        host, port = mgr.health_probe_address or ("", 0)
        base = f"http://{host}:{port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/healthz") as r:
                assert (r.status, await r.text()) == (200, "ok")
                assert r.headers["Content-Type"] == "text/plain; charset=utf-8"
            async with http.get(f"{base}/healthz?verbose") as r:
                assert await r.text() == "[+]ping ok\nhealthz check passed\n"
            async with http.get(f"{base}/readyz") as r:
                assert r.status == 500
                assert await r.text() == "[-]db failed: reason withheld\n[+]ping ok\nhealthz check failed\n"
            async with http.get(f"{base}/readyz?exclude=db") as r:
                assert (r.status, await r.text()) == (200, "ok")
            async with http.get(f"{base}/readyz/db") as r:
                assert (r.status, await r.text()) == (500, "internal server error: disk on fire\n")
            async with http.get(f"{base}/readyz/nope") as r:
                assert r.status == 404
            mhost, mport = mgr.metrics_address or ("", 0)
            async with http.get(f"http://{mhost}:{mport}/metrics") as r:
                assert r.status == 200
                assert "leader_election_master_status" in await r.text()
    finally:
        await stop(task)


async def test_only_the_leader_runs_leader_elected_runnables_and_loss_is_an_error() -> None:
    fake = FakeClient()
    opts = Options(
        metrics_bind_address="0",
        leader_election=True,
        leader_election_id="lock",
        leader_election_namespace="ns",
        lease_duration=2.0,
        renew_deadline=1.0,
        retry_period=0.25,
        exit_on_blocked_leader=False,  # a 1 s limit could end the test runner on a loaded machine
    )
    one, two = new_manager(None, opts, client=fake), new_manager(None, opts, client=fake)
    r1, r2 = Recording(one), Recording(two)
    one.add(r1)
    two.add(r2)
    t1 = asyncio.create_task(one.start())
    await asyncio.wait_for(r1.started.wait(), 5)
    t2 = asyncio.create_task(two.start())
    try:
        await asyncio.sleep(1.0)
        assert not r2.started.is_set()
        assert not two.elected().is_set()
        await stop(t1)  # clean stop, no release: the other takes over after the lease
        await asyncio.wait_for(r2.started.wait(), 10)
        # Someone else grabs the lease: the leader must notice and fail with "leader election lost".
        stored = fake.stored(GroupVersionKind("coordination.k8s.io", "v1", "Lease"), ObjectKey("ns", "lock"))
        assert stored is not None
        lease = deep_copy(stored)
        lease["spec"]["holderIdentity"] = "intruder"
        fake.put_object(lease)
        with pytest.raises(LeaderElectionLostError):
            await asyncio.wait_for(t2, 5)
    finally:
        await stop(t1)
        await stop(t2)
        await asyncio.sleep(0.05)
