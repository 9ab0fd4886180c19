"""Issue 20, finding 6: a runner this process created is provisioned without reading its JIT secret first.

The EphemeralRunnerSet reconciler records each runner it creates (`NewRunners`); the
EphemeralRunner reconciler takes the record once and skips the uncached secret GET that
could only answer 404. Every other runner, and every later attempt, reads as before.
"""

from __future__ import annotations

import asyncio
from typing import Any

from arc_controllers.api.v1alpha1 import objects
from arc_controllers.controllers.ephemeralrunnerset import EphemeralRunnerSetReconciler
from arc_controllers.controllers.newrunners import NewRunners
from reconcilekit.reconcile import Request
from tests.arc_controllers.fakeapi import FakeCluster

from . import test_ephemeralrunner as er
from . import test_ephemeralrunnerset as ers
from .conftest import FakeActions


def secret_reads(cluster: FakeCluster) -> int:
    return sum(1 for r in cluster.requests if (r.verb, r.kind) == ("get", "Secret"))


async def test_a_record_is_taken_once() -> None:
    new = NewRunners(capacity=2)
    new.created("a")
    new.created("")
    assert await new.take("a") is True
    assert await new.take("a") is False
    assert await new.take("never") is False
    for uid in ("b", "c", "d"):
        new.created(uid)
    assert len(new) == 2
    assert await new.take("b") is False  # the oldest went first: it is read as before


async def test_take_waits_for_the_creates_in_flight() -> None:
    """The informer may show the runner before the set's create call returned: take waits for it."""
    new = NewRunners()
    new.create_started()
    new.create_started()
    waiting = asyncio.create_task(new.take("x"))
    other = asyncio.create_task(new.take("never-created"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiting.done()
    assert not other.done()
    new.create_ended("x")
    assert await waiting is True
    assert not other.done()  # one create still in flight
    new.create_ended()  # that one failed
    assert await other is False


async def test_take_waits_a_bounded_time() -> None:
    new = NewRunners()
    new.create_started()
    assert await new.take("x", wait=0.01) is False


async def test_a_runner_this_process_created_is_provisioned_without_a_secret_read(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    er.make_runner(cluster)
    new = NewRunners()
    new.created(er.runner(cluster)["metadata"]["uid"])
    await er.reconciler(cluster, actions, None, new_runners=new).reconcile(er.REQ)
    assert secret_reads(cluster) == 0
    assert er.writes(cluster) == ["create Secret", "create Pod", "patch EphemeralRunner/status"]
    assert er.runner(cluster)["status"]["runnerId"] == 1
    assert len(new) == 0


async def test_any_other_runner_reads_its_secret_first(cluster: FakeCluster, actions: FakeActions) -> None:
    er.make_runner(cluster)
    new = NewRunners()
    new.created("some-other-runner")
    await er.reconciler(cluster, actions, None, new_runners=new).reconcile(er.REQ)
    assert secret_reads(cluster) == 1
    assert len(new) == 1


async def test_a_secret_that_exists_after_all_gives_the_registration_back(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    """A lingering secret of the same name answers the create with 409: the new registration is queued
    for removal, and the next attempt reads the secret and uses it without registering again."""
    queue = er.RecordingQueue(actions)
    er.make_runner(cluster)
    await er.reconciler(cluster, actions, queue).reconcile(er.REQ)  # registers id 1, creates the secret
    cluster.store.pop(("Pod", er.NS, er.NAME))
    actions.runners.clear()  # the old runner's registration is gone; its secret lingers
    cluster.set_status("EphemeralRunner", er.NS, er.NAME, {"runnerId": 0, "runnerName": ""})
    new = NewRunners()
    new.created(er.runner(cluster)["metadata"]["uid"])
    reconciler = er.reconciler(cluster, actions, queue, new_runners=new)
    cluster.requests.clear()

    result = await reconciler.reconcile(er.REQ)

    assert result.requeue_after > 0
    assert queue.pushed == [(er.NAME, 2)]
    assert secret_reads(cluster) == 0
    registrations = sum(1 for call, _ in actions.calls if call == "generate_jit_runner_config")
    await reconciler.reconcile(er.REQ)
    assert secret_reads(cluster) == 1
    assert sum(1 for call, _ in actions.calls if call == "generate_jit_runner_config") == registrations
    assert ("Pod", er.NS, er.NAME) in cluster.store


async def test_the_set_records_each_runner_it_creates(cluster: FakeCluster, actions: FakeActions) -> None:
    ers.make_set(cluster, replicas=3)
    reconciler = ers.reconciler(cluster, actions)
    await reconciler.reconcile(ers.REQ)
    made = ers.runners(cluster)
    assert len(made) == 3
    assert all([await reconciler.new_runners.take(objects.uid(r)) for r in made])


async def test_a_set_and_runner_reconciler_sharing_the_record_skip_the_read_end_to_end(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    ers.make_set(cluster, replicas=2)
    new = NewRunners()

    async def factory(_: Any) -> FakeActions:
        return actions

    runner_set = EphemeralRunnerSetReconciler(
        client=cluster.client(), api_reader=cluster.api_reader(), actions=factory, new_runners=new
    )
    await runner_set.reconcile(ers.REQ)
    runner = er.reconciler(cluster, actions, None, new_runners=new)
    cluster.requests.clear()
    for made in ers.runners(cluster):
        await runner.reconcile(Request(ers.NS, made["metadata"]["name"]))
    assert secret_reads(cluster) == 0
    assert len(cluster.objects("Pod", ers.NS)) == 2
