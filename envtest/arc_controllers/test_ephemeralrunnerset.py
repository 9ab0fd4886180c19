"""EphemeralRunnerSet controller on a real API server with the fake Actions service.

Upstream: controllers/actions.github.com/ephemeralrunnerset_controller_test.go @ 86169456.
Only the set controller runs (as upstream); runner statuses are set by the test.
"""

from __future__ import annotations

from typing import Any

from conftest import ER, ERS, Harness, consistently, eventually

FINALIZER = "ephemeralrunnerset.actions.github.com/finalizer"


async def set_runner_phase(h: Harness, runner: dict[str, Any], phase: str, **status: Any) -> None:
    await h.patch_status(ER, runner["metadata"]["name"], {"phase": phase, **status})


async def count(h: Harness, n: int) -> list[dict[str, Any]] | None:
    runners = await h.runners()
    return runners if len(runners) == n else None


# Upstream: Describe "Test EphemeralRunnerSet controller" / Context "When creating a new EphemeralRunnerSet"
#   It "It should create/add all required resources for a new EphemeralRunnerSet (finalizer)"
async def test_creates_finalizer_phase_and_runners(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=0))

    async def ready() -> bool:
        obj = await h.get(ERS, "set")
        phase = (obj.get("status") or {}).get("phase")
        return FINALIZER in obj["metadata"].get("finalizers", []) and phase == "Running"

    await eventually(ready)
    assert await h.runners() == []
    await h.patch_spec(ERS, "set", {"replicas": 5})
    await eventually(lambda: count(h, 5))


# Upstream: Context "When deleting a new EphemeralRunnerSet"
#   It "It should cleanup all resources for a deleting EphemeralRunnerSet before removing it"
async def test_deletion_cleans_up_runners_before_the_set(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=5))
    await eventually(lambda: count(h, 5))
    await h.client.delete(await h.get(ERS, "set"))
    await eventually(lambda: count(h, 0))

    async def gone() -> bool:
        try:
            await h.get(ERS, "set")
        except Exception:
            return True
        return False

    await eventually(gone)


# Upstream: Context "When a new EphemeralRunnerSet scale up and down" / It "Should scale up when patch ID changes"
async def test_scales_up_when_patch_id_changes(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=1, patch_id=0))
    await eventually(lambda: count(h, 1))
    await h.patch_spec(ERS, "set", {"replicas": 2, "patchID": 1})
    await eventually(lambda: count(h, 2))


# Upstream: It "Should keep finished ephemeral runners until patch id changes"
async def test_keeps_finished_runners_until_patch_id_changes(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=2, patch_id=1))
    runners = await eventually(lambda: count(h, 2))
    await set_runner_phase(h, runners[0], "Succeeded")
    await set_runner_phase(h, runners[1], "Pending")
    await consistently(lambda: count(h, 2), duration=3.0)


# Upstream: It "Should not create a replacement when a runner finishes ahead of the listener decrement patch"
async def test_no_replacement_for_a_runner_that_finished_ahead_of_the_patch(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=4, patch_id=1))
    runners = await eventually(lambda: count(h, 4))
    for n, runner in enumerate(runners[:3]):
        await set_runner_phase(h, runner, "Running", runnerId=n + 100, jobId=f"job-{n}")
    await set_runner_phase(h, runners[3], "Succeeded")
    await h.patch_spec(ERS, "set", {"replicas": 4, "patchID": 2})
    await eventually(lambda: count(h, 3))

    async def marker() -> bool:
        return ((await h.get(ERS, "set")).get("status") or {}).get("finishedRunnerCleanupPatchID") == 2

    await eventually(marker)
    await consistently(lambda: count(h, 3), duration=4.0)
    await h.patch_spec(ERS, "set", {"replicas": 3, "patchID": 3})
    await consistently(lambda: count(h, 3), duration=2.0)


# Upstream: It "Should resume scaling up once the listener publishes a new patch ID after cleanup"
async def test_resumes_scale_up_on_a_new_patch_id(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=2, patch_id=1))
    runners = await eventually(lambda: count(h, 2))
    for runner in runners:
        await set_runner_phase(h, runner, "Succeeded")
    await h.patch_spec(ERS, "set", {"replicas": 2, "patchID": 2})
    await eventually(lambda: count(h, 0))
    await consistently(lambda: count(h, 0), duration=3.0)
    await h.patch_spec(ERS, "set", {"replicas": 2, "patchID": 3})
    await eventually(lambda: count(h, 2))


# Upstream: It "Should update status on Ephemeral Runner state changes"
async def test_status_is_only_the_phase(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=3, patch_id=1))
    runners = await eventually(lambda: count(h, 3))
    await set_runner_phase(h, runners[0], "Pending")
    await set_runner_phase(h, runners[1], "Running", runnerId=1, jobId="j")
    await set_runner_phase(h, runners[2], "Failed")

    async def status() -> bool:
        return (await h.get(ERS, "set")).get("status") == {"phase": "Running"}

    await eventually(status)
