"""Issue 19 rule 2 on a real API server: no runner holds capacity forever.

Both runner controllers run under chart RBAC with the fake Actions service; no kubelet
runs, so pod status is written through pods/status and an unbound pod is removed at once
when deleted.
"""

from __future__ import annotations

import json
from typing import Any

from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey
from reconcilekit.client.patch import raw_patch

from .conftest import ER, ERS, MERGE, POD, Harness, consistently, eventually

ACTIONS_FINALIZER = "ephemeralrunner.actions.github.com/runner-registration-finalizer"
NAMESPACE = GroupVersionKind("", "v1", "Namespace")


async def _pod(h: Harness, name: str) -> dict[str, Any] | None:
    try:
        return await h.get(POD, name)
    except Exception:
        return None


async def _runner(h: Harness, name: str) -> dict[str, Any] | None:
    try:
        return await h.get(ER, name)
    except Exception:
        return None


async def _registered_runner(h: Harness) -> dict[str, Any] | None:
    """The set's one runner once its ID is recorded and its pod exists."""
    runners = await h.runners()
    if len(runners) != 1 or not (runners[0].get("status") or {}).get("runnerId"):
        return None
    name = runners[0]["metadata"]["name"]
    return runners[0] if await _pod(h, name) is not None else None


async def test_pod_gone_after_job_started_deletes_the_runner_arc_4588(harness: Harness) -> None:
    """The pod of a runner whose job started disappears: the runner is deleted, never relaunched.

    Reproduction of ARC #4588: replicas=1, patchID=1; the pod is set Running, the runner
    gets the listener's JobStarted status, the (unbound) pod is deleted. Before the fix
    the pod came back 0.04 s later from the consumed JIT secret.
    """
    h = harness
    await h.start()
    await h.client.create(h.runner_set(replicas=1, patch_id=1))
    runner = await eventually(lambda: _registered_runner(h))
    name = runner["metadata"]["name"]
    running = {"name": "runner", "image": "img", "imageID": "", "ready": True, "restartCount": 0,
               "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}  # fmt: skip
    await h.patch_status(POD, name, {"phase": "Running", "containerStatuses": [running]})
    await h.patch_status(
        ER, name, {"phase": "Running", "jobId": "job-4588", "jobRequestId": 4588, "workflowRunId": 4588}
    )

    async def running_with_job() -> bool:
        return ((await h.get(ER, name)).get("status") or {}).get("jobId") == "job-4588"

    await eventually(running_with_job)
    removals_before = h.service.requests("remove_runner")
    await h.client.delete(await h.get(POD, name))

    async def runner_gone() -> bool:
        assert await _pod(h, name) is None, "the runner's pod was relaunched from its consumed JIT config"
        return await _runner(h, name) is None

    await eventually(runner_gone, within=10.0, interval=0.05)

    async def no_pod_of_that_name() -> bool:
        return await _pod(h, name) is None

    await consistently(no_pod_of_that_name, duration=2.0)
    assert h.service.requests("remove_runner") - removals_before <= 1


async def test_deletion_with_a_missing_config_secret_completes_arc_4653(harness: Harness) -> None:
    """Runners that never registered (ID 0, no JIT secret) under a config secret that does not exist.

    Reproduction of ARC #4653: the set's runner spec names config secret ``missing``;
    replicas=2, patchID=1; both runners carry both finalizers and runner ID 0; the set is
    deleted. Before the fix both runners stayed Terminating: the registration finalizer
    tried to build an Actions client from the missing secret on every retry. Pinned: no
    RemoveRunner, and no Actions client asked for a deleting runner (`Harness.actions_requests`).
    """
    h = harness
    await h.start()
    removals_before = h.service.requests("remove_runner")
    await h.client.create(h.runner_set(replicas=2, patch_id=1, ephemeralRunnerSpec={"githubConfigSecret": "missing"}))

    async def unregistered_with_finalizers() -> bool:
        runners = await h.runners()
        return len(runners) == 2 and all(
            ACTIONS_FINALIZER in (r["metadata"].get("finalizers") or []) and not (r.get("status") or {}).get("runnerId")
            for r in runners
        )

    await eventually(unregistered_with_finalizers)
    await h.client.delete(await h.get(ERS, "set"))

    async def set_gone() -> bool:
        try:
            await h.get(ERS, "set")
        except Exception:
            return not await h.runners()
        return False

    await eventually(set_gone, within=30.0)
    assert h.service.requests("remove_runner") == removals_before
    for_deletion = [asked for asked in h.actions_requests if asked["deleting"]]
    assert for_deletion == [], f"an Actions client was built for a deleting runner: {for_deletion}"


async def test_runners_refused_at_admission_are_recycled_arc_3014(harness: Harness) -> None:
    """PodSecurity ``restricted`` refuses every runner pod (403): the Failed runners do not keep the slots.

    Reproduction of ARC #3014 (#3685, #4258): replicas=2, patchID=1; both runners go Failed
    (InvalidPod); the listener's next patch (replicas=2, patchID=2) changed nothing before
    the fix. The policy (README, "Failed runners"): a Failed runner is deleted once it is
    the recycle age old and the set creates a fresh one; here the age is 3 s.
    """
    h = harness
    ns = await h.client.get(NAMESPACE, ObjectKey("", h.namespace))
    body = {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    await h.client.patch(ns, raw_patch(MERGE, json.dumps(body)))
    await h.start(runner_fields={"failed_recycle_age": 3.0})
    await h.client.create(h.runner_set(replicas=2, patch_id=1))

    async def both_failed() -> list[str] | None:
        runners = await h.runners()
        statuses = [r.get("status") or {} for r in runners]
        if len(runners) == 2 and all((s.get("phase"), s.get("reason")) == ("Failed", "InvalidPod") for s in statuses):
            return sorted(r["metadata"]["name"] for r in runners)
        return None

    first = await eventually(both_failed)
    await h.patch_spec(ERS, "set", {"replicas": 2, "patchID": 2})

    async def replaced() -> bool:
        runners = [r for r in await h.runners() if not r["metadata"].get("deletionTimestamp")]
        assert len(runners) <= 2, f"more runners than replicas: {[r['metadata']['name'] for r in runners]}"
        names = {r["metadata"]["name"] for r in runners}
        return len(names) == 2 and not names & set(first)

    await eventually(replaced, within=40.0)
