"""Issue 19 rule 3: a runner stranded in deletion by a finalizer race, pinned with `LaggingClient`.

The interleaving measured on a 50-job burst: at the idle scale-down the set removes the
runner's registration and patches its registration finalizer away; the EphemeralRunner
controller reads the runner from its cache, which shows that patch but not yet the set's
DELETE, and writes from that copy: it re-added both finalizers (2 ms before the DELETE in
the stranded run, refused with 422 after it in the others). Here the DELETE lands right
before the runner controller's first write: that write answers with the deleting version,
and the controller's own DELETE of the runner (a no-op now) marked that version
superseded. No newer version ever came, every later reconcile returned with no requeue,
and the runner kept its deletionTimestamp, both finalizers, pod and secret.
"""

from __future__ import annotations

import asyncio
import base64
import copy
from typing import Any

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import EPHEMERAL_RUNNER, POD, SECRET
from arc_controllers.controllers.ephemeralrunner import EphemeralRunnerReconciler
from arc_controllers.controllers.ephemeralrunnerset.proxysecret import ProxySecrets
from arc_controllers.controllers.ephemeralrunnerset.runners import RunnerSetRunners
from arc_controllers.controllers.patching import SupersededVersions
from arc_controllers.controllers.unregistration import RunnerUnregistrationQueue
from reconcilekit.cache import InformerCache, Options
from reconcilekit.cache._internal.backoff import BackoffSettings
from reconcilekit.client.delegating import DelegatingClient
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.errors import NotFoundError
from reconcilekit.reconcile import Request
from reconcilekit.testing import Call, FakeClient, InterceptorClient, LaggingClient, eventually

from .conftest import FakeActions

NS, NAME = "ns", "set-runner-race"
KEY, REQ = ObjectKey(NS, NAME), Request(NS, NAME)
RUNNER_FINALIZER = constants.EPHEMERAL_RUNNER_FINALIZER_NAME
ACTIONS_FINALIZER = constants.EPHEMERAL_RUNNER_ACTIONS_FINALIZER_NAME


class _Pushes(RunnerUnregistrationQueue):
    """Records pushes; never starts workers."""

    def __init__(self) -> None:
        super().__init__(actions=_no_actions)
        self.pushed: list[int] = []

    def push(self, runner: Any, runner_id: int) -> None:
        self.pushed.append(runner_id)


async def _no_actions(_: Any) -> Any:
    raise AssertionError("the runner controller built an Actions client")


def _objects() -> list[dict[str, Any]]:
    owner = {"apiVersion": "v1", "kind": "EphemeralRunner", "name": NAME, "uid": "runner-uid", "controller": True}
    runner = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {"name": NAME, "namespace": NS, "uid": "runner-uid",
                     "finalizers": [RUNNER_FINALIZER, ACTIONS_FINALIZER]},
        "spec": {"githubConfigUrl": "https://github.com/org", "githubConfigSecret": "github-config",
                 "runnerScaleSetId": 1, "spec": {"containers": [{"name": "runner", "image": "img"}]}},
        "status": {"phase": "Running", "runnerId": 7, "runnerName": NAME, "ready": True},
    }  # fmt: skip
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": NAME, "namespace": NS, "ownerReferences": [owner]},
        "spec": {"containers": [{"name": "runner", "image": "img"}]},
        "status": {"phase": "Succeeded",
                   "containerStatuses": [{"name": "runner", "state": {"terminated": {"exitCode": 0}}}]},
    }  # fmt: skip
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": NAME, "namespace": NS},
              "data": {"runnerId": base64.b64encode(b"7").decode()}}  # fmt: skip
    return [runner, pod, secret]


async def test_runner_stranded_in_deletion_by_a_finalizer_race() -> None:
    """The set removes an idle runner while the runner controller acts on a copy from between its two writes.

    Pinned: the runner never gets a finalizer back once the set dropped the registration
    finalizer; no second unregistration; and no reconcile of the deleting runner returns
    without a requeue until it is gone (with the clock past the stale-copy TTL, it goes).
    """
    fake = FakeClient(_objects())
    lag = LaggingClient(fake)
    cache = InformerCache(lag, Options(backoff=BackoffSettings(initial=0.01, jitter=0.0, cap=0.05)))
    task = asyncio.create_task(cache.start(), name="race-cache")
    await asyncio.sleep(0)
    now = [1000.0]
    readded: list[list[str]] = []
    set_deleted = asyncio.Event()

    async def set_delete_lands(call: Call) -> None:
        """Right before the runner controller's first write to the runner: the set's DELETE lands."""
        if call.kind == "EphemeralRunner" and call.obj is not None and not set_deleted.is_set():
            set_deleted.set()
            await fake.delete(await fake.get(EPHEMERAL_RUNNER, KEY))

    async def finalizer_back(call: Call) -> None:
        finalizers = (call.obj or {}).get("metadata", {}).get("finalizers") or []
        if call.kind == "EphemeralRunner" and ACTIONS_FINALIZER in finalizers:
            readded.append(list(finalizers))

    er_writes = InterceptorClient(fake, before=set_delete_lands, after=finalizer_back)
    pushes = _Pushes()
    er = EphemeralRunnerReconciler(
        client=DelegatingClient(cache=cache, client=er_writes), actions=_no_actions, unregistration_queue=pushes
    )
    try:
        er.writes.superseded = SupersededVersions(clock=lambda: now[0])
        for gvk in (EPHEMERAL_RUNNER, POD, SECRET):
            await cache.list(gvk, namespace=NS)
        actions = FakeActions()

        async def factory(_: Any) -> FakeActions:
            return actions

        set_runners = RunnerSetRunners(client=fake, api_reader=fake, actions=factory, proxy=ProxySecrets(client=fake))

        async def set_holds_its_delete(call: Call) -> None:
            """The set's DELETE is held while the runner controller reconciles from its cache."""
            if call.verb != "delete" or call.kind != "EphemeralRunner" or set_deleted.is_set():
                return

            async def cache_shows_the_finalizer_patch() -> bool:
                cached = await cache.get(EPHEMERAL_RUNNER, KEY)
                return ACTIONS_FINALIZER not in cached["metadata"]["finalizers"]

            await eventually(cache_shows_the_finalizer_patch)
            lag.hold()
            await er.reconcile(REQ)

        set_runners.client = InterceptorClient(fake, before=set_holds_its_delete)
        listed = copy.deepcopy(await fake.get(EPHEMERAL_RUNNER, KEY))
        assert await set_runners.delete_ephemeral_runner_with_actions_client(listed, actions)
        assert set_deleted.is_set(), "the interleaving did not happen"
        assert actions.calls == [("remove_runner", 7)]
        lag.release()

        async def cache_caught_up() -> bool:
            try:
                live = await fake.get(EPHEMERAL_RUNNER, KEY)
            except NotFoundError:
                return True
            cached = await cache.get(EPHEMERAL_RUNNER, KEY)
            return bool(cached["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"])

        for _ in range(5):
            await eventually(cache_caught_up)
            result = await er.reconcile(REQ)
            try:
                await fake.get(EPHEMERAL_RUNNER, KEY)
            except NotFoundError:
                break
            assert result.requeue_after > 0, "a deleting runner's reconcile returned with no requeue"
            now[0] += result.requeue_after
        else:
            raise AssertionError("the deleting runner was never finalized")
        assert readded == [], "a finalizer came back to a runner the set is removing"
        assert pushes.pushed == [], "the registration the set removed was queued for removal again"
    finally:
        lag.release()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
