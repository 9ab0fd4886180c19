"""EphemeralRunnerSet reconciler on a fake API server: every seed mechanism of issue 7 pinned.

Each ``seed N`` test was mutation-checked: the line that carries the mechanism was
removed (or reverted to the older behaviour), the test failed, and the line was restored.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from arc_controllers.api.v1alpha1 import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET
from arc_controllers.controllers import patching
from arc_controllers.controllers.actions_seam import RunnerReference
from arc_controllers.controllers.ephemeralrunnerset import RESOURCE_OWNER_KEY, EphemeralRunnerSetReconciler
from arc_controllers.controllers.indexers import controller_owner_index as _controller_owner_index
from arc_controllers.controllers.runnerstates import new_ephemeral_runners_by_states
from reconcilekit import controllerutil
from reconcilekit.cache import InformerCache, Options
from reconcilekit.cache._internal.backoff import BackoffSettings
from reconcilekit.client.delegating import DelegatingClient
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.reconcile import Request
from reconcilekit.testing import FakeClient, LaggingClient, eventually
from tests.arc_controllers.fakeapi import FakeCluster

from .conftest import FakeActions

NS = "ns"
FINALIZER = "ephemeralrunnerset.actions.github.com/finalizer"
KEY = ObjectKey(NS, "set")
REQ = Request(NS, "set")


def make_set(cluster: FakeCluster, *, replicas: int = 0, patch_id: int = 0, revision: int = 0, **status: Any) -> None:
    cluster.put(_set_object(replicas=replicas, patch_id=patch_id, revision=revision, **status))


def _set_object(*, replicas: int = 0, patch_id: int = 0, revision: int = 0, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {
            "name": "set",
            "namespace": NS,
            "uid": "set-uid",
            "finalizers": [FINALIZER],
            "labels": {"actions.github.com/scale-set-name": "set", "actions.github.com/scale-set-namespace": NS},
        },
        "spec": {
            "replicas": replicas,
            "patchID": patch_id,
            "actionableRevision": revision,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": "https://github.com/org",
                "runnerScaleSetId": 1,
                "spec": {"containers": [{"name": "runner", "image": "img"}]},
            },
        },
        "status": {"phase": "Running", **status},
    }


def set_spec(cluster: FakeCluster, **spec: Any) -> None:
    obj = cluster.store[("EphemeralRunnerSet", NS, "set")]
    obj["spec"].update(spec)
    cluster._bump(obj)


def add_runner(
    cluster: FakeCluster,
    name: str,
    *,
    phase: str = "",
    patch_id: int = 0,
    revision: int = 0,
    runner_id: int = 0,
    job: str = "",
    deleting: bool = False,
    created: str = "2026-01-01T00:00:00Z",
) -> None:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "creationTimestamp": created,
        "annotations": {
            "actions.github.com/patch-id": str(patch_id),
            "actions.github.com/actionable-revision": str(revision),
        },
        "ownerReferences": [
            {
                "apiVersion": "actions.github.com/v1alpha1",
                "kind": "EphemeralRunnerSet",
                "name": "set",
                "controller": True,
            }
        ],
    }
    if deleting:  # held by the runner controller's finalizer (not running here)
        meta["deletionTimestamp"] = "2026-01-01T00:00:01Z"
        meta["finalizers"] = ["ephemeralrunner.actions.github.com/finalizer"]
    status: dict[str, Any] = {"phase": phase} if phase else {}
    if runner_id:
        status["runnerId"] = runner_id
    if job:
        status["jobId"] = job
    cluster.put(
        {"apiVersion": "actions.github.com/v1alpha1", "kind": "EphemeralRunner", "metadata": meta, "status": status}
    )


def runners(cluster: FakeCluster) -> list[dict[str, Any]]:
    return cluster.objects("EphemeralRunner", NS)


def live_status(cluster: FakeCluster) -> dict[str, Any]:
    status: dict[str, Any] = cluster.get("EphemeralRunnerSet", NS, "set").get("status") or {}
    return status


def creates(cluster: FakeCluster) -> int:
    return sum(1 for r in cluster.requests if r.verb == "create" and r.kind == "EphemeralRunner")


def status_patches(cluster: FakeCluster) -> list[dict[str, Any]]:
    return [
        json.loads(r.body)
        for r in cluster.requests
        if r.verb == "patch" and r.kind == "EphemeralRunnerSet" and r.subresource == "status"
    ]


def register(actions: FakeActions, *ids: int) -> None:
    for rid in ids:
        actions.runners[rid] = RunnerReference(id=rid, name=f"r{rid}", runner_scale_set_id=1)


def reconciler(cluster: FakeCluster, actions: FakeActions, *, api_reader: bool = True) -> EphemeralRunnerSetReconciler:
    async def factory(_: Any) -> FakeActions:
        return actions

    return EphemeralRunnerSetReconciler(
        client=cluster.client(), api_reader=cluster.api_reader() if api_reader else None, actions=factory
    )


# ---- basics ------------------------------------------------------------------------------


async def test_adds_finalizer_with_a_merge_patch_and_returns(cluster: FakeCluster, actions: FakeActions) -> None:
    make_set(cluster, replicas=2)
    cluster.store[("EphemeralRunnerSet", NS, "set")]["metadata"]["finalizers"] = []
    await reconciler(cluster, actions).reconcile(REQ)
    assert cluster.get("EphemeralRunnerSet", NS, "set")["metadata"]["finalizers"] == [FINALIZER]
    assert runners(cluster) == []


async def test_scales_up_with_patch_id_zero(cluster: FakeCluster, actions: FakeActions) -> None:
    make_set(cluster, replicas=5)
    await reconciler(cluster, actions).reconcile(REQ)
    made = runners(cluster)
    assert len(made) == 5
    assert {r["metadata"]["annotations"]["actions.github.com/patch-id"] for r in made} == {"0"}


async def test_patch_id_already_stamped_on_runners_is_served(cluster: FakeCluster, actions: FakeActions) -> None:
    """A patch ID equal to the latest runner stamp does not scale."""
    make_set(cluster, replicas=3, patch_id=4)
    add_runner(cluster, "a", phase="Pending", patch_id=4)
    await reconciler(cluster, actions).reconcile(REQ)
    assert creates(cluster) == 0


async def test_scale_down_only_on_patch_id_zero_and_never_failed(cluster: FakeCluster, actions: FakeActions) -> None:
    make_set(cluster, replicas=0, patch_id=2)
    add_runner(cluster, "a", phase="Running", runner_id=1, created="2026-01-01T00:00:01Z")
    add_runner(cluster, "b", phase="Failed", runner_id=2)
    register(actions, 1, 2)
    await reconciler(cluster, actions).reconcile(REQ)
    assert len(runners(cluster)) == 2  # patch ID > 0: excess drains on its own
    set_spec(cluster, patchID=0)
    await reconciler(cluster, actions).reconcile(REQ)
    assert [r["metadata"]["name"] for r in runners(cluster)] == ["b"]  # failed is never a victim
    assert ("remove_runner", 1) in actions.calls


async def test_scale_down_skips_unregistered_and_busy(cluster: FakeCluster, actions: FakeActions) -> None:
    # Upstream: ephemeralrunnerset_controller_test.go It "Should kill pending and running runners if they
    #   are up for some reason and the batch contains no jobs"
    make_set(cluster, replicas=0, patch_id=0)
    add_runner(cluster, "a", phase="Pending")
    add_runner(cluster, "b", phase="Running")
    await reconciler(cluster, actions).reconcile(REQ)
    assert len(runners(cluster)) == 2
    for name, rid in (("a", 1), ("b", 2)):
        cluster.set_status("EphemeralRunner", NS, name, {"runnerId": rid})
        register(actions, rid)
    await reconciler(cluster, actions).reconcile(REQ)
    assert runners(cluster) == []


# ---- seed 1: the applied revision advances only after cleanup succeeded -----------------


async def test_seed1_revision_applied_only_after_cleanup_succeeded(cluster: FakeCluster, actions: FakeActions) -> None:
    """A failed cleanup leaves the applied revision behind, so the next reconcile redoes it.

    Mutation check: moving the status patch before the cleanup makes this fail.
    """
    make_set(cluster, replicas=1, revision=2, appliedActionableRevision=1)
    add_runner(cluster, "idle", phase="Running", runner_id=7, revision=1)
    register(actions, 7)
    actions.fail_remove.append(RuntimeError("service unavailable"))
    with pytest.raises(RuntimeError, match="service unavailable"):
        await reconciler(cluster, actions).reconcile(REQ)
    assert live_status(cluster)["appliedActionableRevision"] == 1
    assert [r["metadata"]["name"] for r in runners(cluster)] == ["idle"]

    await reconciler(cluster, actions).reconcile(REQ)
    assert live_status(cluster)["appliedActionableRevision"] == 2
    assert runners(cluster) == []


async def test_revision_change_keeps_busy_runners(cluster: FakeCluster, actions: FakeActions) -> None:
    # Upstream: It "Should delete idle runners, keep busy runners, and create new runners when the spec changes"
    make_set(cluster, replicas=3, revision=1, appliedActionableRevision=1)
    add_runner(cluster, "idle1", phase="Running", runner_id=1, revision=1, patch_id=0)
    add_runner(cluster, "idle2", phase="Pending", runner_id=2, revision=1)
    add_runner(cluster, "busy", phase="Running", runner_id=3, revision=1, job="j")
    register(actions, 1, 2, 3)
    actions.busy.add(3)
    set_spec(cluster, actionableRevision=2)
    r = reconciler(cluster, actions)
    await r.reconcile(REQ)
    assert [x["metadata"]["name"] for x in runners(cluster)] == ["busy"]
    await r.reconcile(REQ)
    made = [x for x in runners(cluster) if x["metadata"]["name"] != "busy"]
    assert len(made) == 2
    assert {x["metadata"]["annotations"]["actions.github.com/actionable-revision"] for x in made} == {"2"}


# ---- seed 2: semantic equality for drift checks -------------------------------------------


async def test_seed2_steady_state_sends_no_patch(cluster: FakeCluster, actions: FakeActions) -> None:
    """Status and proxy secret compare with nil ≡ empty: a converged set costs no writes.

    Mutation check: replacing semantic_equal with == in the proxy secret annotations
    check (live secret has none; desired has {}) makes this fail with a patch per reconcile.
    """
    make_set(cluster, replicas=0)
    set_spec(
        cluster,
        ephemeralRunnerSpec={
            **cluster.get("EphemeralRunnerSet", NS, "set")["spec"]["ephemeralRunnerSpec"],
            "proxy": {"http": {"url": "http://p:1"}},
        },
    )
    r = reconciler(cluster, actions)
    await r.reconcile(REQ)
    # the API server drops empty maps (omitempty): emulate the round trip
    [secret] = cluster.objects("Secret", NS)
    stored = cluster.store[("Secret", NS, secret["metadata"]["name"])]
    stored["metadata"].pop("annotations", None)
    cluster.requests.clear()
    await r.reconcile(REQ)
    assert [x for x in cluster.requests if x.verb in ("patch", "create", "delete")] == []


# ---- seeds 3, 4, 7, 15: patchAppliedActionableRevisionStatus ------------------------------


async def test_seed3_applied_revision_patch_carries_the_optimistic_lock(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    # Upstream: ephemeralrunnerset_revision_patch_test.go TestPatchAppliedActionableRevisionStatusUsesOptimisticLock
    make_set(cluster, revision=2, appliedActionableRevision=1)
    rv = cluster.get("EphemeralRunnerSet", NS, "set")["metadata"]["resourceVersion"]
    await reconciler(cluster, actions).status.patch_applied_actionable_revision_status(KEY, 2)
    [body] = [r.body for r in cluster.requests if r.verb == "patch" and r.subresource == "status"]
    assert json.loads(body) == {"metadata": {"resourceVersion": rv}, "status": {"appliedActionableRevision": 2}}


async def test_seed4_applied_revision_never_moves_backwards(cluster: FakeCluster, actions: FakeActions) -> None:
    # Upstream: TestPatchAppliedActionableRevisionStatusDoesNotMoveBackwards
    # and ephemeralrunnerset_stale_target_test.go
    #   TestPatchAppliedActionableRevisionStatusIgnoresATargetBehindTheLiveRevision
    make_set(cluster, revision=5, appliedActionableRevision=5, finishedRunnerCleanupPatchID=3)
    add_runner(cluster, "old", phase="Outdated", revision=4)
    await reconciler(cluster, actions).status.patch_applied_actionable_revision_status(KEY, 3)
    await reconciler(cluster, actions).status.patch_applied_actionable_revision_status(KEY, 4)
    assert live_status(cluster) == {
        "phase": "Running",
        "appliedActionableRevision": 5,
        "finishedRunnerCleanupPatchID": 3,
    }
    assert status_patches(cluster) == []


async def test_seed7_marker_cleared_only_when_the_revision_advances(cluster: FakeCluster, actions: FakeActions) -> None:
    # Upstream: TestPatchAppliedActionableRevisionStatusClearsFinishedRunnerCleanupPatchID
    make_set(cluster, revision=2, appliedActionableRevision=1, finishedRunnerCleanupPatchID=9)
    cluster.freeze_cache()  # the decision must be made on the API server's state
    r = reconciler(cluster, actions)
    await r.status.patch_applied_actionable_revision_status(KEY, 2)
    assert "finishedRunnerCleanupPatchID" not in live_status(cluster)
    cluster.set_status("EphemeralRunnerSet", NS, "set", {"finishedRunnerCleanupPatchID": 4})
    await r.status.patch_applied_actionable_revision_status(KEY, 2)
    assert live_status(cluster)["finishedRunnerCleanupPatchID"] == 4


async def test_seed15_phase_derived_from_an_uncached_runner_list(cluster: FakeCluster, actions: FakeActions) -> None:
    # Upstream: ephemeralrunnerset_phase_read_test.go
    #   TestPatchAppliedActionableRevisionStatusDerivesPhaseFromAuthoritativeRead
    make_set(cluster, revision=7, appliedActionableRevision=6)
    add_runner(cluster, "ghost", phase="Outdated", revision=7)
    cluster.freeze_cache()
    del cluster.store[("EphemeralRunner", NS, "ghost")]
    await reconciler(cluster, actions).status.patch_applied_actionable_revision_status(KEY, 7)
    assert live_status(cluster)["phase"] == "Running"
    assert live_status(cluster)["appliedActionableRevision"] == 7


async def test_applied_revision_classifies_against_the_advanced_revision(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    # Upstream: ephemeralrunnerset_advancing_revision_phase_test.go
    #   TestPatchAppliedActionableRevisionStatusClassifiesAgainstTheAdvancedRevision
    make_set(cluster, revision=2, appliedActionableRevision=1)
    add_runner(cluster, "left", phase="Outdated", revision=1)
    await reconciler(cluster, actions).status.patch_applied_actionable_revision_status(KEY, 2)
    assert live_status(cluster)["phase"] == "Running"
    assert live_status(cluster)["appliedActionableRevision"] == 2


# ---- seeds 5, 6, 8, 14: the finished-runner cleanup marker --------------------------------


async def test_seed5_finished_cleanup_records_marker_and_suppresses_scale_up(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    # Upstream: It "Should not create a replacement when a runner finishes ahead of the listener decrement patch"
    make_set(cluster, replicas=4, patch_id=2)
    for n in range(3):
        add_runner(cluster, f"run{n}", phase="Running", patch_id=1, runner_id=n + 1, job="j")
    add_runner(cluster, "done", phase="Succeeded", patch_id=1, runner_id=9)
    r = reconciler(cluster, actions)
    await r.reconcile(REQ)
    assert len(runners(cluster)) == 3
    assert live_status(cluster)["finishedRunnerCleanupPatchID"] == 2
    await r.reconcile(REQ)
    await r.reconcile(REQ)
    assert creates(cluster) == 0  # suppressed while the spec still says 2
    set_spec(cluster, replicas=4, patchID=3)
    await r.reconcile(REQ)
    assert creates(cluster) == 1  # any other patch ID lifts it


async def test_seed5_patch_id_zero_is_never_suppressed(cluster: FakeCluster, actions: FakeActions) -> None:
    make_set(cluster, replicas=2, patch_id=0, finishedRunnerCleanupPatchID=0)
    await reconciler(cluster, actions).reconcile(REQ)
    assert creates(cluster) == 2
    assert not any(r.verb == "get" and not r.cached for r in cluster.requests)  # no uncached read for 0


async def test_seed6_marker_follows_patch_ids_downwards(cluster: FakeCluster, actions: FakeActions) -> None:
    # Upstream: ephemeralrunnerset_cleanup_patch_test.go TestPatchFinishedRunnerCleanupPatchIDStatusRecordsALowerPatchID
    make_set(cluster, replicas=1, patch_id=1, finishedRunnerCleanupPatchID=7)
    add_runner(cluster, "done", phase="Succeeded", patch_id=0)
    await reconciler(cluster, actions).reconcile(REQ)
    assert live_status(cluster)["finishedRunnerCleanupPatchID"] == 1


@pytest.mark.parametrize(
    ("patch_id", "suppressed"),
    [(1, False), (0, False), (7, True)],
    ids=["restarted-listener-lower-id", "restarted-listener-id-zero", "same-id-as-marker"],
)
async def test_seed6_restarted_listener_lower_patch_id_is_not_suppressed(
    cluster: FakeCluster, actions: FakeActions, patch_id: int, suppressed: bool
) -> None:
    """A listener restart counts patch IDs from 0 again: only equality with the marker suppresses.

    Marker 7 is left from the old listener; the new one publishes patch ID 1 (then 0) with
    more replicas. A ``>=`` comparison would hold 1 under 7 and strand the scale-up.
    """
    make_set(cluster, replicas=2, patch_id=patch_id, finishedRunnerCleanupPatchID=7)
    await reconciler(cluster, actions).reconcile(REQ)
    assert creates(cluster) == (0 if suppressed else 2)


async def test_marker_patch_is_idempotent(cluster: FakeCluster, actions: FakeActions) -> None:
    # Upstream: TestPatchFinishedRunnerCleanupPatchIDStatusIsIdempotent
    make_set(cluster, finishedRunnerCleanupPatchID=4)
    await reconciler(cluster, actions).status.patch_finished_runner_cleanup_patch_id_status(KEY, 4)
    assert status_patches(cluster) == []


async def test_seed14_marker_patch_carries_the_lock_and_retries_a_conflict(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    # Upstream: TestPatchFinishedRunnerCleanupPatchIDStatusUsesOptimisticLock
    make_set(cluster, finishedRunnerCleanupPatchID=1)
    rv = cluster.get("EphemeralRunnerSet", NS, "set")["metadata"]["resourceVersion"]
    cluster.inject_conflicts("patch", "EphemeralRunnerSet", "status", count=1)
    await reconciler(cluster, actions).status.patch_finished_runner_cleanup_patch_id_status(KEY, 5)
    first, second = status_patches(cluster)
    assert first == {"metadata": {"resourceVersion": rv}, "status": {"finishedRunnerCleanupPatchID": 5}}
    assert second == first  # re-read, re-decided, re-sent
    gets = [r for r in cluster.requests if r.verb == "get" and not r.cached]
    assert len(gets) == 2
    assert live_status(cluster)["finishedRunnerCleanupPatchID"] == 5


async def test_seed14_a_stale_marker_write_conflicts(cluster: FakeCluster, actions: FakeActions) -> None:
    """A marker patch computed against an older resourceVersion is rejected by the server."""
    make_set(cluster, finishedRunnerCleanupPatchID=1)
    stale = cluster.get("EphemeralRunnerSet", NS, "set")
    cluster.set_status("EphemeralRunnerSet", NS, "set", {"finishedRunnerCleanupPatchID": 3})
    lazy = patching.LazyCopy(stale)
    lazy.mutate()["status"]["finishedRunnerCleanupPatchID"] = 2
    from reconcilekit.errors import ConflictError

    with pytest.raises(ConflictError):
        await cluster.client().status().patch(stale, lazy.merge_from(optimistic_lock=True))
    assert live_status(cluster)["finishedRunnerCleanupPatchID"] == 3


@pytest.mark.parametrize(
    ("cache_marker", "server_marker", "suppressed"),
    [(2, 2, True), (0, 0, False), (0, 2, True), (2, 0, False)],
    ids=["server-has-it", "neither", "cache-stale-server-has-it", "cache-has-it-server-cleared"],
)
async def test_seed8_suppression_reads_the_set_uncached(
    cluster: FakeCluster, actions: FakeActions, cache_marker: int, server_marker: int, suppressed: bool
) -> None:
    # Upstream: ephemeralrunnerset_scaleup_suppression_test.go TestScaleUpServicedByFinishedRunnerCleanup
    make_set(cluster, replicas=1, patch_id=2, finishedRunnerCleanupPatchID=cache_marker)
    cluster.freeze_cache()
    cluster.set_status("EphemeralRunnerSet", NS, "set", {"finishedRunnerCleanupPatchID": server_marker})
    await reconciler(cluster, actions).reconcile(REQ)
    assert creates(cluster) == (0 if suppressed else 1)


async def test_seed8_suppression_without_an_api_reader_is_an_error(cluster: FakeCluster, actions: FakeActions) -> None:
    make_set(cluster, replicas=1, patch_id=2)
    with pytest.raises(RuntimeError, match="api_reader"):
        await reconciler(cluster, actions, api_reader=False).reconcile(REQ)
    assert creates(cluster) == 0


# ---- seed 9: deleting runners count towards scale-up --------------------------------------


async def test_seed9_deleting_runners_count_for_scale_up(cluster: FakeCluster, actions: FakeActions) -> None:
    # Upstream: It "Should count runners that are still being deleted when scaling up"
    make_set(cluster, replicas=2, patch_id=2)
    add_runner(cluster, "a", phase="Running", patch_id=1, runner_id=1, job="j")
    add_runner(cluster, "gone", phase="Running", patch_id=1, runner_id=2, deleting=True)
    await reconciler(cluster, actions).reconcile(REQ)
    assert creates(cluster) == 0


# ---- seed 11: lazy copy ------------------------------------------------------------------


async def test_seed11_no_snapshot_on_a_reconcile_that_changes_nothing(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    """Mutation check: an eager DeepCopy at the top of reconcile makes this fail."""
    make_set(cluster, replicas=0)
    before = patching.snapshots_taken()
    await reconciler(cluster, actions).reconcile(REQ)
    assert patching.snapshots_taken() == before
    assert [r for r in cluster.requests if r.verb != "get" and r.verb != "list"] == []


def test_seed11_snapshot_is_taken_before_the_first_mutation() -> None:
    """A change made through mutate() is in the patch; one made before mutate() is lost (the invariant)."""
    obj: dict[str, Any] = {"metadata": {"name": "x", "resourceVersion": "5", "finalizers": []}}
    lazy = patching.LazyCopy(obj)
    with pytest.raises(RuntimeError):
        lazy.merge_from()
    controllerutil.add_finalizer(lazy.mutate(), "f")
    assert json.loads(lazy.merge_from().data(obj)) == {"metadata": {"finalizers": ["f"]}}
    assert json.loads(lazy.merge_from(optimistic_lock=True).data(obj)) == {
        "metadata": {"finalizers": ["f"], "resourceVersion": "5"}
    }
    late: dict[str, Any] = {"metadata": {"name": "x", "finalizers": []}}
    controllerutil.add_finalizer(late, "f")  # before mutate: baked into the snapshot
    lazy2 = patching.LazyCopy(late)
    lazy2.mutate()
    assert json.loads(lazy2.merge_from().data(late)) == {}


def test_seed11_later_mutations_never_re_snapshot() -> None:
    """The snapshot is the object as it was before the first mutate(); later mutate() calls keep it.

    Mutation check: taking a fresh copy on every mutate() makes the second diff lose the first change.
    """
    obj: dict[str, Any] = {"metadata": {"name": "x"}, "status": {"phase": "Outdated", "appliedActionableRevision": 1}}
    lazy = patching.LazyCopy(obj)
    taken = patching.snapshots_taken()
    first = lazy.mutate()
    assert first is obj  # the live object, not a copy
    first["status"]["appliedActionableRevision"] = 2
    second = lazy.mutate()
    assert second is obj
    second["status"]["phase"] = "Running"
    assert patching.snapshots_taken() == taken + 1
    assert lazy.modified()
    assert lazy.merge_from().patch_tree(obj) == {"status": {"appliedActionableRevision": 2, "phase": "Running"}}
    obj["status"]["message"] = "m"  # a change after the last mutate() still diffs against the first snapshot
    lazy.mutate()
    assert lazy.merge_from().patch_tree(obj) == {
        "status": {"appliedActionableRevision": 2, "phase": "Running", "message": "m"}
    }


async def test_seed11_applied_revision_and_phase_go_in_one_patch(cluster: FakeCluster, actions: FakeActions) -> None:
    """Advancing the revision of an Outdated set with no runners sends the revision and the phase together.

    The writer mutates twice (revision, then phase); with a re-snapshot on the second
    mutate() the patch would carry only the phase and the live revision would stay 1.
    """
    make_set(cluster, revision=2, appliedActionableRevision=1, phase="Outdated")
    rv = cluster.get("EphemeralRunnerSet", NS, "set")["metadata"]["resourceVersion"]
    await reconciler(cluster, actions).status.patch_applied_actionable_revision_status(KEY, 2)
    assert status_patches(cluster) == [
        {"metadata": {"resourceVersion": rv}, "status": {"appliedActionableRevision": 2, "phase": "Running"}}
    ]
    assert live_status(cluster) == {"phase": "Running", "appliedActionableRevision": 2}


# ---- seed 13: the revision stamp -----------------------------------------------------------


async def test_seed13_stale_outdated_runner_is_replaced_and_does_not_hold_the_set(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    make_set(cluster, replicas=1, patch_id=0, revision=3, appliedActionableRevision=3)
    add_runner(cluster, "old", phase="Outdated", revision=2)
    r = reconciler(cluster, actions)
    await r.reconcile(REQ)
    assert runners(cluster) == []
    assert live_status(cluster)["phase"] == "Running"
    await r.reconcile(REQ)
    [new] = runners(cluster)
    assert new["metadata"]["annotations"]["actions.github.com/actionable-revision"] == "3"


async def test_seed13_current_outdated_runner_holds_the_set_and_ignores_the_target(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    # Upstream: ephemeralrunnerset_outdated_target_test.go
    #   TestEphemeralRunnerSetIgnoresTheTargetCountOnTheReconcileThatFindsOutdatedRunners
    make_set(cluster, replicas=5, patch_id=4, revision=2, appliedActionableRevision=2)
    add_runner(cluster, "bad", phase="Outdated", revision=2, patch_id=3)
    await reconciler(cluster, actions).reconcile(REQ)
    assert creates(cluster) == 0
    assert live_status(cluster)["phase"] == "Outdated"
    await reconciler(cluster, actions).reconcile(REQ)
    assert creates(cluster) == 0  # Outdated is absorbing: no scaling


def test_classification_buckets() -> None:
    def r(name: str, phase: str, rev: int = 0, pid: int = 0, deleting: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": name,
            "annotations": {
                "actions.github.com/actionable-revision": str(rev),
                "actions.github.com/patch-id": str(pid),
            },
        }
        if deleting:
            meta["deletionTimestamp"] = "t"
        return {"metadata": meta, "status": {"phase": phase}}

    state = new_ephemeral_runners_by_states(
        [r("p", ""), r("run", "Running"), r("s", "Succeeded"), r("f", "Failed"), r("o", "Outdated", 2),
         r("so", "Outdated", 1), r("d", "Running", pid=9, deleting=True)],
        judged_revision=2,
    )  # fmt: skip
    assert [x["metadata"]["name"] for x in state.pending] == ["p"]
    assert [x["metadata"]["name"] for x in state.stale_outdated] == ["so"]
    assert [x["metadata"]["name"] for x in state.outdated] == ["o"]
    assert state.latest_patch_id == 9
    assert state.scale_total() == 3
    assert len(state.terminated()) == 4


async def test_deletion_removes_runners_then_proxy_secret_then_finalizer(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    # Upstream: It "It should cleanup all resources for a deleting EphemeralRunnerSet before removing it"
    make_set(cluster, replicas=0)
    add_runner(cluster, "a", phase="Pending")
    obj = cluster.store[("EphemeralRunnerSet", NS, "set")]
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    r = reconciler(cluster, actions)
    await r.reconcile(REQ)
    assert runners(cluster) == []
    assert ("EphemeralRunnerSet", NS, "set") in cluster.store
    await r.reconcile(REQ)
    assert ("EphemeralRunnerSet", NS, "set") not in cluster.store


async def test_creates_not_yet_in_the_cache_count_as_pending(cluster: FakeCluster, actions: FakeActions) -> None:
    """A lagging cache never makes the set create the same runners twice (patch ID 0 has no stamp guard).

    Mutation check: dropping ``state.unobserved = ...`` in _list_runners makes this create 6.
    """
    make_set(cluster, replicas=3, patch_id=0)
    cluster.freeze_cache()
    r = reconciler(cluster, actions)
    await r.reconcile(REQ)
    await r.reconcile(REQ)
    assert creates(cluster) == 3
    cluster.thaw_cache()
    await r.reconcile(REQ)
    assert creates(cluster) == 3
    assert r.runners.created == {}


# ---- seed 8 on reconcilekit.testing: a lagging informer cache over the fake API server -----


async def test_seed8_lagging_cache_keeps_scale_up_suppressed_when_the_server_has_the_marker(
    actions: FakeActions,
) -> None:
    # Upstream: ephemeralrunnerset_scaleup_suppression_test.go TestScaleUpServicedByFinishedRunnerCleanup
    #   (the stale-cache case, on a real informer cache whose watch is held back)
    """The marker reaches the server but not the cache: the set is still not refilled.

    The reconciler reads through a `DelegatingClient` whose cache is an `InformerCache`
    over `LaggingClient(FakeClient)`; the API reader is the `FakeClient` itself. The
    marker is written while the lagging watch holds events, so the cache still shows
    marker 0. Mutation check: reading the marker through ``self.client`` (the cache)
    in ``_scale_up_serviced_by_finished_runner_cleanup`` creates a runner and fails this.
    """
    fake = FakeClient()
    await fake.create(_set_object(replicas=1, patch_id=2))
    lag = LaggingClient(fake)
    cache = InformerCache(lag, Options(backoff=BackoffSettings(initial=0.01, jitter=0.0, cap=0.05)))
    await cache.index_field(EPHEMERAL_RUNNER, RESOURCE_OWNER_KEY, _controller_owner_index(["EphemeralRunnerSet"]))
    task = asyncio.create_task(cache.start(), name="seed8-cache")
    await asyncio.sleep(0)
    try:
        await cache.get(EPHEMERAL_RUNNER_SET, KEY)
        await cache.list(EPHEMERAL_RUNNER, namespace=NS)
        await eventually(lambda: fake.open_watches == 2)
        lag.hold()
        live = await fake.get(EPHEMERAL_RUNNER_SET, KEY)
        live["status"]["finishedRunnerCleanupPatchID"] = 2
        await fake.status().update(live)

        cached = await cache.get(EPHEMERAL_RUNNER_SET, KEY)
        assert (cached.get("status") or {}).get("finishedRunnerCleanupPatchID") is None  # the cache lags
        client = DelegatingClient(cache=cache, client=fake)

        async def factory(_: Any) -> FakeActions:
            return actions

        r = EphemeralRunnerSetReconciler(client=client, api_reader=fake, actions=factory)
        await r.reconcile(REQ)
        await r.reconcile(REQ)
        assert fake.count("create", "EphemeralRunner") == 0
        assert actions.calls == []
    finally:
        lag.release()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


# Upstream: ephemeralrunnerset_scale_down_test.go @ fb69b651 TestScaleDownDoesNotRemoveADeletingRunnerAgain
async def test_scale_down_does_not_remove_a_deleting_runner_again(cluster: FakeCluster, actions: FakeActions) -> None:
    """A second removal with a stale copy (no deletionTimestamp, registration finalizer still
    listed) of a runner the first removal deleted: no second RemoveRunner, counted as removed."""
    add_runner(cluster, "runner", phase="Running", runner_id=7)
    obj = cluster.store[("EphemeralRunner", NS, "runner")]
    obj["metadata"]["finalizers"] = [
        "ephemeralrunner.actions.github.com/finalizer",
        "ephemeralrunner.actions.github.com/runner-registration-finalizer",
    ]
    register(actions, 7)
    r = reconciler(cluster, actions)
    cached = cluster.get("EphemeralRunner", NS, "runner")
    stale = json.loads(json.dumps(cached))
    assert await r.runners.delete_ephemeral_runner_with_actions_client(cached, actions) is True
    assert actions.calls == [("remove_runner", 7)]
    deleting = cluster.get("EphemeralRunner", NS, "runner")
    assert deleting["metadata"].get("deletionTimestamp")
    assert await r.runners.delete_ephemeral_runner_with_actions_client(stale, actions) is True, (
        "a runner already being deleted counts toward the scale down"
    )
    assert actions.calls == [("remove_runner", 7)], "the registration was removed twice"


async def test_scale_down_counts_a_runner_gone_from_the_server_without_asking_the_service(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    """The same check when the deletion already completed: the stale copy's runner is NotFound."""
    add_runner(cluster, "runner", phase="Running", runner_id=7)
    register(actions, 7)
    r = reconciler(cluster, actions)
    stale = cluster.get("EphemeralRunner", NS, "runner")
    del cluster.store[("EphemeralRunner", NS, "runner")]
    assert await r.runners.delete_ephemeral_runner_with_actions_client(stale, actions) is True
    assert actions.calls == []
