"""EphemeralRunnerSet controller on a real API server with the fake Actions service.

Upstream: controllers/actions.github.com/ephemeralrunnerset_controller_test.go @ 86169456.
Only the set controller runs (as upstream); runner statuses are set by the test.

"Stays the same" windows are shorter than upstream's (2-4 s where upstream holds 5-12 s),
to keep the suite's run time down. They still show what they claim: every change a test
makes (a runner status, a spec patch) is a watch event that reconciles the set within
milliseconds, and nothing reconciles it later on its own (the scaling paths return no
requeue delay here, and the cache's resync period is the 10 h default), so a wrong create
or delete shows in the first fraction of a second; the longer upstream windows mostly
absorb Go envtest latency.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from typing import Any

from arc_controllers.controllers.ephemeralrunnerset import EphemeralRunnerSetReconciler
from conftest import ER, ERS, MERGE, SECRET, Harness, consistently, eventually
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.client.patch import raw_patch
from reconcilekit.errors import NotFoundError
from reconcilekit.reconcile import Request

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
    # Differs: upstream also seeds the set's ResourceCache and checks every entry owned by the
    # set is purged. This port has no ResourceCache (spec §4.6 allows dropping it: it only
    # memoises desired objects), so there is nothing to purge and nothing is checked.


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
    await consistently(lambda: count(h, 2), duration=3.0)  # upstream 5 s (module docstring)


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
    await consistently(lambda: count(h, 3), duration=4.0)  # upstream 12 s (module docstring)
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
    await consistently(lambda: count(h, 0), duration=3.0)  # upstream 10 s (module docstring)
    await h.patch_spec(ERS, "set", {"replicas": 2, "patchID": 3})
    await eventually(lambda: count(h, 2))


# Upstream: It "Should update status on Ephemeral Runner state changes"
async def test_status_is_only_the_phase(harness: Harness) -> None:
    """Pending, Running and Failed runners: the status is the phase alone. Scaling to 0
    (patch ID 0, as upstream's replicas-only patch) removes the pending and the idle
    running runner and keeps the failed one; the status stays, also once it is deleted."""
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=3, patch_id=0))
    runners = await eventually(lambda: count(h, 3))
    await set_runner_phase(h, runners[0], "Pending", runnerId=101)
    await set_runner_phase(h, runners[1], "Running", runnerId=102)
    await set_runner_phase(h, runners[2], "Failed", runnerId=103)

    async def status() -> bool:
        return (await h.get(ERS, "set")).get("status") == {"phase": "Running"}

    await eventually(status)
    await h.patch_spec(ERS, "set", {"replicas": 0})
    [failed] = await eventually(lambda: count(h, 1))
    assert failed["metadata"]["name"] == runners[2]["metadata"]["name"]
    await eventually(status)
    await h.client.delete(failed)
    await eventually(lambda: count(h, 0))
    await consistently(status, duration=1.0)


# Upstream: It "propagates updated EphemeralRunnerSet annotations to newly created EphemeralRunners"
async def test_set_annotations_reach_only_runners_created_afterwards(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    ers = h.runner_set(replicas=1, patch_id=1)
    ers["metadata"]["annotations"] = {"team": "a"}
    await h.client.create(ers)
    [first] = await eventually(lambda: count(h, 1))
    assert first["metadata"]["annotations"]["team"] == "a"
    obj = await h.get(ERS, "set")
    await h.client.patch(obj, raw_patch(MERGE, json.dumps({"metadata": {"annotations": {"team": "b"}}})))
    await h.patch_spec(ERS, "set", {"replicas": 2, "patchID": 2})
    runners = await eventually(lambda: count(h, 2))
    teams = {r["metadata"]["name"]: r["metadata"]["annotations"]["team"] for r in runners}
    assert teams[first["metadata"]["name"]] == "a"
    assert sorted(teams.values()) == ["a", "b"]


# Upstream: It "Should clean up finished ephemeral runner when scaling down"
async def test_cleans_up_finished_runner_when_scaling_down(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=2, patch_id=1))
    runners = await eventually(lambda: count(h, 2))
    await set_runner_phase(h, runners[0], "Succeeded")
    await set_runner_phase(h, runners[1], "Running", runnerId=1, jobId="j")
    await h.patch_spec(ERS, "set", {"replicas": 1, "patchID": 2})
    [left] = await eventually(lambda: count(h, 1))
    assert left["metadata"]["name"] == runners[1]["metadata"]["name"]


async def finished_runner_is_cleaned_then_replaced(h: Harness, *, desired: int) -> None:
    """Two runners, one Succeeded and one busy; the listener then asks for ``desired`` runners.

    The patch that sees the finished runner deletes it and holds scale-up for that patch ID
    (the cleanup marker); the next patch ID makes ``desired`` runners, none of them finished.
    """
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=2, patch_id=1))
    runners = await eventually(lambda: count(h, 2))
    await set_runner_phase(h, runners[0], "Succeeded")
    await set_runner_phase(h, runners[1], "Running", runnerId=1, jobId="j")
    await h.patch_spec(ERS, "set", {"replicas": desired, "patchID": 2})
    await eventually(lambda: count(h, 1))
    await consistently(lambda: count(h, 1), duration=2.0)
    await h.patch_spec(ERS, "set", {"replicas": desired, "patchID": 3})
    now = await eventually(lambda: count(h, desired))
    assert all((r.get("status") or {}).get("phase") != "Succeeded" for r in now)


# Upstream: It "Should handle double scale up"
async def test_double_scale_up(harness: Harness) -> None:
    await finished_runner_is_cleaned_then_replaced(harness, desired=3)


# Upstream: It "Should handle scale down without removing pending runners"
async def test_scale_down_keeps_pending_runners(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=2, patch_id=1))
    runners = await eventually(lambda: count(h, 2))
    await set_runner_phase(h, runners[0], "Succeeded")
    await set_runner_phase(h, runners[1], "Pending")
    await h.patch_spec(ERS, "set", {"replicas": 0, "patchID": 2})
    [left] = await eventually(lambda: count(h, 1))
    assert left["metadata"]["name"] == runners[1]["metadata"]["name"]
    await set_runner_phase(h, left, "Succeeded")
    await h.patch_spec(ERS, "set", {"replicas": 0, "patchID": 3})
    await eventually(lambda: count(h, 0))


# Upstream: It "Should kill pending and running runners if they are up for some reason and the batch contains no jobs"
async def test_kills_idle_runners_once_registered_when_no_jobs(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=2, patch_id=1))
    runners = await eventually(lambda: count(h, 2))
    await set_runner_phase(h, runners[0], "Pending")
    await set_runner_phase(h, runners[1], "Running")
    await h.patch_spec(ERS, "set", {"replicas": 0, "patchID": 0})
    await consistently(lambda: count(h, 2), duration=2.0)
    await set_runner_phase(h, runners[0], "Pending", runnerId=1)
    await set_runner_phase(h, runners[1], "Running", runnerId=2)
    await eventually(lambda: count(h, 0))


# Upstream: It "Should count runners that are still being deleted when scaling up"
async def test_counts_deleting_runners_for_scale_up(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=2, patch_id=1))
    runners = await eventually(lambda: count(h, 2))
    held = runners[0]
    await h.client.patch(held, raw_patch(MERGE, json.dumps({"metadata": {"finalizers": ["test.example/hold"]}})))
    await h.client.delete(await h.get(ER, held["metadata"]["name"]))
    await h.patch_spec(ERS, "set", {"replicas": 2, "patchID": 2})
    await consistently(lambda: count(h, 2), duration=3.0)  # upstream 10 s (module docstring)
    held_name = held["metadata"]["name"]
    await h.client.patch(await h.get(ER, held_name), raw_patch(MERGE, '{"metadata":{"finalizers":null}}'))

    async def replaced() -> list[dict[str, Any]] | None:
        # Once the held runner is really gone the set is one short and makes one more. Whether
        # a list ever shows the in-between count of 1 is a race, so wait for the outcome.
        runners = await h.runners()
        names = {r["metadata"]["name"] for r in runners}
        return runners if len(runners) == 2 and held_name not in names else None

    await eventually(replaced)
    await h.patch_spec(ERS, "set", {"replicas": 2, "patchID": 3})
    await consistently(lambda: count(h, 2), duration=1.0)


# Upstream: It "Should delete idle runners, keep busy runners, and create new runners when the spec changes"
async def test_spec_change_replaces_idle_runners_and_keeps_busy_ones(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=3, patch_id=0))
    runners = await eventually(lambda: count(h, 3))
    await set_runner_phase(h, runners[0], "Running", runnerId=101)
    await set_runner_phase(h, runners[1], "Running", runnerId=102)
    await set_runner_phase(h, runners[2], "Running", runnerId=103, jobId="busy")
    spec = (await h.get(ERS, "set"))["spec"]["ephemeralRunnerSpec"]
    spec["spec"]["containers"][0]["image"] = "runner:new"
    await h.patch_spec(ERS, "set", {"actionableRevision": 1, "ephemeralRunnerSpec": spec})

    async def converged() -> list[dict[str, Any]] | None:
        now = await h.runners()
        images = sorted(r["spec"]["spec"]["containers"][0]["image"] for r in now)
        return now if images == ["ghcr.io/actions/actions-runner:latest", "runner:new", "runner:new"] else None

    now = await eventually(converged)
    busy = next(r for r in now if r["metadata"]["name"] == runners[2]["metadata"]["name"])
    assert busy["status"]["jobId"] == "busy"


# Upstream: Describe "Test EphemeralRunnerSet actionable revision cleanup"
#   It "drains every runner that is not running a job and scales to zero"
async def test_current_revision_outdated_drains_everything_not_busy(harness: Harness) -> None:
    """Outdated, pending, idle running (with a runner ID) and busy runners; the Outdated
    report switches the set off: all but the busy one go, none is refilled for 2 s (as
    upstream), and once the busy one succeeds the set reaches 0 with replicas still 4 (no
    listener patch, as upstream).

    Differs: the manager runs the reconciler (upstream calls Reconcile by hand), and the
    runners are the set's own (replicas 4) rather than created by the test, so the Outdated
    report is written last: written first, the drain would take the runners before the
    test marks one busy."""
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=4, patch_id=1))
    runners = await eventually(lambda: count(h, 4))
    await set_runner_phase(h, runners[1], "Running", runnerId=7, jobId="busy")
    await set_runner_phase(h, runners[2], "Pending")
    await set_runner_phase(h, runners[3], "Running", runnerId=8)  # idle
    await set_runner_phase(h, runners[0], "Outdated", runnerId=9)  # last: it switches the set to draining

    async def outdated() -> bool:
        return ((await h.get(ERS, "set")).get("status") or {}).get("phase") == "Outdated"

    await eventually(outdated)
    [left] = await eventually(lambda: count(h, 1))
    assert left["metadata"]["name"] == runners[1]["metadata"]["name"]
    assert not left["metadata"].get("deletionTimestamp")
    await consistently(lambda: count(h, 1), duration=2.0)
    await set_runner_phase(h, left, "Succeeded", jobId=None)
    await eventually(lambda: count(h, 0))
    assert (await h.get(ERS, "set"))["spec"]["replicas"] == 4


# Upstream: Describe "Test EphemeralRunnerSet controller with proxy settings"
#   It "should create a proxy secret and delete the proxy secreat after the runner-set is deleted"
async def test_proxy_secret_lifecycle(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    proxy = {"http": {"url": "http://proxy.example:3128"}, "noProxy": ["example.com", "example.org"]}
    await h.client.create(h.runner_set(replicas=1, patch_id=1, ephemeralRunnerSpec={"proxy": proxy}))
    [runner] = await eventually(lambda: count(h, 1))
    ref = runner["spec"]["proxySecretRef"]
    secret = await h.get(SECRET, ref)
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data == {"http_proxy": "http://proxy.example:3128", "https_proxy": "", "no_proxy": "example.com,example.org"}
    await h.client.delete(await h.get(ERS, "set"))

    async def secret_gone() -> bool:
        try:
            await h.get(SECRET, ref)
        except Exception:
            return True
        return False

    await eventually(secret_gone)


# Upstream: It "Should replace finished ephemeral runners with new ones"
async def test_replaces_finished_runners_on_a_fresh_patch(harness: Harness) -> None:
    await finished_runner_is_cleaned_then_replaced(harness, desired=2)


# Upstream: Describe "Test EphemeralRunnerSet actionable revision cleanup"
#   It "does not clean up runners on initial creation without an actionable revision"
async def test_no_cleanup_without_an_actionable_revision(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=1, patch_id=1))
    [runner] = await eventually(lambda: count(h, 1))
    await set_runner_phase(h, runner, "Pending")
    await consistently(lambda: count(h, 1), duration=2.0)
    status = (await h.get(ERS, "set")).get("status") or {}
    assert status.get("appliedActionableRevision", 0) == 0


# Upstream: Context "When a new EphemeralRunnerSet scale up and down" / It "Should scale up with patch ID 0"
async def test_scales_up_with_patch_id_zero(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=5, patch_id=0))
    runners = await eventually(lambda: count(h, 5))
    assert {r["metadata"]["annotations"]["actions.github.com/patch-id"] for r in runners} == {"0"}
    await consistently(lambda: count(h, 5), duration=1.0)


async def applied_revision(h: Harness) -> int:
    return int(((await h.get(ERS, "set")).get("status") or {}).get("appliedActionableRevision") or 0)


# Upstream: Describe "Test EphemeralRunnerSet actionable revision cleanup"
#   It "keeps applied actionable revision at 3 when cleanup fails"
async def test_keeps_applied_revision_when_cleanup_fails(harness: Harness) -> None:
    """Upstream drives the reconciler by hand and sees RemoveRunner's error returned; here the
    manager runs it, so the error shows as retried RemoveRunner calls while the revision stays."""
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=1, patch_id=1, actionableRevision=3))
    await eventually(lambda: _revision_is(h, 3))
    [runner] = await eventually(lambda: count(h, 1))
    await set_runner_phase(h, runner, "Running", runnerId=101)  # idle: cleanup must unregister it
    calls = h.service.requests("remove_runner")
    # 400: an answer the Actions client does not retry, so the error reaches the reconcile at once
    h.service.inject_status("remove_runner", 400, times=None, message="remove runner failed")
    try:
        await h.patch_spec(ERS, "set", {"actionableRevision": 4})

        async def retried() -> bool:
            return h.service.requests("remove_runner") >= calls + 2

        await eventually(retried)
        await consistently(lambda: _revision_is(h, 3), duration=2.0)
        assert [r["metadata"]["name"] for r in await h.runners()] == [runner["metadata"]["name"]]
    finally:
        h.service.faults.clear()
    await eventually(lambda: _revision_is(h, 4))  # the cleanup is redone once the service answers


async def _revision_is(h: Harness, revision: int) -> bool:
    return await applied_revision(h) == revision


# Upstream: Describe "Test EphemeralRunnerSet actionable revision cleanup"
#   It "preserves AppliedActionableRevision during status-only phase updates"
async def test_outdated_phase_keeps_the_applied_revision(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=1, patch_id=1, actionableRevision=5))
    await eventually(lambda: _revision_is(h, 5))
    [runner] = await eventually(lambda: count(h, 1))
    assert runner["metadata"]["annotations"]["actions.github.com/actionable-revision"] == "5"
    # Every version of the set the server holds from here on, through a watch: a status writer
    # that dropped the applied revision would be re-applied within milliseconds, too fast for polling.
    applied_seen: list[Any] = []
    since = (await h.client.list(ERS, namespace=h.namespace)).resource_version

    async def follow() -> None:
        async for event in h.client.watch(ERS, namespace=h.namespace, resource_version=since):
            if event.type in ("ADDED", "MODIFIED"):
                applied_seen.append((event.object.get("status") or {}).get("appliedActionableRevision"))

    watcher = asyncio.create_task(follow(), name="watch-applied-revision")
    try:
        await set_runner_phase(h, runner, "Outdated")

        async def outdated() -> bool:
            return ((await h.get(ERS, "set")).get("status") or {}).get("phase") == "Outdated"

        await eventually(outdated)
        await consistently(lambda: _revision_is(h, 5), duration=1.0)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    assert applied_seen
    assert set(applied_seen) == {5}, applied_seen


# Upstream: Describe "Test EphemeralRunnerSet actionable revision cleanup"
#   It "deletes runner-a-idle, keeps a job-bearing pending runner, and advances applied actionable revision 3 to 4"
async def test_revision_cleanup_deletes_idle_keeps_pending_with_job(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=2, patch_id=1, actionableRevision=3))
    await eventually(lambda: _revision_is(h, 3))
    idle, pending = await eventually(lambda: count(h, 2))
    await set_runner_phase(h, idle, "Running", runnerId=101)
    await set_runner_phase(h, pending, "Pending", runnerId=102, jobId="job-1")
    await h.patch_spec(ERS, "set", {"actionableRevision": 4})
    await eventually(lambda: _revision_is(h, 4))

    async def idle_gone() -> bool:  # deleted; the finalizer-stripping helper lets it go
        return all(r["metadata"]["name"] != idle["metadata"]["name"] for r in await h.runners())

    await eventually(idle_gone)
    kept = next(r for r in await h.runners() if r["metadata"]["name"] == pending["metadata"]["name"])
    assert not kept["metadata"].get("deletionTimestamp")


# Upstream: Describe "Test EphemeralRunnerSet actionable revision cleanup"
#   It "replaces outdated runners from a superseded revision instead of going Outdated"
async def test_outdated_runner_from_a_superseded_revision_is_replaced(harness: Harness) -> None:
    h = harness
    await h.start(runner=False)
    await h.client.create(h.runner_set(replicas=1, patch_id=1, actionableRevision=1))
    await eventually(lambda: _revision_is(h, 1))
    [old] = await eventually(lambda: count(h, 1))
    await set_runner_phase(h, old, "Running", runnerId=201, jobId="busy")  # busy: survives the cleanup
    await h.patch_spec(ERS, "set", {"actionableRevision": 2})
    await eventually(lambda: _revision_is(h, 2))
    assert [r["metadata"]["name"] for r in await h.runners()] == [old["metadata"]["name"]]
    await set_runner_phase(h, old, "Outdated")

    async def old_gone() -> bool:
        return all(r["metadata"]["name"] != old["metadata"]["name"] for r in await h.runners())

    async def not_outdated() -> bool:
        return ((await h.get(ERS, "set")).get("status") or {}).get("phase") != "Outdated"

    await eventually(old_gone)
    await consistently(not_outdated, duration=2.0)


# Upstream: Describe "Test EphemeralRunnerSet actionable revision cleanup"
#   It "deletes unregistered pending runner during actionable revision cleanup after restart with no cache"
async def test_revision_cleanup_deletes_an_unregistered_pending_runner_after_restart(harness: Harness) -> None:
    """As upstream, the reconciler is driven by hand: a new one stands for a restarted
    controller (upstream: an empty ResourceCache; here: no creation expectations). The
    runner has no runner ID and no phase, so there is no registration to ask the service
    about: it is deleted at once (no [UNCONFIRMED] grace period in this port, spec §0.3 a,
    which this upstream It contradicts unless the grace is zero) and the revision advances."""
    h = harness
    mgr = await h.start(runner_set=False, runner=False)
    controller = EphemeralRunnerSetReconciler(
        client=mgr.get_client(), api_reader=mgr.get_api_reader(), actions=h.factories[-1]
    )
    request = Request(h.namespace, "set")
    await h.client.create(h.runner_set(actionableRevision=4))
    await eventually(lambda: _reconciled(controller, request))
    await h.patch_status(ERS, "set", {"appliedActionableRevision": 3})  # the status is behind
    runner_set = await h.get(ERS, "set")
    pending = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {
            "name": "runner-restart-pending",
            "namespace": h.namespace,
            "finalizers": [
                "ephemeralrunner.actions.github.com/finalizer",
                "ephemeralrunner.actions.github.com/runner-registration-finalizer",
            ],
            "ownerReferences": [
                {
                    "apiVersion": "actions.github.com/v1alpha1",
                    "kind": "EphemeralRunnerSet",
                    "name": "set",
                    "uid": runner_set["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": runner_set["spec"]["ephemeralRunnerSpec"],
    }
    await h.client.create(pending)
    cache = mgr.get_client()

    async def cache_caught_up() -> bool:
        cached_set = await cache.get(ERS, ObjectKey(h.namespace, "set"))
        try:
            cached_runner = await cache.get(ER, ObjectKey(h.namespace, "runner-restart-pending"))
        except NotFoundError:  # the informer has not seen the create yet
            return False
        status = cached_runner.get("status") or {}
        applied = (cached_set.get("status") or {}).get("appliedActionableRevision")
        return applied == 3 and not status.get("runnerId") and not status.get("phase")

    await eventually(cache_caught_up)
    removals = h.service.requests("remove_runner")

    async def runner_gone() -> bool:
        await controller.reconcile(request)
        return not [r for r in await h.runners() if r["metadata"]["name"] == "runner-restart-pending"]

    await eventually(runner_gone)
    assert h.service.requests("remove_runner") == removals  # no ID: nothing to ask the service

    async def applied_four() -> bool:
        await controller.reconcile(request)
        return await applied_revision(h) == 4

    await eventually(applied_four)


async def _reconciled(controller: EphemeralRunnerSetReconciler, request: Request) -> bool:
    await controller.reconcile(request)
    return True
