"""EphemeralRunner controller on a real API server with the fake Actions service.

Upstream: controllers/actions.github.com/ephemeralrunner_controller_test.go (June master titles,
⚠ where the newest controller differs). No kubelet runs: pod status is written through
pods/status, as upstream does.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reconcilekit.client.patch import raw_patch
from reconcilekit.errors import NotFoundError

from . import conftest
from .conftest import ER, MERGE, POD, SECRET, Harness, consistently, eventually, setup_ephemeral_runner_reconciler

RUNNER_FINALIZER = "ephemeralrunner.actions.github.com/finalizer"
ACTIONS_FINALIZER = "ephemeralrunner.actions.github.com/runner-registration-finalizer"


def runner_object(h: Harness, *, name: str = "", containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {"name": name or h.namespace, "namespace": h.namespace},
        "spec": {
            "githubConfigUrl": h.service.config_url(),
            "githubConfigSecret": "github-config",
            "runnerScaleSetId": h.scale_set_id,
            "spec": {
                "containers": containers or [{"name": "runner", "image": "ghcr.io/actions/actions-runner:latest"}]
            },
        },
    }


async def pod_of(h: Harness, name: str = "") -> dict[str, Any] | None:
    try:
        return await h.get(POD, name or h.namespace)
    except NotFoundError:
        return None


async def runner_status(h: Harness, name: str = "") -> dict[str, Any]:
    status: dict[str, Any] = (await h.get(ER, name or h.namespace)).get("status") or {}
    return status


async def gone(h: Harness, gvk: Any, name: str = "") -> bool:
    """Runner names are unique per test (the fake service's registrations are shared)."""
    try:
        await h.get(gvk, name or h.namespace)
    except Exception:
        return True
    return False


def container(state: dict[str, Any], *, ready: bool = False) -> dict[str, Any]:
    return {
        "name": "runner",
        "image": "ghcr.io/actions/actions-runner:latest",
        "imageID": "",
        "ready": ready,
        "restartCount": 0,
        "state": state,
    }


async def pod_status(h: Harness, status: dict[str, Any], name: str = "") -> None:
    await h.patch_status(POD, name or h.namespace, status)


async def started(h: Harness) -> dict[str, Any]:
    await h.start(runner_set=False)
    await h.client.create(runner_object(h))
    pod = await eventually(lambda: pod_of(h))
    await eventually(lambda: _has_runner_id(h))
    return pod


async def still_registered(h: Harness, runner_id: int) -> bool:
    """By this runner's ID: the fake service is shared, and a manager's cache sees every namespace."""
    return runner_id in h.service.state.runners


async def _has_runner_id(h: Harness) -> bool:
    return bool((await runner_status(h)).get("runnerId"))


# Upstream: Describe "EphemeralRunner" / Describe "Resource manipulation"
#   It "It should create/add all required resources for EphemeralRunner (finalizer, jit secret)"
#   It "It should eventually have runner id set"
async def test_creates_finalizers_jit_secret_pod_and_runner_id(harness: Harness) -> None:
    h = harness
    pod = await started(h)
    runner = await h.get(ER, h.namespace)
    assert runner["metadata"]["finalizers"] == [RUNNER_FINALIZER, ACTIONS_FINALIZER]
    secret = await h.get(SECRET, h.namespace)
    assert base64.b64decode(secret["data"]["runnerId"]).decode() == str(runner["status"]["runnerId"])
    env = {e["name"] for e in pod["spec"]["containers"][0]["env"]}
    assert {"ACTIONS_RUNNER_INPUT_JITCONFIG", "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT"} <= env
    assert runner["status"]["runnerName"] == h.namespace


# Upstream: It "It should not update phase if container state does not exist"
#   and It "It should patch the ephemeral runner non terminating status"
#   and It "It should not set the phase to succeeded without pod termination status" (⚠ newest writes Pending only)
#   Differs: upstream's phase stays empty until the runner container reports; here Pending is
#   written together with the runner ID right after the pod is created (performance-facts
#   §1.2 R2+R3 merged), so the pod's own phase, with or without container state, never moves it.
async def test_phase_pending_only_once_the_runner_container_reports(harness: Harness) -> None:
    h = harness
    await started(h)
    status = await runner_status(h)
    assert (status.get("phase"), status.get("ready")) == ("Pending", False)
    await pod_status(h, {"phase": "Running"})
    await eventually(lambda: pod_of(h))

    async def pending() -> bool:
        return (await runner_status(h)).get("phase") == "Pending"

    await consistently(pending, duration=1.0)
    await pod_status(h, {"phase": "Running", "containerStatuses": [container({"running": {}})]})
    await consistently(pending, duration=1.0)


# Upstream: It "It should update ready based on the latest condition"
async def test_ready_follows_the_latest_ready_condition(harness: Harness) -> None:
    h = harness
    await started(h)
    await pod_status(
        h,
        {
            "phase": "Running",
            "containerStatuses": [container({"running": {}}, ready=True)],
            "conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"},
            ],
        },
    )

    async def ready() -> bool:
        return (await runner_status(h)).get("ready") is True

    await eventually(ready)


# Upstream: It "It should re-create pod on failure and no job assigned"
#   and It "It should mark as failed when job is not assigned and pod is failed"
async def test_recreates_pod_on_failure_without_job(harness: Harness) -> None:
    h = harness
    pod = await started(h)
    await pod_status(h, {"phase": "Failed", "containerStatuses": [container({"terminated": {"exitCode": 1}})]})

    async def new_pod() -> bool:
        now = await pod_of(h)
        return now is not None and now["metadata"]["uid"] != pod["metadata"]["uid"]

    await eventually(new_pod)
    assert list((await runner_status(h))["failures"]) == [pod["metadata"]["uid"]]


# Upstream: It "It should delete ephemeral runner on failure and job assigned"
async def test_deletes_runner_on_failure_with_job(harness: Harness) -> None:
    h = harness
    await started(h)
    await h.patch_status(ER, h.namespace, {"jobId": "job-1", "phase": "Running"})
    await pod_status(h, {"phase": "Failed", "containerStatuses": [container({"terminated": {"exitCode": 1}})]})
    await eventually(lambda: gone(h, ER))


# Upstream: It "It should re-create pod when init container fails before pod phase transitions to Failed"
async def test_recreates_pod_when_init_container_fails(harness: Harness) -> None:
    h = harness
    pod = await started(h)
    init = {"name": "init", "image": "x", "imageID": "", "ready": False, "restartCount": 0,
            "state": {"terminated": {"exitCode": 3}}}  # fmt: skip
    await pod_status(h, {"phase": "Pending", "initContainerStatuses": [init]})

    async def new_pod() -> bool:
        now = await pod_of(h)
        return now is not None and now["metadata"]["uid"] != pod["metadata"]["uid"]

    await eventually(new_pod)


# Upstream: Describe "Checking the API" It "It should delete EphemeralRunner when pod exits successfully"
#   and It "It should treat pod failed with runner container exit 0 as success with no job id"
async def test_successful_exit_deletes_the_runner_without_unregistering(harness: Harness) -> None:
    h = harness
    await started(h)
    runner_id = (await runner_status(h))["runnerId"]
    await pod_status(h, {"phase": "Failed", "containerStatuses": [container({"terminated": {"exitCode": 0}})]})
    await eventually(lambda: gone(h, ER))
    await eventually(lambda: gone(h, POD))
    await eventually(lambda: gone(h, SECRET))
    await consistently(lambda: still_registered(h, runner_id), duration=1.0)  # self-deregistered: not removed


# Upstream: It "It should clean up resources when deleted"
async def test_deletion_cleans_up_and_unregisters(harness: Harness) -> None:
    h = harness
    await started(h)
    runner_id = (await runner_status(h))["runnerId"]
    assert runner_id in h.service.state.runners
    await h.client.delete(await h.get(ER, h.namespace))
    await eventually(lambda: gone(h, ER))
    await eventually(lambda: gone(h, POD))
    await eventually(lambda: gone(h, SECRET))

    async def unregistered() -> bool:
        return runner_id not in h.service.state.runners

    await eventually(unregistered)


# Upstream: It "It should failed if a pod template is invalid"
async def test_invalid_pod_template_marks_failed(harness: Harness) -> None:
    h = harness
    await h.start(runner_set=False)
    await h.client.create(
        runner_object(h, containers=[{"name": "runner", "image": "x", "ports": [{"containerPort": -1}]}])
    )

    async def failed() -> bool:
        status = await runner_status(h)
        return status.get("phase") == "Failed" and status.get("reason") == "InvalidPod"

    await eventually(failed)


# Upstream: It "It should eventually delete ephemeral runner after consecutive failures"
async def test_deletes_runner_after_too_many_failures(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """Six pods fail through pods/status, one after another; each is deleted, recorded as a
    failure and replaced, and the sixth failure deletes the runner.

    Differs: the failure backoff (5+10+20+40 s between pods, spec §3.7) is skipped by moving
    the reconciler's clock 10 minutes forward after each recorded failure, then touching the
    runner so it reconciles at once instead of waiting out the requeue it asked for.
    """
    skipped = [timedelta(0)]
    reconcilers: list[Any] = []

    def capture(*args: Any, **kwargs: Any) -> Any:
        reconciler = setup_ephemeral_runner_reconciler(*args, **kwargs)
        reconciler.clock = lambda: datetime.now(UTC) + skipped[0]
        reconcilers.append(reconciler)
        return reconciler

    monkeypatch.setattr(conftest, "setup_ephemeral_runner_reconciler", capture)
    h = harness
    pod = await started(h)
    assert reconcilers
    seen: list[str] = []
    for n in range(1, 7):
        seen.append(pod["metadata"]["uid"])
        await pod_status(h, {"phase": "Failed", "reason": "UnexpectedAdmissionError"})
        if n == 6:
            break

        async def recorded() -> bool:
            return sorted((await runner_status(h)).get("failures") or {}) == sorted(seen)

        await eventually(recorded)
        skipped[0] += timedelta(minutes=10)
        await h.client.patch(
            await h.get(ER, h.namespace),
            raw_patch(MERGE, json.dumps({"metadata": {"annotations": {"test.example/touch": str(n)}}})),
        )

        async def replaced() -> dict[str, Any] | None:
            now = await pod_of(h)
            return now if now is not None and now["metadata"]["uid"] not in seen else None

        pod = await eventually(replaced)
    await eventually(lambda: gone(h, ER))


# Upstream: It "It should re-create pod on eviction"
async def test_recreates_pod_on_eviction(harness: Harness) -> None:
    h = harness
    pod = await started(h)
    await pod_status(h, {"phase": "Failed", "reason": "Evicted", "message": "node low on memory"})

    async def new_pod() -> bool:
        now = await pod_of(h)
        return now is not None and now["metadata"]["uid"] != pod["metadata"]["uid"]

    await eventually(new_pod)
    status = await runner_status(h)
    assert status["reason"] == "Evicted"


# Upstream: It "It should re-create pod on reason starting with OutOf"
async def test_recreates_pod_on_reason_starting_with_out_of(harness: Harness) -> None:
    h = harness
    pod = await started(h)
    await pod_status(h, {"phase": "Failed", "reason": "OutOfpods", "message": "Node didn't have enough resource: pods"})

    async def new_pod() -> bool:
        now = await pod_of(h)
        return now is not None and now["metadata"]["uid"] != pod["metadata"]["uid"]

    await eventually(new_pod)
    status = await runner_status(h)
    assert status["reason"] == "OutOfpods"
    assert list(status["failures"]) == [pod["metadata"]["uid"]]


# Upstream: It "It should treat pod failed with runner container exit 0 as success with job id"
async def test_pod_failed_with_exit_0_and_a_job_is_success(harness: Harness) -> None:
    h = harness
    await started(h)
    await h.patch_status(ER, h.namespace, {"jobId": "job-1", "jobRepositoryName": "org/repo"})
    runner_id = (await runner_status(h))["runnerId"]
    await pod_status(h, {"phase": "Failed", "containerStatuses": [container({"terminated": {"exitCode": 0}})]})
    await eventually(lambda: gone(h, ER))
    await eventually(lambda: gone(h, POD))
    await eventually(lambda: gone(h, SECRET))
    await consistently(lambda: still_registered(h, runner_id), duration=1.0)  # self-deregistered: not removed


# Upstream: It "It should delete ephemeral runner when pod failed before runner state is recorded and job assigned"
async def test_deletes_runner_when_pod_failed_before_state_with_job(harness: Harness) -> None:
    h = harness
    await started(h)
    await h.patch_status(ER, h.namespace, {"jobId": "job-1"})
    await pod_status(h, {"phase": "Failed", "reason": "UnexpectedAdmissionError"})  # no container status yet
    await eventually(lambda: gone(h, ER))


# Upstream: It "It should delete ephemeral runner when pod failed before runner state is recorded and job not assigned"
#   (the title says delete; the test asserts the pod is recreated with one failure recorded)
async def test_recreates_pod_when_pod_failed_before_state_without_job(harness: Harness) -> None:
    h = harness
    pod = await started(h)
    await pod_status(h, {"phase": "Failed", "reason": "UnexpectedAdmissionError"})

    async def new_pod() -> bool:
        now = await pod_of(h)
        return now is not None and now["metadata"]["uid"] != pod["metadata"]["uid"]

    await eventually(new_pod)
    assert list((await runner_status(h))["failures"]) == [pod["metadata"]["uid"]]
    assert not await gone(h, ER)


# Upstream: It "It should delete ephemeral runner when init container fails and job is assigned"
async def test_deletes_runner_when_init_container_fails_with_job(harness: Harness) -> None:
    h = harness
    await started(h)
    await h.patch_status(ER, h.namespace, {"jobId": "job-1"})
    init = {"name": "init", "image": "x", "imageID": "", "ready": False, "restartCount": 0,
            "state": {"terminated": {"exitCode": 3}}}  # fmt: skip
    await pod_status(h, {"phase": "Pending", "initContainerStatuses": [init]})
    await eventually(lambda: gone(h, ER))
