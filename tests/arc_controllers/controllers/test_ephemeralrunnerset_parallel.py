"""The runner set's batched create and delete (at most RUNNER_BATCH_CONCURRENCY in flight) on a fake cluster.

Upstream: ephemeralrunnerset_parallel_test.go @d6a7009b (controllers/actions.github.com), a spec
§12.2 "present, not read" file. Upstream calls createEphemeralRunners/deleteIdleEphemeralRunners
directly; here one reconcile drives each, which reaches the same functions.
"""

from __future__ import annotations

from tests.arc_controllers.fakeapi import FakeCluster

from .conftest import FakeActions, JobStillRunningError
from .test_ephemeralrunnerset import REQ, add_runner, make_set, reconciler, register, runners


# Upstream: TestEphemeralRunnerSetCreateEphemeralRunnersCreatesAllRunnersWithResourceCache
async def test_a_burst_creates_every_runner_with_a_unique_name(cluster: FakeCluster, actions: FakeActions) -> None:
    make_set(cluster, replicas=10, patch_id=0)
    await reconciler(cluster, actions).reconcile(REQ)
    names = [r["metadata"]["name"] for r in runners(cluster)]
    assert len(names) == 10
    assert all(names)
    assert len(set(names)) == 10


# Upstream: TestEphemeralRunnerSetDeleteIdleRunnersContinuesAfterJobStillRunning
async def test_scale_down_continues_after_a_runner_still_running_a_job(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    make_set(cluster, replicas=1, patch_id=0)
    for rid, name in enumerate(("a", "b", "c"), start=1):
        add_runner(cluster, name, phase="Running", runner_id=rid)
        register(actions, rid)
    actions.fail_remove.append(JobStillRunningError("first"))
    await reconciler(cluster, actions).reconcile(REQ)
    assert len(runners(cluster)) == 1
    assert sum(1 for verb, _ in actions.calls if verb == "remove_runner") >= 3
