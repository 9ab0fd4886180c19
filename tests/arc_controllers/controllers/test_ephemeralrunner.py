"""EphemeralRunner reconciler and the unregistration queue on a fake API server and a fake Actions service."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from arc_controllers.controllers.actions_seam import RunnerReference
from arc_controllers.controllers.ephemeralrunner import EphemeralRunnerReconciler
from arc_controllers.controllers.unregistration import RunnerUnregistrationQueue
from reconcilekit.errors import ConflictError, InvalidError
from reconcilekit.reconcile import Request
from tests.arc_controllers.fakeapi import FakeCluster

from .conftest import FakeActions

NS = "ns"
NAME = "set-runner-abc"
REQ = Request(NS, NAME)
RUNNER_FINALIZER = "ephemeralrunner.actions.github.com/finalizer"
ACTIONS_FINALIZER = "ephemeralrunner.actions.github.com/runner-registration-finalizer"
NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


class RecordingQueue(RunnerUnregistrationQueue):
    """The real queue, never started: pushes are inspected."""

    def __init__(self, actions: FakeActions) -> None:
        async def factory(_: Any) -> FakeActions:
            return actions

        super().__init__(actions=factory)
        self.pushed: list[tuple[str, int]] = []

    def push(self, runner: dict[str, Any], runner_id: int) -> None:
        self.pushed.append((runner["metadata"]["name"], runner_id))
        super().push(runner, runner_id)


def make_runner(
    cluster: FakeCluster, *, finalizers: list[str] | None = None, env: list[dict[str, Any]] | None = None, **status: Any
) -> None:
    cluster.put(
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunner",
            "metadata": {
                "name": NAME,
                "namespace": NS,
                "uid": "runner-uid",
                "finalizers": [RUNNER_FINALIZER, ACTIONS_FINALIZER] if finalizers is None else finalizers,
                "annotations": {"actions.github.com/patch-id": "1"},
            },
            "spec": {
                "githubConfigUrl": "https://github.com/org",
                "runnerScaleSetId": 1,
                "spec": {"containers": [{"name": "runner", "image": "img", "env": env or []}]},
            },
            "status": status,
        }
    )


def runner(cluster: FakeCluster) -> dict[str, Any]:
    return cluster.get("EphemeralRunner", NS, NAME)


def pod_status(cluster: FakeCluster, **status: Any) -> None:
    cluster.set_status("Pod", NS, NAME, status)


def running_container(ready: bool = False) -> dict[str, Any]:
    return {
        "phase": "Running",
        "containerStatuses": [{"name": "runner", "state": {"running": {}}}],
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ],
    }


def terminated(code: int, phase: str = "Running") -> dict[str, Any]:
    return {"phase": phase, "containerStatuses": [{"name": "runner", "state": {"terminated": {"exitCode": code}}}]}


@pytest.fixture
def queue(actions: FakeActions) -> RecordingQueue:
    return RecordingQueue(actions)


def reconciler(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue | None, **fields: Any
) -> EphemeralRunnerReconciler:
    async def factory(_: Any) -> FakeActions:
        return actions

    return EphemeralRunnerReconciler(
        client=cluster.client(), actions=factory, unregistration_queue=queue, clock=lambda: NOW, **fields
    )


def writes(cluster: FakeCluster) -> list[str]:
    return [
        f"{r.verb} {r.kind}{'/' + r.subresource if r.subresource else ''}"
        for r in cluster.requests
        if r.verb in ("create", "patch", "delete")
    ]


# Upstream: ephemeralrunner_controller_test.go It "It should create/add all required resources for
#   EphemeralRunner (finalizer, jit secret)" and It "It should eventually have runner id set"
async def test_provisions_secret_pod_and_runner_id(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    make_runner(cluster)
    await reconciler(cluster, actions, queue).reconcile(REQ)
    secret = cluster.get("Secret", NS, NAME)
    assert base64.b64decode(secret["data"]["runnerId"]) == b"1"
    pod = cluster.get("Pod", NS, NAME)
    assert pod["metadata"]["ownerReferences"][0]["name"] == NAME
    obj = runner(cluster)
    status = obj["status"]
    assert (status["runnerId"], status["runnerName"]) == (1, NAME)
    # One status write after the pod exists: the runner ID merged with Pending/not ready
    # (performance-facts §1.2 R2+R3), carrying the optimistic lock because it writes the phase.
    assert (status["phase"], status["ready"]) == ("Pending", False)
    assert writes(cluster) == ["create Secret", "create Pod", "patch EphemeralRunner/status"]
    [body] = [json.loads(x.body) for x in cluster.requests if x.verb == "patch"]
    assert body["metadata"]["resourceVersion"]
    assert {k: body["status"][k] for k in ("runnerId", "runnerName", "phase", "ready")} == {
        "runnerId": 1,
        "runnerName": NAME,
        "phase": "Pending",
        "ready": False,
    }


async def test_merged_identity_patch_keeps_a_phase_the_runner_already_has(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    """The merged write sets Pending only on a runner without a phase (never over the listener's)."""
    make_runner(cluster, phase="Running")
    await reconciler(cluster, actions, queue).reconcile(REQ)
    status = runner(cluster)["status"]
    assert (status["runnerId"], status["phase"]) == (1, "Running")


async def test_merged_identity_patch_conflict_is_retried_as_identity_alone(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    """A 409 on the merged write (the listener wrote Running meanwhile) records the ID alone at once.

    No reconcile error, no second secret read: the plain patch carries only the controller's
    own two fields, never the phase, so it needs no lock.
    """
    make_runner(cluster)
    r = reconciler(cluster, actions, queue)
    cluster.inject_conflicts("patch", "EphemeralRunner", "status")
    await r.reconcile(REQ)
    status = runner(cluster)["status"]
    assert status["runnerId"] == 1
    assert "phase" not in status
    assert sum(1 for x in cluster.requests if (x.verb, x.kind) == ("get", "Secret")) == 1
    [_, alone] = [json.loads(x.body) for x in cluster.requests if x.verb == "patch"]
    assert alone["status"] == {"runnerId": 1, "runnerName": NAME}
    assert "resourceVersion" not in alone.get("metadata", {})


async def test_seed12_both_finalizers_added_when_one_is_missing(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    """Mutation check: short-circuiting after the first missing finalizer makes this fail.

    Both directions: the registration finalizer alone, and the main finalizer alone (the
    historical bug: a runner holding only the main finalizer never got the second one).
    """
    make_runner(cluster, finalizers=[ACTIONS_FINALIZER])
    await reconciler(cluster, actions, queue).reconcile(REQ)
    assert sorted(runner(cluster)["metadata"]["finalizers"]) == sorted([RUNNER_FINALIZER, ACTIONS_FINALIZER])
    make_runner(cluster, finalizers=[RUNNER_FINALIZER])
    cluster.requests.clear()
    await reconciler(cluster, actions, queue).reconcile(REQ)
    assert runner(cluster)["metadata"]["finalizers"] == [RUNNER_FINALIZER, ACTIONS_FINALIZER]
    [patch] = [json.loads(r.body) for r in cluster.requests if r.verb == "patch" and not r.subresource]
    assert patch == {"metadata": {"finalizers": [RUNNER_FINALIZER, ACTIONS_FINALIZER]}}
    make_runner(cluster, finalizers=[])
    cluster.requests.clear()
    await reconciler(cluster, actions, queue).reconcile(REQ)
    assert runner(cluster)["metadata"]["finalizers"] == [RUNNER_FINALIZER, ACTIONS_FINALIZER]
    [patch] = [json.loads(r.body) for r in cluster.requests if r.verb == "patch" and not r.subresource]
    assert patch == {"metadata": {"finalizers": [RUNNER_FINALIZER, ACTIONS_FINALIZER]}}


# Upstream: It "It should patch the ephemeral runner non terminating status" and
#   It "It should not set the phase to succeeded without pod termination status" (⚠ newest: Pending only)
async def test_writes_pending_never_running_with_the_optimistic_lock(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    make_runner(cluster)
    r = reconciler(cluster, actions, queue)
    await r.reconcile(REQ)
    # Pending was written with the runner ID at pod creation; the next write is the
    # container's readiness, still Pending and still under the lock.
    pod_status(cluster, **running_container(ready=True))
    cluster.requests.clear()
    rv = runner(cluster)["metadata"]["resourceVersion"]
    await r.reconcile(REQ)
    assert runner(cluster)["status"]["phase"] == "Pending"
    [body] = [json.loads(x.body) for x in cluster.requests if x.verb == "patch"]
    assert body["metadata"] == {"resourceVersion": rv}
    assert body["status"]["ready"] is True
    assert "phase" not in body["status"]  # unchanged: a merge patch carries only what changed
    # Upstream: It "It should update ready based on the latest condition"
    pod_status(cluster, conditions=[
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"},
    ])  # fmt: skip
    await r.reconcile(REQ)
    assert runner(cluster)["status"]["ready"] is True
    assert runner(cluster)["status"]["phase"] == "Pending"
    # the listener marks it Running; the controller keeps it
    cluster.set_status("EphemeralRunner", NS, NAME, {"phase": "Running", "jobId": "j"})
    cluster.requests.clear()
    await r.reconcile(REQ)
    assert runner(cluster)["status"]["phase"] == "Running"
    assert writes(cluster) == []


async def test_pending_patch_conflict_is_the_reconcile_error(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    make_runner(cluster)
    r = reconciler(cluster, actions, queue)
    await r.reconcile(REQ)
    pod_status(cluster, **running_container(ready=True))
    cluster.inject_conflicts("patch", "EphemeralRunner", "status")
    with pytest.raises(ConflictError):
        await r.reconcile(REQ)


# Upstream: It "It should not update phase if container state does not exist"
#   Differs: upstream's phase stays empty; here it is the Pending written with the runner ID
#   at pod creation, and a pod phase without container state still changes nothing.
async def test_no_phase_without_container_state(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    make_runner(cluster)
    r = reconciler(cluster, actions, queue)
    await r.reconcile(REQ)
    pod_status(cluster, phase="Running")
    cluster.requests.clear()
    await r.reconcile(REQ)
    assert runner(cluster)["status"]["phase"] == "Pending"
    assert writes(cluster) == []


async def test_steady_state_reads_no_secret(cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue) -> None:
    """Once the runner ID is recorded and the pod exists, a reconcile costs no API request."""
    make_runner(cluster)
    r = reconciler(cluster, actions, queue)
    await r.reconcile(REQ)
    pod_status(cluster, **running_container())
    await r.reconcile(REQ)
    cluster.requests.clear()
    await r.reconcile(REQ)
    assert cluster.counts() == {}


# Upstream: Describe "Checking the API" It "It should delete EphemeralRunner when pod exits successfully"
async def test_success_marks_succeeded_deletes_and_never_unregisters(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    """Succeeded, deleted and finalized in one reconcile: the DELETE's answer carries on into the finalizer branch.

    Issue 20's finding 2: the finalizer branch used to wait for the deletion event's own
    reconcile (a second pass through the work queue per finished runner).
    """
    make_runner(cluster)
    r = reconciler(cluster, actions, queue)
    await r.reconcile(REQ)
    pod_status(cluster, **terminated(0))
    cluster.requests.clear()
    await r.reconcile(REQ)
    assert ("EphemeralRunner", NS, NAME) not in cluster.store
    writes = [(x.verb, x.kind, x.subresource) for x in cluster.requests if x.verb not in ("get", "list")]
    assert writes[0] == ("patch", "EphemeralRunner", "status")  # Succeeded before anything is deleted
    assert sorted(writes[1:4]) == [("delete", "EphemeralRunner", ""), ("delete", "Pod", ""), ("delete", "Secret", "")]
    assert writes[4:] == [("patch", "EphemeralRunner", "")]  # the finalizers, once pod and secret are gone
    assert json.loads(next(x.body for x in cluster.requests if x.subresource == "status"))["status"]["phase"] == (
        "Succeeded"
    )
    assert ("Pod", NS, NAME) not in cluster.store
    assert ("Secret", NS, NAME) not in cluster.store
    assert queue.pushed == []
    delete_pod = next(x for x in cluster.requests if x.verb == "delete" and x.kind == "Pod")
    assert json.loads(delete_pod.body) == {
        "preconditions": {"uid": cluster_uid(cluster, delete_pod)},
        "grace_period_seconds": 0,
    }


def cluster_uid(cluster: FakeCluster, request: Any) -> str:
    return str(json.loads(request.body)["preconditions"]["uid"])


async def test_deletion_patches_the_registration_finalizer_before_pushing(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    """Mutation check: pushing before the patch (or without it) makes the ordering assertion fail."""
    make_runner(cluster, runnerId=42, phase="Pending")
    order: list[str] = []
    cluster.hooks.append(lambda req: order.append(f"{req.verb} {req.kind}") if req.verb == "patch" else None)
    original_push = queue.push

    def push(obj: dict[str, Any], rid: int) -> None:
        order.append(f"push {rid}")
        original_push(obj, rid)

    queue.push = push  # type: ignore[method-assign]
    cluster.store[("EphemeralRunner", NS, NAME)]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    await reconciler(cluster, actions, queue).reconcile(REQ)
    assert order == ["patch EphemeralRunner", "push 42", "patch EphemeralRunner"]
    assert ("EphemeralRunner", NS, NAME) not in cluster.store


async def test_deletion_resolves_id_by_name_when_secret_is_gone(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    make_runner(cluster, phase="Pending")
    put_config_secret(cluster)
    actions.runners[9] = RunnerReference(id=9, name=NAME, runner_scale_set_id=1)
    cluster.store[("EphemeralRunner", NS, NAME)]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    await reconciler(cluster, actions, queue).reconcile(REQ)
    assert queue.pushed == [(NAME, 9)]


def put_config_secret(cluster: FakeCluster) -> None:
    """The runner names config secret ``github-config``, and it exists."""
    cluster.store[("EphemeralRunner", NS, NAME)]["spec"]["githubConfigSecret"] = "github-config"
    cluster.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "github-config", "namespace": NS}})


async def test_never_registered_runner_with_a_missing_config_secret_is_finalized_arc_4653(
    cluster: FakeCluster, queue: RecordingQueue
) -> None:
    """ID 0, no JIT secret, config secret ``missing``: both finalizers go and no Actions client is built."""
    make_runner(cluster, phase="Pending")
    cluster.store[("EphemeralRunner", NS, NAME)]["spec"]["githubConfigSecret"] = "missing"
    cluster.store[("EphemeralRunner", NS, NAME)]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"

    async def no_client(_: Any) -> FakeActions:
        raise AssertionError("an Actions client was built for a runner with nothing to unregister")

    r = EphemeralRunnerReconciler(client=cluster.client(), actions=no_client, unregistration_queue=queue)
    await r.reconcile(REQ)
    assert queue.pushed == []
    assert ("EphemeralRunner", NS, NAME) not in cluster.store or not runner(cluster)["metadata"].get("finalizers")


# Upstream: It "It should re-create pod on failure and no job assigned" and
#   It "It should mark as failed when job is not assigned and pod is failed"
async def test_failed_pod_without_job_is_recreated_after_backoff(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    make_runner(cluster)
    clock = [NOW]

    async def factory(_: Any) -> FakeActions:
        return actions

    r = EphemeralRunnerReconciler(
        client=cluster.client(), actions=factory, unregistration_queue=queue, clock=lambda: clock[0]
    )
    await r.reconcile(REQ)
    pod_status(cluster, **terminated(1, phase="Failed"))
    await r.reconcile(REQ)
    assert ("Pod", NS, NAME) not in cluster.store
    failures = runner(cluster)["status"]["failures"]
    assert len(failures) == 1
    result = await r.reconcile(REQ)
    assert result.requeue_after == pytest.approx(5.0)  # backoff[1]
    clock[0] = NOW + timedelta(seconds=6)
    await r.reconcile(REQ)
    assert ("Pod", NS, NAME) in cluster.store


# Upstream: It "It should delete ephemeral runner on failure and job assigned"
async def test_failed_pod_with_job_deletes_the_runner(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    make_runner(cluster)
    r = reconciler(cluster, actions, queue)
    await r.reconcile(REQ)
    cluster.set_status("EphemeralRunner", NS, NAME, {"jobId": "j", "phase": "Running"})
    pod_status(cluster, **terminated(1, phase="Failed"))
    await r.reconcile(REQ)
    assert runner(cluster)["metadata"].get("deletionTimestamp")


# Upstream: It "It should eventually delete ephemeral runner after consecutive failures"
async def test_more_than_five_failures_delete_the_runner(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    failures = {f"uid-{n}": "2026-01-01T00:00:00Z" for n in range(6)}
    make_runner(cluster, failures=failures)
    await reconciler(cluster, actions, queue).reconcile(REQ)
    assert runner(cluster)["metadata"].get("deletionTimestamp")


# Upstream: It "It should re-create pod when init container fails before pod phase transitions to Failed"
async def test_init_container_failure_recreates_the_pod(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    make_runner(cluster)
    r = reconciler(cluster, actions, queue)
    await r.reconcile(REQ)
    pod_status(
        cluster, phase="Pending", initContainerStatuses=[{"name": "i", "state": {"terminated": {"exitCode": 2}}}]
    )
    await r.reconcile(REQ)
    assert ("Pod", NS, NAME) not in cluster.store
    assert len(runner(cluster)["status"]["failures"]) == 1


async def test_exit_code_7_marks_outdated_and_queues_unregistration(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    make_runner(cluster)
    r = reconciler(cluster, actions, queue)
    await r.reconcile(REQ)
    pod_status(cluster, **terminated(7))
    await r.reconcile(REQ)
    obj = runner(cluster)
    assert (obj["status"]["phase"], obj["status"]["reason"], obj["status"]["message"]) == (
        "Outdated",
        "Outdated",
        "Runner is deprecated",
    )
    assert ACTIONS_FINALIZER not in obj["metadata"]["finalizers"]
    assert queue.pushed == [(NAME, 1)]
    # terminal: the next reconcile frees pod and secret, pushes nothing more
    await r.reconcile(REQ)
    assert ("Pod", NS, NAME) not in cluster.store
    assert queue.pushed == [(NAME, 1)]


# Upstream: It "It should failed if a pod template is invalid"
async def test_invalid_pod_marks_failed(cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue) -> None:
    make_runner(cluster)
    client = cluster.client()
    original_create = client.create

    async def create(obj: dict[str, Any], /, **kw: Any) -> dict[str, Any]:
        if obj["kind"] == "Pod":
            raise InvalidError(422, "Invalid", "spec.containers: Required value")
        return await original_create(obj, **kw)

    client.create = create  # type: ignore[method-assign]

    async def factory(_: Any) -> FakeActions:
        return actions

    r = EphemeralRunnerReconciler(client=client, actions=factory, unregistration_queue=queue, clock=lambda: NOW)
    await r.reconcile(REQ)
    status = runner(cluster)["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "InvalidPod")
    assert status["message"].startswith("Failed to create the pod:")


async def test_existing_registration_of_same_scale_set_is_removed_then_retried(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    make_runner(cluster)
    actions.runners[5] = RunnerReference(id=5, name=NAME, runner_scale_set_id=1)
    r = reconciler(cluster, actions, queue)
    result = await r.reconcile(REQ)
    assert result.requeue_after == pytest.approx(0.5)
    assert 5 not in actions.runners
    await r.reconcile(REQ)
    assert ("Pod", NS, NAME) in cluster.store


async def test_registration_in_another_scale_set_deletes_the_runner(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    make_runner(cluster)
    actions.runners[5] = RunnerReference(id=5, name=NAME, runner_scale_set_id=99)
    await reconciler(cluster, actions, queue).reconcile(REQ)
    assert runner(cluster)["metadata"].get("deletionTimestamp")


async def test_jit_registrations_run_concurrently(cluster: FakeCluster, actions: FakeActions) -> None:
    """Many runners register at once: nothing in the reconciler serialises the JIT calls."""
    in_flight, peak = 0, 0
    gate = asyncio.Event()
    original = actions.generate_jit_runner_config

    async def slow(**kw: Any) -> Any:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if peak >= 8:
            gate.set()
        await asyncio.wait_for(gate.wait(), 2)
        in_flight -= 1
        return await original(**kw)

    actions.generate_jit_runner_config = slow  # type: ignore[method-assign]
    for n in range(8):
        meta = {"name": f"r{n}", "namespace": NS, "finalizers": [RUNNER_FINALIZER, ACTIONS_FINALIZER]}
        spec = {"runnerScaleSetId": 1, "spec": {"containers": [{"name": "runner"}]}}
        cluster.put(
            {"apiVersion": "actions.github.com/v1alpha1", "kind": "EphemeralRunner", "metadata": meta, "spec": spec}
        )
    r = reconciler(cluster, actions, None)
    await asyncio.gather(*(r.reconcile(Request(NS, f"r{n}")) for n in range(8)))
    assert peak == 8
    assert len(cluster.objects("Pod", NS)) == 8


# ---- the unregistration queue ---------------------------------------------------------------


async def test_queue_dedups_claims_and_retries_a_busy_runner(actions: FakeActions) -> None:
    # Upstream: runner_unregistration_test.go (queue semantics, claim set of #4664)
    async def factory(_: Any) -> FakeActions:
        return actions

    now = [0.0]
    q = RunnerUnregistrationQueue(actions=factory, workers=1, retry_delay=30.0, clock=lambda: now[0])
    actions.runners[3] = RunnerReference(id=3, name="r", runner_scale_set_id=1)
    actions.busy.add(3)
    obj = {"metadata": {"name": "r", "namespace": NS}}
    q.push(obj, 3)
    q.push(obj, 3)  # claimed: dropped
    assert len(q) == 1
    task = asyncio.create_task(q.start(), name="queue-under-test")
    try:
        for _ in range(50):
            await asyncio.sleep(0)
        assert actions.calls == [("remove_runner", 3)]
        q.push(obj, 3)  # still claimed while delayed
        assert len(q) == 1
        actions.busy.clear()
        now[0] = 31.0
        q._wake.set()
        for _ in range(50):
            await asyncio.sleep(0)
        assert actions.calls == [("remove_runner", 3), ("remove_runner", 3)]
        assert 3 not in actions.runners
        assert len(q) == 0
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_queue_drops_not_found_and_other_errors(actions: FakeActions) -> None:
    async def factory(_: Any) -> FakeActions:
        return actions

    q = RunnerUnregistrationQueue(actions=factory)
    actions.fail_remove.append(RuntimeError("boom"))
    task = asyncio.create_task(q.start(), name="queue-under-test")
    try:
        q.push({"metadata": {"name": "a", "namespace": NS}}, 1)
        q.push({"metadata": {"name": "b", "namespace": NS}}, 2)
        for _ in range(50):
            await asyncio.sleep(0)
        assert len(q) == 0
        assert sorted(c[1] for c in actions.calls) == [1, 2]
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_succeeded_runner_is_never_unregistered(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    """Upstream runner_unregistration_test.go self-deregistration table: Succeeded ⇒ no call."""
    make_runner(cluster, phase="Succeeded", runnerId=5)
    await reconciler(cluster, actions, queue).reconcile(REQ)
    assert queue.pushed == []
    assert ACTIONS_FINALIZER in runner(cluster)["metadata"]["finalizers"]
    make_runner(cluster, phase="Failed", runnerId=5)
    await reconciler(cluster, actions, queue).reconcile(REQ)
    assert queue.pushed == [(NAME, 5)]


# Upstream: ephemeralrunnerset_controller_test.go TestPrecomputedConstants
def test_backoff_table_has_one_entry_per_failure_count() -> None:
    from arc_controllers.constants import EPHEMERAL_RUNNER_FAILURE_BACKOFF as FAILURE_BACKOFF
    from arc_controllers.constants import EPHEMERAL_RUNNER_MAX_FAILURES as MAX_FAILURES

    assert len(FAILURE_BACKOFF) == MAX_FAILURES + 1
    assert FAILURE_BACKOFF == (0.0, 5.0, 10.0, 20.0, 40.0, 80.0)


async def test_runner_whose_pod_is_gone_after_its_job_started_is_deleted_arc_4588(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    """A registered runner with a job and a JIT secret but no pod: deleted, no pod created.

    Its finalizer then hands the registration to the queue once.
    """
    make_runner(cluster)
    r = reconciler(cluster, actions, queue)
    await r.reconcile(REQ)
    cluster.set_status("EphemeralRunner", NS, NAME, {**runner(cluster)["status"], "phase": "Running", "jobId": "j"})
    del cluster.store[("Pod", NS, NAME)]
    cluster.requests.clear()
    await r.reconcile(REQ)
    assert writes(cluster) == ["delete EphemeralRunner"]
    await r.reconcile(REQ)
    assert ("Pod", NS, NAME) not in cluster.store
    assert queue.pushed == [(NAME, 1)]


async def test_failed_runner_is_recycled_at_its_recycle_age_arc_3014(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    """A Failed runner waits (requeue, no delete) until it is 300 s old, then is deleted for the set to replace."""
    make_runner(cluster, phase="Failed", reason="InvalidPod", runnerId=1)
    cluster.store[("EphemeralRunner", NS, NAME)]["metadata"]["creationTimestamp"] = "2026-06-01T11:58:00Z"
    result = await reconciler(cluster, actions, queue).reconcile(REQ)  # 120 s old
    assert result.requeue_after == 180.0
    assert not runner(cluster)["metadata"].get("deletionTimestamp")
    cluster.store[("EphemeralRunner", NS, NAME)]["metadata"]["creationTimestamp"] = "2026-06-01T11:55:00Z"
    cluster.requests.clear()
    await reconciler(cluster, actions, queue).reconcile(REQ)  # 300 s old
    assert "delete EphemeralRunner" in writes(cluster)


async def test_failed_runner_recycle_age_is_an_option_arc_3014(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue
) -> None:
    """``failed_recycle_age`` (seconds; the manager's ``--failed-runner-recycle-age``) replaces the 300 s."""
    make_runner(cluster, phase="Failed", reason="InvalidPod", runnerId=1)
    cluster.store[("EphemeralRunner", NS, NAME)]["metadata"]["creationTimestamp"] = "2026-06-01T11:59:40Z"
    result = await reconciler(cluster, actions, queue, failed_recycle_age=30.0).reconcile(REQ)  # 20 s old
    assert result.requeue_after == 10.0
    assert "delete EphemeralRunner" not in writes(cluster)
    cluster.store[("EphemeralRunner", NS, NAME)]["metadata"]["creationTimestamp"] = "2026-06-01T11:59:30Z"
    cluster.requests.clear()
    await reconciler(cluster, actions, queue, failed_recycle_age=30.0).reconcile(REQ)  # 30 s old
    assert "delete EphemeralRunner" in writes(cluster)


@pytest.mark.parametrize("age", [0.0, -1.0, float("inf"), float("nan")])
def test_failed_runner_recycle_age_must_be_positive_seconds(
    cluster: FakeCluster, actions: FakeActions, queue: RecordingQueue, age: float
) -> None:
    with pytest.raises(ValueError, match="failed_recycle_age must be seconds > 0"):
        reconciler(cluster, actions, queue, failed_recycle_age=age)
