"""A finished runner's end shared by the two runner reconcilers (issue 20's findings 1, 2 and 4).

The EphemeralRunner reconciler deletes a Succeeded runner and finalizes it in the same
reconcile; the EphemeralRunnerSet reconciler must neither delete it a second time
(`DeletionsRequested`) nor replace it under a patch ID that still counts its job
(`JobCompletions`), even when its cache never showed it finished.
"""

from __future__ import annotations

from typing import Any

import pytest

from arc_controllers.controllers.completions import JobCompletions
from arc_controllers.controllers.deletions import DeletionsRequested
from arc_controllers.controllers.ephemeralrunner import EphemeralRunnerReconciler
from arc_controllers.controllers.ephemeralrunner.resources import RunnerWrites
from arc_controllers.controllers.ephemeralrunnerset import EphemeralRunnerSetReconciler
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.errors import ConflictError
from reconcilekit.reconcile import Request
from tests.arc_controllers.fakeapi import FakeCluster

from .conftest import FakeActions
from .test_ephemeralrunnerset import NS, REQ, add_runner, creates, live_status, make_set, runners, set_spec

SET = ObjectKey(NS, "set")
RUNNER_FINALIZERS = [
    "ephemeralrunner.actions.github.com/finalizer",
    "ephemeralrunner.actions.github.com/runner-registration-finalizer",
]


def runner_deletes(cluster: FakeCluster) -> int:
    return sum(1 for r in cluster.requests if r.verb == "delete" and r.kind == "EphemeralRunner")


def set_reconciler(
    cluster: FakeCluster, actions: FakeActions, *, deletions: DeletionsRequested, completions: JobCompletions
) -> EphemeralRunnerSetReconciler:
    async def factory(_: Any) -> FakeActions:
        return actions

    return EphemeralRunnerSetReconciler(
        client=cluster.client(),
        api_reader=cluster.api_reader(),
        actions=factory,
        deletions=deletions,
        completions=completions,
    )


def runner_reconciler(
    cluster: FakeCluster, actions: FakeActions, *, deletions: DeletionsRequested, completions: JobCompletions
) -> EphemeralRunnerReconciler:
    async def factory(_: Any) -> FakeActions:
        return actions

    return EphemeralRunnerReconciler(
        client=cluster.client(),
        actions=factory,
        unregistration_queue=None,
        deletions=deletions,
        completions=completions,
    )


def finish_job(cluster: FakeCluster, name: str) -> None:
    """The runner holds both finalizers and its pod's runner container exited 0."""
    cluster.store[("EphemeralRunner", NS, name)]["metadata"]["finalizers"] = list(RUNNER_FINALIZERS)
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NS},
            "status": {
                "phase": "Running",
                "containerStatuses": [{"name": "runner", "state": {"terminated": {"exitCode": 0}}}],
            },
        }
    )


# ---- finding 1: one DELETE per finished runner --------------------------------------------


async def test_set_cleanup_skips_a_finished_runner_the_runner_controller_deleted(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    """The set's cache still shows the runner Succeeded: the marker is written, no second DELETE is sent."""
    make_set(cluster, replicas=1, patch_id=2)
    add_runner(cluster, "done", phase="Succeeded", patch_id=1, runner_id=9)
    deletions = DeletionsRequested()
    cluster.freeze_cache()
    await RunnerWrites(client=cluster.client(), deletions=deletions).delete_runner(
        cluster.get("EphemeralRunner", NS, "done")
    )
    assert runner_deletes(cluster) == 1
    await set_reconciler(cluster, actions, deletions=deletions, completions=JobCompletions()).reconcile(REQ)
    assert live_status(cluster)["finishedRunnerCleanupPatchID"] == 2  # the #4642 marker stays
    assert runner_deletes(cluster) == 1


async def test_set_cleanup_still_deletes_a_finished_runner_nobody_deleted(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    make_set(cluster, replicas=1, patch_id=2)
    add_runner(cluster, "done", phase="Succeeded", patch_id=1, runner_id=9)
    deletions = DeletionsRequested()
    await set_reconciler(cluster, actions, deletions=deletions, completions=JobCompletions()).reconcile(REQ)
    assert runner_deletes(cluster) == 1
    assert runners(cluster) == []


async def test_a_failed_delete_is_not_counted_as_requested(cluster: FakeCluster) -> None:
    add_runner(cluster, "done", phase="Succeeded", runner_id=9)
    obj = cluster.get("EphemeralRunner", NS, "done")
    deletions = DeletionsRequested()
    cluster.inject_conflicts("delete", "EphemeralRunner")
    with pytest.raises(ConflictError):
        await RunnerWrites(client=cluster.client(), deletions=deletions).delete_runner(obj)
    assert obj["metadata"]["uid"] not in deletions
    await RunnerWrites(client=cluster.client(), deletions=deletions).delete_runner(obj)
    assert obj["metadata"]["uid"] in deletions


async def test_the_delete_counts_as_requested_once_the_succeeded_patch_lands(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    """The set may see the Succeeded patch before the runner reconciler resumes to send its DELETE.

    Measured: 2 of 50 runners still got a second DELETE while the record was made only
    when the DELETE was sent.
    """
    deletions, completions = DeletionsRequested(), JobCompletions()
    make_set(cluster, replicas=1, patch_id=2)
    add_runner(cluster, "b", phase="Running", patch_id=1, runner_id=2, job="j2")
    finish_job(cluster, "b")
    uid = cluster.get("EphemeralRunner", NS, "b")["metadata"]["uid"]
    seen: list[bool] = []
    cluster.post_hooks.append(
        lambda request: seen.append(uid in deletions) if request.subresource == "status" else None
    )
    await runner_reconciler(cluster, actions, deletions=deletions, completions=completions).reconcile(Request(NS, "b"))
    assert seen == [True]


def test_deletions_requested_keeps_the_newest() -> None:
    deletions = DeletionsRequested(capacity=2)
    for uid in ("a", "b", "c"):
        deletions.requested(uid)
    assert ("a" in deletions, "b" in deletions, "c" in deletions, len(deletions)) == (False, True, True, 2)


# ---- finding 4: a job done and its runner gone unseen is not replaced -----------------------


async def test_a_runner_gone_between_patches_is_not_replaced_while_a_patch_still_counts_its_job(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    """Patch 2 and patch 3 were computed before the job was done; patch 4 after: only 4 replaces the runner.

    The runner reconciler finalizes the Succeeded runner at once, so the set's next
    reconcile never sees it, finished or deleting: without the completion record the set
    would create a runner for a job that is already done (issue 20's finding 4).
    """
    deletions, completions = DeletionsRequested(), JobCompletions()
    ers = set_reconciler(cluster, actions, deletions=deletions, completions=completions)
    er = runner_reconciler(cluster, actions, deletions=deletions, completions=completions)
    make_set(cluster, replicas=2, patch_id=2)
    add_runner(cluster, "a", phase="Running", patch_id=1, runner_id=1, job="j1")
    add_runner(cluster, "b", phase="Running", patch_id=1, runner_id=2, job="j2")
    await ers.reconcile(REQ)
    assert creates(cluster) == 0

    finish_job(cluster, "b")
    await er.reconcile(Request(NS, "b"))
    assert ("EphemeralRunner", NS, "b") not in cluster.store  # Succeeded, deleted and finalized in one go
    assert runner_deletes(cluster) == 1

    await ers.reconcile(REQ)  # still patch 2, computed while j2 ran
    assert creates(cluster) == 0
    set_spec(cluster, patchID=3, replicas=2)  # computed before j2's completion reached the listener
    await ers.reconcile(REQ)
    assert creates(cluster) == 0
    set_spec(cluster, patchID=4, replicas=2)  # a later patch: the second replica is a new job
    await ers.reconcile(REQ)
    assert creates(cluster) == 1
    assert runner_deletes(cluster) == 1


def test_job_completions_count_until_the_second_patch_id_after_the_completion() -> None:
    completions = JobCompletions()
    completions.observe(SET, 5)
    completions.completed(SET, "u1")
    completions.completed(SET, "u1")  # a retry keeps the first record
    assert completions.uncounted(SET, set()) == 1
    assert completions.uncounted(SET, {"u1"}) == 0  # still listed: the set counts it itself
    completions.observe(SET, 6)
    completions.observe(SET, 6)
    assert completions.uncounted(SET, set()) == 1
    completions.observe(SET, 7)
    assert completions.uncounted(SET, set()) == 0
    assert completions.uncounted(ObjectKey(NS, "other"), set()) == 0


def test_job_completions_patch_id_zero_counts_nothing_and_drops_all() -> None:
    completions = JobCompletions()
    completions.observe(SET, 3)
    completions.completed(SET, "u1")
    completions.observe(SET, 0)
    assert completions.uncounted(SET, set()) == 0
    completions.observe(SET, 1)  # a restarted listener
    assert completions.uncounted(SET, set()) == 0


def test_job_completions_before_any_observation_count_under_the_first_patch_id() -> None:
    completions = JobCompletions()
    completions.completed(SET, "u1")  # e.g. right after a controller restart
    completions.observe(SET, 8)
    assert completions.uncounted(SET, set()) == 1
    completions.observe(SET, 9)
    assert completions.uncounted(SET, set()) == 0
