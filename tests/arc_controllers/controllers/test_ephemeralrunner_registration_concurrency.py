"""Issue 20, finding 6: JIT registrations run without holding a worker, each runner registered exactly once.

The EphemeralRunner reconciler wraps its Actions round trip in `yield_worker`; these tests run it
under a real reconcilekit controller (2 workers, as the chart) on the fake API server, with a
fake Actions service whose registrations wait on a gate (a round trip that ends when the test
says so, never a timed sleep).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from arc_controllers.controllers.ephemeralrunner import EphemeralRunnerReconciler
from arc_controllers.controllers.ephemeralrunner.reconciler import DEFAULT_MAX_CONCURRENT_REGISTRATIONS
from arc_controllers.resourcebuilder.runner import JitRunnerConfig
from reconcilekit.controller import Options, new_controller
from reconcilekit.reconcile import Request
from reconcilekit.testing import eventually
from tests.arc_controllers.fakeapi import FakeCluster

from .conftest import FakeActions
from .test_ephemeralrunner import RUNNER_FINALIZER, RecordingQueue

NS = "ns"
_names = itertools.count()


class GatedActions(FakeActions):
    """Every registration waits on ``gate`` (one round trip for all of them once it opens)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.in_flight = 0
        self.peak = 0

    async def generate_jit_runner_config(self, *, name: str, work_folder: str, scale_set_id: int) -> JitRunnerConfig:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await self.gate.wait()
        finally:
            self.in_flight -= 1
        return await super().generate_jit_runner_config(name=name, work_folder=work_folder, scale_set_id=scale_set_id)

    def registrations(self) -> Counter[str]:
        return Counter(name for call, name in self.calls if call == "generate_jit_runner_config")


def put_runner(cluster: FakeCluster, name: str, *, finalizers: list[str] | None = None) -> None:
    cluster.put(
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunner",
            "metadata": {
                "name": name,
                "namespace": NS,
                "uid": f"uid-{name}",
                "finalizers": finalizers or [],
            },
            "spec": {
                "githubConfigUrl": "https://github.com/org",
                "runnerScaleSetId": 1,
                "spec": {"containers": [{"name": "runner", "image": "img"}]},
            },
        }
    )


def build(cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue | None = None) -> EphemeralRunnerReconciler:
    async def factory(_: Any) -> FakeActions:
        return actions

    return EphemeralRunnerReconciler(client=cluster.client(), actions=factory, unregistration_queue=queue)


@contextlib.asynccontextmanager
async def running(reconciler: EphemeralRunnerReconciler, options: Options) -> AsyncIterator[Any]:
    """The reconciler under a started controller (no sources: the test adds requests to its queue)."""
    controller = new_controller(f"test_er_registration_{next(_names)}", reconciler, options)
    task = asyncio.create_task(controller.start())
    await eventually(lambda: controller.queue is not None, message="the controller started")  # type: ignore[attr-defined]
    try:
        yield controller.queue  # type: ignore[attr-defined]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def pods(cluster: FakeCluster) -> set[str]:
    return {p["metadata"]["name"] for p in cluster.objects("Pod", NS)}


async def test_two_workers_register_every_new_runner_in_one_round_trip() -> None:
    """With the chart's 2 workers, 12 new runners all wait on the Actions service at once.

    The gate opens only when all 12 registrations are in flight, so every pod exists after
    one round trip (upstream's shape, and ours before: 2 at a time, 6 round trips). Each
    runner is registered exactly once, although its request is added again while it waits.
    """
    cluster, actions = FakeCluster(), GatedActions()
    names = [f"set-runner-{n:02d}" for n in range(12)]
    for name in names:
        put_runner(cluster, name)
    reconciler = build(cluster, actions)
    async with running(reconciler, reconciler.controller_options(Options(max_concurrent_reconciles=2))) as queue:
        for name in names:
            queue.add(Request(NS, name))
        await eventually(lambda: actions.in_flight == len(names), message="every registration in flight at once")
        for name in names:  # events while registering (e.g. the finalizer patch's own update)
            queue.add(Request(NS, name))
        actions.gate.set()
        await eventually(lambda: pods(cluster) == set(names), message="a pod for every runner")
    assert actions.peak == len(names)
    assert actions.registrations() == Counter(dict.fromkeys(names, 1))  # exactly once each
    assert len(cluster.objects("Secret", NS)) == len(names)
    runner_ids = {r["status"]["runnerId"] for r in cluster.objects("EphemeralRunner", NS)}
    assert len(runner_ids) == len(names)


async def test_the_default_bound_is_the_registrations_in_flight() -> None:
    """`controller_options` gives the controller room for ``max_concurrent_registrations`` yielded reconciles."""
    cluster, actions = FakeCluster(), FakeActions()
    reconciler = build(cluster, actions)
    assert reconciler.controller_options().max_yielded_reconciles == DEFAULT_MAX_CONCURRENT_REGISTRATIONS
    chart = reconciler.controller_options(Options(max_concurrent_reconciles=2))
    assert (chart.max_concurrent_reconciles, chart.max_yielded_reconciles) == (2, DEFAULT_MAX_CONCURRENT_REGISTRATIONS)
    assert reconciler.controller_options(Options(max_yielded_reconciles=3)).max_yielded_reconciles == 3
    reconciler.max_concurrent_registrations = 0
    assert reconciler.controller_options().max_yielded_reconciles == 0


async def test_registrations_in_flight_are_bounded() -> None:
    """With room for 3, 3 runners register without a worker and the 2 workers wait in theirs: 5 at most."""
    cluster, actions = FakeCluster(), GatedActions()
    names = [f"set-runner-{n:02d}" for n in range(8)]
    for name in names:
        put_runner(cluster, name)
    reconciler = build(cluster, actions)
    reconciler.max_concurrent_registrations = 3
    async with running(reconciler, reconciler.controller_options(Options(max_concurrent_reconciles=2))) as queue:
        for name in names:
            queue.add(Request(NS, name))
        await eventually(lambda: actions.in_flight == 5, message="3 yielded and 2 holding workers")
        for _ in range(20):
            await asyncio.sleep(0)
        assert actions.in_flight == 5
        actions.gate.set()
        await eventually(lambda: pods(cluster) == set(names), message="a pod for every runner")
    assert actions.peak == 5
    assert actions.registrations() == Counter(dict.fromkeys(names, 1))


async def test_a_runner_deleted_while_registering_gets_its_secret_but_no_pod() -> None:
    """Deleted (kept by its finalizers) during the round trip: the secret records the registration, no pod.

    The finalizer branch, which runs after this reconcile, then queues exactly one removal of
    that registration, read from the secret.
    """
    cluster, actions = FakeCluster(), GatedActions()
    put_runner(cluster, "set-runner-a")
    queue = RecordingQueue(actions)
    reconciler = build(cluster, actions, queue)
    reconcile = asyncio.create_task(reconciler.reconcile(Request(NS, "set-runner-a")))
    await eventually(lambda: actions.in_flight == 1, message="registration in flight")
    await cluster.client().delete(cluster.get("EphemeralRunner", NS, "set-runner-a"))  # both finalizers hold it
    actions.gate.set()
    await reconcile
    assert [s["metadata"]["name"] for s in cluster.objects("Secret", NS)] == ["set-runner-a"]
    assert pods(cluster) == set()
    await reconciler.reconcile(Request(NS, "set-runner-a"))  # the deletion's reconcile: the finalizer branch
    assert queue.pushed == [("set-runner-a", 1)]
    assert actions.registrations() == Counter({"set-runner-a": 1})
    assert cluster.objects("EphemeralRunner", NS) == []


async def test_a_runner_gone_while_registering_has_its_new_registration_removed() -> None:
    """Gone at once (finalizers removed by hand) while registering: no secret, no pod, the registration removed."""
    cluster, actions = FakeCluster(), GatedActions()
    put_runner(cluster, "set-runner-a")
    queue = RecordingQueue(actions)
    reconciler = build(cluster, actions, queue)
    reconcile = asyncio.create_task(reconciler.reconcile(Request(NS, "set-runner-a")))
    await eventually(lambda: actions.in_flight == 1, message="registration in flight")
    del cluster.store[("EphemeralRunner", NS, "set-runner-a")]
    actions.gate.set()
    await reconcile
    assert cluster.objects("Secret", NS) == []
    assert pods(cluster) == set()
    assert queue.pushed == [("set-runner-a", 1)]


async def test_a_runner_recreated_under_its_name_while_registering_counts_as_gone() -> None:
    """A different UID under the same name is another runner: the old one's registration is queued for removal."""
    cluster, actions = FakeCluster(), GatedActions()
    put_runner(cluster, "set-runner-a", finalizers=[RUNNER_FINALIZER])
    queue = RecordingQueue(actions)
    reconciler = build(cluster, actions, queue)
    reconcile = asyncio.create_task(reconciler.reconcile(Request(NS, "set-runner-a")))
    await eventually(lambda: actions.in_flight == 1, message="registration in flight")
    replacement = cluster.get("EphemeralRunner", NS, "set-runner-a")
    replacement["metadata"]["uid"] = "another-uid"
    cluster.put(replacement)
    actions.gate.set()
    await reconcile
    assert cluster.objects("Secret", NS) == []
    assert queue.pushed == [("set-runner-a", 1)]


class GatedPodCreates:
    """The fake API client, whose pod creates wait on ``gate`` (a slow API server round trip)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.gate = asyncio.Event()
        self.in_flight = 0
        self.peak = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def create(self, obj: Any, /, **options: Any) -> Any:
        if obj.get("kind") == "Pod":
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                await self.gate.wait()
            finally:
                self.in_flight -= 1
        return await self._inner.create(obj, **options)


async def test_two_workers_create_every_new_runners_pod_at_once() -> None:
    """The API server's round trips of provisioning leave the worker too: 12 pod creates in flight at once."""
    cluster, actions = FakeCluster(), FakeActions()
    names = [f"set-runner-{n:02d}" for n in range(12)]
    for name in names:
        put_runner(cluster, name)
    client = GatedPodCreates(cluster.client())

    async def factory(_: Any) -> FakeActions:
        return actions

    reconciler = EphemeralRunnerReconciler(client=client, actions=factory, unregistration_queue=None)  # type: ignore[arg-type]
    async with running(reconciler, reconciler.controller_options(Options(max_concurrent_reconciles=2))) as queue:
        for name in names:
            queue.add(Request(NS, name))
        await eventually(lambda: client.in_flight == len(names), message="every pod create in flight at once")
        client.gate.set()
        await eventually(lambda: pods(cluster) == set(names), message="a pod for every runner")
        await eventually(
            lambda: all(r.get("status", {}).get("runnerId") for r in cluster.objects("EphemeralRunner", NS)),
            message="every runner ID recorded",
        )
    assert client.peak == len(names)
