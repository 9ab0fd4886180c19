"""Issue 19 rule 3 on a real API server: a runner stranded in deletion by a finalizer race.

The EphemeralRunner controller runs under chart RBAC with the fake Actions service; its
cache reads through a `LaggingClient`. The set's side is the set's own removal path
(`RunnerSetRunners.delete_ephemeral_runner_with_actions_client`) run by the test, so the
moment its DELETE lands can be chosen. No kubelet runs: pods are unbound and go at once
when deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from arc_controllers.controllers import ephemeralrunner
from arc_controllers.controllers.actions_seam import SecretActionsClientFactory
from arc_controllers.controllers.ephemeralrunner import EphemeralRunnerReconciler
from arc_controllers.controllers.ephemeralrunnerset.proxysecret import ProxySecrets
from arc_controllers.controllers.ephemeralrunnerset.runners import RunnerSetRunners
from arc_controllers.controllers.indexers import setup_runner_indexers
from reconcilekit.cache import Options as CacheOptions
from reconcilekit.client import new_client
from reconcilekit.controller.options import Options as ControllerOptions
from reconcilekit.errors import NotFoundError
from reconcilekit.manager import Options, new_manager
from reconcilekit.reconcile import Request, Result
from reconcilekit.testing import Call, InterceptorClient, LaggingClient

from .conftest import ER, POD, SECRET, Harness, eventually

RUNNER_FINALIZER = "ephemeralrunner.actions.github.com/finalizer"
ACTIONS_FINALIZER = "ephemeralrunner.actions.github.com/runner-registration-finalizer"
NAME = "race-runner"


def _finalizers(obj: dict[str, Any]) -> list[str]:
    return list(obj["metadata"].get("finalizers") or [])


@dataclass(kw_only=True)
class _WatchedRunnerReconciler(EphemeralRunnerReconciler):
    """The EphemeralRunner reconciler, noting the resourceVersion of the copy each finished reconcile started from."""

    reconciled_versions: set[str] = field(default_factory=set)
    reconciled: asyncio.Event = field(default_factory=asyncio.Event)

    async def reconciled_from(self, resource_version: str) -> None:
        """Wait until a reconcile that read ``resource_version`` from the cache has finished."""
        while resource_version not in self.reconciled_versions:
            self.reconciled.clear()
            await self.reconciled.wait()

    async def reconcile(self, request: Request, /) -> Result:
        try:
            seen: dict[str, Any] | None = await self.client.get(ER, request.key)
        except NotFoundError:
            seen = None
        try:
            return await super().reconcile(request)
        finally:
            if seen is not None:
                self.reconciled_versions.add(seen["metadata"]["resourceVersion"])
                self.reconciled.set()


async def _gone(h: Harness, gvk: Any, name: str) -> bool:
    try:
        await h.get(gvk, name)
    except NotFoundError:
        return True
    return False


async def test_runner_stranded_in_deletion_by_a_finalizer_race(harness: Harness) -> None:
    """The set removes an idle runner while the runner controller acts on a copy from between its two writes.

    Issue 19 rule 3 (measured on a 50-job burst): the set removed the runner's registration
    (RemoveRunner 204) and patched its registration finalizer away; the EphemeralRunner
    controller, working from a cached copy that lacked that finalizer but did not yet show
    the deletion, re-added both finalizers just before the set's DELETE landed, and the
    runner stayed Terminating with its pod and JIT secret. Forced here: the controller's
    watches are held (`LaggingClient`) across the set's RemoveRunner and finalizer patch,
    then released while the set's DELETE waits until the controller has reconciled that
    copy. Pinned: no finalizer comes back, the registration is removed once, and the
    runner is finalized and gone (pod and JIT secret deleted) within a bounded time.
    """
    h = harness
    config = await h.controller_config()
    real = new_client(config)
    lag = LaggingClient(real)
    set_patched = asyncio.Event()
    stale: list[dict[str, Any]] = []
    readded: list[list[str]] = []

    async def finalizer_back(call: Call) -> None:
        """A controller write to the runner, after the set's patch, that carries the registration finalizer."""
        if set_patched.is_set() and call.kind == "EphemeralRunner" and call.verb in ("patch", "update"):
            finalizers = ((call.obj or {}).get("metadata") or {}).get("finalizers") or []
            if ACTIONS_FINALIZER in finalizers:
                readded.append(list(finalizers))

    controller_client = InterceptorClient(lag, after=finalizer_back)
    options = Options(metrics_bind_address="0", uncached=[SECRET], cache=CacheOptions(default_namespaces=[h.namespace]))
    mgr = new_manager(config, options, client=controller_client)
    controller_actions = SecretActionsClientFactory(mgr.get_api_reader())
    await setup_runner_indexers(mgr)
    reconciler = _WatchedRunnerReconciler(
        client=mgr.get_client(), actions=controller_actions, unregistration_queue=None
    )
    reconciler.setup_with_manager(
        mgr,
        options=ControllerOptions(
            max_concurrent_reconciles=ephemeralrunner.DEFAULT_CONCURRENCY, skip_name_validation=True
        ),
    )
    manager = asyncio.create_task(mgr.start(), name=f"manager-{h.namespace}-race")
    set_actions = SecretActionsClientFactory(h.client)
    try:
        spec = h.runner_set()["spec"]["ephemeralRunnerSpec"]
        runner_obj = {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunner",
            "metadata": {"name": NAME, "namespace": h.namespace},
            "spec": spec,
        }
        await h.client.create(runner_obj)

        async def registered_with_pod() -> dict[str, Any] | None:
            runner = await h.get(ER, NAME)
            if not (runner.get("status") or {}).get("runnerId") or set(_finalizers(runner)) != {
                RUNNER_FINALIZER,
                ACTIONS_FINALIZER,
            }:
                return None
            await h.get(POD, NAME)
            await h.get(SECRET, NAME)
            return runner

        await eventually(registered_with_pod)
        running = {"name": "runner", "image": "img", "imageID": "", "ready": True, "restartCount": 0,
                   "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}  # fmt: skip
        await h.patch_status(POD, NAME, {"phase": "Running", "containerStatuses": [running]})

        async def delete_lands_after_the_stale_reconcile(call: Call) -> None:
            if call.kind != "EphemeralRunner":
                return
            if call.verb == "patch":
                set_patched.set()
            elif call.verb == "delete":
                stale.append(await h.get(ER, NAME))  # the set's patch applied, no deletion yet
                lag.release()  # the controller now sees the finalizer patch, not the DELETE
                async with asyncio.timeout(30.0):
                    await reconciler.reconciled_from(stale[0]["metadata"]["resourceVersion"])

        set_runners = RunnerSetRunners(
            client=InterceptorClient(h.client, before=delete_lands_after_the_stale_reconcile),
            api_reader=h.client,
            actions=set_actions,
            proxy=ProxySecrets(client=h.client),
        )
        removals_before = h.service.requests("remove_runner")
        listed = await h.get(ER, NAME)
        lag.hold()  # the controller's cache falls behind across the set's RemoveRunner and finalizer patch
        assert await set_runners.delete_ephemeral_runner_with_actions_client(listed, await set_actions(listed))
        assert set_patched.is_set(), "the set's finalizer patch was not seen"
        assert stale, "the set's DELETE did not wait for the controller's reconcile of the stale copy"
        assert ACTIONS_FINALIZER not in _finalizers(stale[0])
        assert not stale[0]["metadata"].get("deletionTimestamp")
        assert readded == [], f"a finalizer came back to a runner the set is removing: {readded}"

        async def finalized_and_gone() -> bool:
            if not await _gone(h, ER, NAME):
                runner = await h.get(ER, NAME)
                assert ACTIONS_FINALIZER not in _finalizers(runner), "the registration finalizer came back"
                return False
            return await _gone(h, POD, NAME) and await _gone(h, SECRET, NAME)

        await eventually(finalized_and_gone, within=20.0, interval=0.1)
        assert readded == [], f"a finalizer came back to a runner the set is removing: {readded}"
        assert h.service.requests("remove_runner") - removals_before == 1, "the registration was removed twice"
    finally:
        lag.release()
        manager.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await manager
        await controller_actions.aclose()
        await set_actions.aclose()
        await real.close()
