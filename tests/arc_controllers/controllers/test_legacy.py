"""Adopting Go ARC 0.14.x's objects: which runners the owed legacy cleanup removes, on the envtest fixtures,
and the EphemeralRunnerSet reconciler doing it once, across a crash before the commit point."""

from __future__ import annotations

import copy
import json
import string
from pathlib import Path
from typing import Any

import pytest
import yaml

from arc_controllers.controllers.actions_seam import RunnerReference
from arc_controllers.controllers.autoscalingrunnerset.runnerset import RunnerSetPublisher, newest_runner_set
from arc_controllers.controllers.ephemeralrunnerset import EphemeralRunnerSetReconciler
from arc_controllers.controllers.legacy import (
    LEGACY_INTEGRITY_HASH,
    LEGACY_RUNNER_SPEC_HASH,
    carries_legacy_hash,
    drop_legacy_hash,
    is_legacy_runner_set,
    pending_legacy_cleanup,
    runner_spec_matches_set,
)
from reconcilekit.errors import ConflictError
from reconcilekit.reconcile import Request
from reconcilekit.testing import CRASHED, CrashInjector
from tests.arc_controllers.fakeapi import FakeCluster

from .conftest import FakeActions

FIXTURES = Path(__file__).resolve().parents[3] / "envtest" / "testdata" / "go-arc-0.14"
VALUES = {
    "NAMESPACE": "arc-runners",
    "CONTROLLER_NAMESPACE": "arc-systems",
    "CONFIG_URL": "http://127.0.0.1:8080/my-org",
    "SCALE_SET_ID": "3",
    "ARS_UID": "ars-uid",
    "ERS_UID": "ers-uid",
    "LISTENER_SUFFIX": "754b578d",
}


def scale_set(name: str) -> dict[str, Any]:
    text = string.Template((FIXTURES / f"{name}.yaml").read_text()).substitute(VALUES)
    docs = list(yaml.safe_load_all(text))
    return {
        "ars": docs[0],
        "ers": docs[1],
        "runners": [d for d in docs if d["kind"] == "EphemeralRunner"],
        "listener": docs[-1],
    }


def names(runners: list[dict[str, Any]]) -> list[str]:
    return sorted(r["metadata"]["name"] for r in runners)


def test_a_settled_go_arc_set_is_adopted_without_deleting_a_runner_arc_4638() -> None:
    world = scale_set("settled")
    assert is_legacy_runner_set(world["ers"])
    cleanup = pending_legacy_cleanup(world["ers"], world["runners"])
    assert cleanup.done
    assert names(cleanup.kept) == ["settled-runner-a1b2c", "settled-runner-d3e4f"]  # one idle, one busy
    assert cleanup.finishing == []


def test_the_cleanup_go_arc_owed_removes_the_idle_old_runner_and_lets_the_busy_one_finish_arc_4638() -> None:
    world = scale_set("pending")
    assert is_legacy_runner_set(world["ers"])
    cleanup = pending_legacy_cleanup(world["ers"], world["runners"])
    assert names(cleanup.remove) == ["pending-runner-g5h6i"]
    assert names(cleanup.finishing) == ["pending-runner-j7k8l"]
    assert cleanup.kept == []
    assert not cleanup.done


def test_the_cleanup_is_due_once_runners_already_deleting_or_rebuilt_are_not_due_again() -> None:
    world = scale_set("pending")
    idle_old, busy_old = sorted(world["runners"], key=lambda r: r["metadata"]["name"])
    idle_old["metadata"]["deletionTimestamp"] = "2026-12-02T06:00:00Z"  # the first pass deleted it
    replacement = copy.deepcopy(busy_old)
    replacement["metadata"]["name"] = "pending-runner-new01"
    replacement["spec"] = copy.deepcopy(world["ers"]["spec"]["ephemeralRunnerSpec"])
    replacement["status"] = {"phase": "Pending"}
    cleanup = pending_legacy_cleanup(world["ers"], [idle_old, busy_old, replacement])
    assert cleanup.done
    assert names(cleanup.deleting) == ["pending-runner-g5h6i"]
    assert names(cleanup.kept) == ["pending-runner-new01"]
    assert names(cleanup.finishing) == ["pending-runner-j7k8l"]


def test_old_terminated_and_unregistered_runners_are_removed_too() -> None:
    world = scale_set("pending")
    failed, running_without_id = (copy.deepcopy(r) for r in world["runners"])
    failed["status"] = {"phase": "Failed"}
    running_without_id["status"] = {"phase": "Running", "jobId": "job-1"}  # a job but no runner ID: not busy
    cleanup = pending_legacy_cleanup(world["ers"], [failed, running_without_id])
    assert cleanup.delete == [failed]  # no registration to ask about, as in the revision cleanup
    assert cleanup.remove == [running_without_id]


def test_the_runner_spec_is_compared_semantically_and_without_the_proxy_secret_ref() -> None:
    world = scale_set("settled")
    runner = copy.deepcopy(world["runners"][0])
    runner["spec"]["proxySecretRef"] = "settled-ers-proxy"  # set per runner by the set's controller
    runner["spec"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "0.5"  # 500m, written differently
    runner["spec"]["spec"]["tolerations"] = []  # empty and absent are alike
    assert runner_spec_matches_set(runner, world["ers"])
    runner["spec"]["spec"]["containers"][0]["image"] = "ghcr.io/actions/actions-runner:2.331.0"
    assert not runner_spec_matches_set(runner, world["ers"])


def test_a_set_our_revisions_have_touched_is_not_legacy_any_more() -> None:
    world = scale_set("pending")
    ers = world["ers"]
    assert carries_legacy_hash(ers)
    ers["spec"]["actionableRevision"] = 1  # our ARS controller published a spec change: a full cleanup covers it
    assert not is_legacy_runner_set(ers)
    del ers["spec"]["actionableRevision"]
    del ers["metadata"]["annotations"][LEGACY_INTEGRITY_HASH]  # the commit point of the adoption
    assert not is_legacy_runner_set(ers)


def test_dropping_the_hash_keeps_the_other_annotations() -> None:
    ers = scale_set("pending")["ers"]
    drop_legacy_hash(ers)
    assert ers["metadata"]["annotations"] == {
        "actions.github.com/runner-group-name": "Default",
        "actions.github.com/runner-scale-set-name": "pending",
    }
    drop_legacy_hash({"metadata": {}})  # nothing to drop


# ---- the EphemeralRunnerSet reconciler adopting the fixtures -----------------------------------


def legacy_world(name: str) -> tuple[FakeCluster, FakeActions, Request]:
    """The fixture's set and runners on a fake API server, the runners registered (busy ones busy)."""
    world = scale_set(name)
    cluster, actions = FakeCluster(), FakeActions()
    cluster.put(world["ers"])
    for runner in world["runners"]:
        cluster.put(runner)
        rid, runner_name = runner["status"]["runnerId"], runner["metadata"]["name"]
        actions.runners[rid] = RunnerReference(id=rid, name=runner_name, runner_scale_set_id=3)
        if runner["status"].get("jobId"):
            actions.busy.add(rid)
    return cluster, actions, Request(VALUES["NAMESPACE"], world["ers"]["metadata"]["name"])


def reconciler(cluster: FakeCluster, actions: FakeActions, client: Any = None) -> EphemeralRunnerSetReconciler:
    async def factory(_: Any) -> FakeActions:
        return actions

    return EphemeralRunnerSetReconciler(
        client=client or cluster.client(), api_reader=cluster.api_reader(), actions=factory
    )


def removed(actions: FakeActions) -> list[int]:
    return [rid for call, rid in actions.calls if call == "remove_runner"]


def deleting(cluster: FakeCluster) -> list[str]:
    runners = cluster.objects("EphemeralRunner", VALUES["NAMESPACE"])
    return sorted(r["metadata"]["name"] for r in runners if r["metadata"].get("deletionTimestamp"))


def set_annotations(cluster: FakeCluster, name: str) -> dict[str, str]:
    runner_set = cluster.get("EphemeralRunnerSet", VALUES["NAMESPACE"], name)
    annotations: dict[str, str] = runner_set["metadata"]["annotations"]
    return annotations


async def test_the_reconciler_adopts_a_settled_set_and_strips_the_hash_under_the_lock_arc_4638() -> None:
    cluster, actions, request = legacy_world("settled")
    await reconciler(cluster, actions).reconcile(request)
    assert LEGACY_INTEGRITY_HASH not in set_annotations(cluster, "settled")
    strip = next(r for r in cluster.requests if r.verb == "patch" and r.kind == "EphemeralRunnerSet")
    assert json.loads(strip.body)["metadata"]["resourceVersion"]  # the optimistic lock
    await reconciler(cluster, actions).reconcile(request)  # the revision scheme from here on
    assert removed(actions) == []
    assert deleting(cluster) == []
    assert len(cluster.objects("EphemeralRunner")) == 2


async def test_a_crash_before_the_commit_point_does_not_repeat_the_cleanup_arc_4638() -> None:
    cluster, actions, request = legacy_world("pending")
    crash = CrashInjector(cluster.client(), verb="patch", kind="EphemeralRunnerSet", when="before")
    assert await crash.run(reconciler(cluster, actions, crash).reconcile(request)) is CRASHED
    assert removed(actions) == [21]  # the idle old runner; the busy one (22) is never asked about
    assert deleting(cluster) == ["pending-runner-g5h6i"]  # held by the runner controller's finalizer
    assert LEGACY_INTEGRITY_HASH in set_annotations(cluster, "pending")

    await reconciler(cluster, actions).reconcile(request)  # the restarted process
    assert LEGACY_INTEGRITY_HASH not in set_annotations(cluster, "pending")
    await reconciler(cluster, actions).reconcile(request)
    assert removed(actions) == [21]
    assert deleting(cluster) == ["pending-runner-g5h6i"]


async def test_a_conflict_on_the_strip_retries_without_removing_twice_arc_4638() -> None:
    cluster, actions, request = legacy_world("pending")
    cluster.inject_conflicts("patch", "EphemeralRunnerSet")
    with pytest.raises(ConflictError):
        await reconciler(cluster, actions).reconcile(request)
    await reconciler(cluster, actions).reconcile(request)
    assert LEGACY_INTEGRITY_HASH not in set_annotations(cluster, "pending")
    assert removed(actions) == [21]


# ---- Go ARC 0.14.2 as released: a generated-name set with runner-spec-hash (ARC #4638) ------------


def generated_set(world: dict[str, Any], name: str, created: str, replicas: int) -> dict[str, Any]:
    ers = copy.deepcopy(world["ers"])
    ers["metadata"].update(name=name, creationTimestamp=created, uid=f"uid-{name}")
    ers["spec"]["replicas"] = replicas
    return ers


def test_the_newest_runner_set_is_chosen_by_creation_time_then_name() -> None:
    def at(name: str, created: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "creationTimestamp": created}}

    sets = [
        at("a-old", "2026-05-01T00:00:00Z"),
        at("a-new", "2026-05-25T09:14:02Z"),
        at("a-tie", "2026-05-01T00:00:00Z"),
    ]
    assert newest_runner_set(sets) == sets[1]
    assert newest_runner_set(sets[::2]) == sets[2]  # a tie: the greater name, whatever the order
    assert newest_runner_set(sets[2::-2]) == sets[2]
    assert newest_runner_set([]) is None


async def test_a_0_14_2_runner_set_under_a_generated_name_is_found_by_its_owner_arc_4638() -> None:
    """Not named like the scale set: the newest set it controls; another scale set's is ignored;
    once a set named like the scale set exists, that one."""
    world = scale_set("release-0.14.2")
    cluster = FakeCluster()
    draining = cluster.put(generated_set(world, "released-b4c5d", "2026-05-20T08:00:00Z", 0))
    cluster.put(world["ers"] | {"metadata": world["ers"]["metadata"] | {"creationTimestamp": "2026-05-25T09:14:02Z"}})
    other = generated_set(world, "releasedx-z9y8w", "2026-06-01T00:00:00Z", 1)
    other["metadata"]["ownerReferences"] = [{**world["ers"]["metadata"]["ownerReferences"][0], "name": "releasedx"}]
    cluster.put(other)
    publisher = RunnerSetPublisher(client=cluster.client())

    found = await publisher.get(world["ars"])
    assert found is not None
    assert found["metadata"]["name"] == "released-x7k2p"
    assert cluster.get("EphemeralRunnerSet", VALUES["NAMESPACE"], "released-b4c5d") == draining  # left alone

    cluster.put(generated_set(world, "released", "2026-05-01T00:00:00Z", 1))
    found = await publisher.get(world["ars"])
    assert found is not None
    assert found["metadata"]["name"] == "released"
    assert await RunnerSetPublisher(client=FakeCluster().client()).get(world["ars"]) is None


def test_a_0_14_2_set_is_legacy_by_its_runner_spec_hash_and_nothing_is_due_arc_4638() -> None:
    world = scale_set("release-0.14.2")
    ers = world["ers"]
    assert is_legacy_runner_set(ers)
    assert LEGACY_INTEGRITY_HASH not in ers["metadata"]["annotations"]
    cleanup = pending_legacy_cleanup(ers, world["runners"])
    assert cleanup.done
    assert names(cleanup.kept) == ["released-x7k2p-runner-a1b2c", "released-x7k2p-runner-d3e4f"]
    drop_legacy_hash(ers)
    assert LEGACY_RUNNER_SPEC_HASH not in ers["metadata"]["annotations"]
    assert not is_legacy_runner_set(ers)


async def test_the_reconciler_adopts_a_0_14_2_set_without_touching_a_runner_arc_4638() -> None:
    cluster, actions, request = legacy_world("release-0.14.2")
    await reconciler(cluster, actions).reconcile(request)
    assert LEGACY_RUNNER_SPEC_HASH not in set_annotations(cluster, "released-x7k2p")
    await reconciler(cluster, actions).reconcile(request)
    assert removed(actions) == []
    assert deleting(cluster) == []
    assert len(cluster.objects("EphemeralRunner")) == 2


async def test_an_older_0_14_2_set_is_deleted_and_drains_its_busy_runner_arc_4638() -> None:
    """Go 0.14.2 mid-rollout: the older set (replicas 0) is deleted by the scale set's reconciler,
    as Go did; its finalizer deletes the finished runner and waits for the busy one's job."""
    world = scale_set("release-0.14.2")
    cluster, actions = FakeCluster(), FakeActions()
    old = cluster.put(generated_set(world, "released-b4c5d", "2026-05-20T08:00:00Z", 0))
    current = cluster.put(world["ers"])
    finished, busy = copy.deepcopy(world["runners"])
    finished["status"] = {**finished["status"], "phase": "Succeeded"}
    for runner in (finished, busy):
        runner["metadata"]["ownerReferences"][0].update(name="released-b4c5d", uid=old["metadata"]["uid"])
        cluster.put(runner)
        rid = runner["status"]["runnerId"]
        actions.runners[rid] = RunnerReference(id=rid, name=runner["metadata"]["name"], runner_scale_set_id=3)
    actions.busy.add(busy["status"]["runnerId"])

    await RunnerSetPublisher(client=cluster.client()).delete_older(world["ars"], current)
    sets = {s["metadata"]["name"]: s for s in cluster.objects("EphemeralRunnerSet")}
    assert sets["released-b4c5d"]["metadata"].get("deletionTimestamp")
    assert not sets["released-x7k2p"]["metadata"].get("deletionTimestamp")

    request = Request(VALUES["NAMESPACE"], "released-b4c5d")
    for _ in range(3):
        await reconciler(cluster, actions).reconcile(request)
    left = {r["metadata"]["name"]: r for r in cluster.objects("EphemeralRunner")}
    assert left[finished["metadata"]["name"]]["metadata"].get("deletionTimestamp")  # its finalizers go next
    assert not left[busy["metadata"]["name"]]["metadata"].get("deletionTimestamp")  # finishes its job
    assert len(left) == 2  # nothing created
    assert busy["status"]["runnerId"] not in removed(actions)
    assert cluster.objects("EphemeralRunnerSet")[0]["metadata"]["name"] == "released-b4c5d"  # waits for it
