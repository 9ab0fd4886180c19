"""The scaler as a state machine, its exact patch bodies, and the job-started promotion."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from arc_controllers.listener.scaler import (
    DEFAULT_REPUBLISH_INTERVAL,
    MAX_PATCH_SEQ,
    Decision,
    DesiredState,
    Scaler,
    ScalerError,
    desired_count_patch,
    job_started_status,
)
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.errors import ConflictError, NotFoundError
from reconcilekit.workqueue import FakeClock

from .listener_fakes import FakeKube, JobCompleted, JobStarted, runner, runner_set

UNBOUNDED = 2**31 - 1


def new_scaler(
    kube: FakeKube,
    *,
    min_runners: int = 0,
    max_runners: int = UNBOUNDED,
    republish_interval: float = DEFAULT_REPUBLISH_INTERVAL,
    clock: Callable[[], float] = time.monotonic,
) -> Scaler:
    return Scaler(
        kube,
        namespace="default",
        runner_set_name="set-abcde",
        min_runners=min_runners,
        max_runners=max_runners,
        republish_interval=republish_interval,
        clock=clock,
    )


# Upstream: cmd/ghalistener/scaler/scaler_test.go
#   TestSetDesiredWorkerState_MinMaxDefaults, _MinSet, _MaxSet, _MinMaxSet (every subtest)
# Each case: (min, max, steps) where a step is (dirty_before, assigned_jobs, patch_id, target, patch_seq).
SET_DESIRED_CASES = {
    "MinMaxDefaults/init calculate with acquired 0": (0, UNBOUNDED, [(False, 0, 0, 0, 0)]),
    "MinMaxDefaults/init calculate with acquired 1": (0, UNBOUNDED, [(False, 1, 0, 1, 0)]),
    "MinMaxDefaults/increment patch when job done": (0, UNBOUNDED, [(False, 1, 0, 1, 0), (True, 0, 1, 0, 1)]),
    "MinMaxDefaults/increment patch when called with same parameters": (
        0,
        UNBOUNDED,
        [(False, 1, 0, 1, 0), (False, 1, 1, 1, 1)],
    ),
    "MinMaxDefaults/calculate desired scale when acquired > 0 and completed > 0": (
        0,
        UNBOUNDED,
        [(True, 1, 0, 1, 0)],
    ),
    "MinMaxDefaults/adjust when acquired == 0 and completed == 1": (
        0,
        UNBOUNDED,
        [(True, 1, 0, 1, 0), (True, 0, 1, 0, 1)],
    ),
    "MinSet/initial scale when acquired == 0 and completed == 0": (1, UNBOUNDED, [(False, 0, 0, 1, 0)]),
    "MinSet/request back to 0 on job done": (1, UNBOUNDED, [(False, 2, 0, 3, 0), (True, 0, 1, 1, 1)]),
    "MinSet/desired patch is 0 but sequence continues on empty batch and min runners": (
        1,
        UNBOUNDED,
        [(False, 3, 0, 4, 0), (True, 0, 1, 1, 1), (False, 0, 0, 1, 2)],
    ),
    "MaxSet/initial scale when acquired == 0 and completed == 0": (0, 5, [(False, 0, 0, 0, 0)]),
    "MaxSet/request back to 0 on job done": (0, 5, [(False, 2, 0, 2, 0), (True, 0, 1, 0, 1)]),
    "MaxSet/scale up to max when count > max": (0, 5, [(False, 6, 0, 5, 0)]),
    "MaxSet/scale to max when count == max": (0, 5, [(False, 5, 0, 5, 0)]),
    "MaxSet/scale to max when count > max and completed > 0": (0, 5, [(False, 1, 0, 1, 0), (True, 6, 1, 5, 1)]),
    "MaxSet/scale back to 0 when count was > max": (0, 5, [(False, 6, 0, 5, 0), (True, 0, 1, 0, 1)]),
    "MaxSet/force 0 on empty batch and last patch == min runners": (
        0,
        5,
        [(False, 3, 0, 3, 0), (True, 0, 1, 0, 1), (False, 0, 0, 0, 2)],
    ),
    "MinMaxSet/initial scale when acquired == 0 and completed == 0": (1, 3, [(False, 0, 0, 1, 0)]),
    "MinMaxSet/scale to min when count == 0": (1, 3, [(False, 2, 0, 3, 0), (True, 0, 1, 1, 1)]),
    "MinMaxSet/scale up to max when count > max": (1, 3, [(False, 4, 0, 3, 0)]),
    "MinMaxSet/scale to max when count == max": (1, 3, [(False, 3, 0, 3, 0)]),
    "MinMaxSet/force 0 on empty batch and last patch == min runners": (
        1,
        3,
        [(False, 3, 0, 3, 0), (True, 0, 1, 1, 1), (False, 0, 0, 1, 2)],
    ),
}


@pytest.mark.parametrize(("min_runners", "max_runners", "steps"), SET_DESIRED_CASES.values(), ids=SET_DESIRED_CASES)
def test_set_desired_worker_state(
    min_runners: int, max_runners: int, steps: list[tuple[bool, int, int, int, int]]
) -> None:
    """Each decision gives upstream's patch ID, target and sequence, and clears the dirty flag."""
    state = DesiredState(min_runners=min_runners, max_runners=max_runners)
    for dirty, assigned, patch_id, target, seq in steps:
        state.dirty = dirty
        assert state.decide(assigned) == Decision(replicas=target, patch_id=patch_id)
        assert (state.target_runners, state.patch_seq, state.dirty) == (target, seq, False)


def test_patch_sequence_wraps_to_one_after_max_int32() -> None:
    """After 2147483647 the next patch ID is 1: the wrap never produces 0 by itself."""
    state = DesiredState(min_runners=0, max_runners=UNBOUNDED)
    state.decide(5)
    state.patch_seq = MAX_PATCH_SEQ - 1
    assert [state.decide(5).patch_id for _ in range(3)] == [MAX_PATCH_SEQ, 1, 2]


def test_replicas_zero_is_sent_as_null() -> None:
    """The ERS patch always carries patchID; zero replicas are null, which deletes the field."""
    assert desired_count_patch(Decision(replicas=0, patch_id=0)) == {"spec": {"patchID": 0, "replicas": None}}
    assert desired_count_patch(Decision(replicas=3, patch_id=7)) == {"spec": {"patchID": 7, "replicas": 3}}


async def test_patch_sequence_across_messages_polls_jobs_restart_and_wrap() -> None:
    """Go's sequence (republish interval 0): every message and empty poll patches; job events make
    the next ID non-zero; a restart starts at 0."""
    kube = FakeKube()
    kube.add(runner_set())
    kube.add(runner("runner-1"))
    scaler = new_scaler(kube, min_runners=1, max_runners=4, republish_interval=0)

    async def message(assigned: int, *events: object) -> None:
        for event in events:
            if isinstance(event, JobStarted):
                await scaler.handle_job_started(event)
            else:
                await scaler.handle_job_completed(event)
        await scaler.handle_desired_runner_count(assigned)

    await scaler.handle_desired_runner_count(0)  # initial statistics from the session
    await scaler.handle_desired_runner_count(0)  # empty poll, idle at min
    await message(2)  # two jobs assigned
    await message(2, JobStarted())  # one starts
    await scaler.handle_desired_runner_count(2)  # empty poll, cached statistics
    await message(9)  # more than max
    await message(0, JobCompleted(), JobCompleted())  # all done
    await scaler.handle_desired_runner_count(0)  # idle again: forced convergence

    restarted = new_scaler(kube, min_runners=1, max_runners=4, republish_interval=0)
    await restarted.handle_desired_runner_count(3)  # a new process: sequence restarts
    await restarted.handle_desired_runner_count(3)
    restarted.state.patch_seq = MAX_PATCH_SEQ - 1
    await restarted.handle_desired_runner_count(3)
    await restarted.handle_desired_runner_count(0)

    sent = [(p["spec"]["replicas"], p["spec"]["patchID"]) for p in kube.patches() if "spec" in p]
    assert sent == [
        (1, 0),
        (1, 0),
        (3, 2),
        (3, 3),
        (3, 4),
        (4, 5),
        (1, 6),
        (1, 0),
        (4, 0),
        (4, 1),
        (4, MAX_PATCH_SEQ),
        (1, 1),
    ]
    assert kube.objects[("EphemeralRunnerSet", kube.requests[0].key)]["spec"] == {"replicas": 1, "patchID": 1}


async def test_min_zero_idle_sends_null_replicas_with_patch_id_zero() -> None:
    """Idle at minRunners 0 sends {"patchID": 0, "replicas": null}, and the field is removed."""
    kube = FakeKube()
    kube.add(runner_set())
    scaler = new_scaler(kube)
    assert await scaler.handle_desired_runner_count(0) == 0
    assert kube.patches() == [{"spec": {"patchID": 0, "replicas": None}}]
    stored = next(iter(kube.objects.values()))
    assert stored["spec"] == {"patchID": 0}


# Upstream: cmd/ghalistener/scaler/scaler_test.go TestHandleJobStarted/patches job fields and running phase together
# Upstream (spec §12.5 listener-side title): "transitions an idle runner to Running"
async def test_job_started_patches_job_fields_and_running_phase_together() -> None:
    """One status patch carries the job fields, phase Running and the read resourceVersion."""
    kube = FakeKube()
    kube.add(runner("runner-1", "Pending"))
    await new_scaler(kube).handle_job_started(JobStarted())
    assert [(r.verb, r.subresource) for r in kube.requests] == [("GET", ""), ("PATCH", "status")]
    assert kube.patches() == [
        {
            "metadata": {"resourceVersion": "1"},
            "status": {
                "jobDisplayName": "build",
                "jobId": "job-1",
                "jobRepositoryName": "actions/actions-runner-controller",
                "jobRequestId": 123,
                "jobWorkflowRef": "actions/actions-runner-controller/.github/workflows/ci.yaml@refs/heads/main",
                "phase": "Running",
                "workflowRunId": 456,
            },
        }
    ]


# Upstream: TestHandleJobStarted/repeated assignment remains idempotent
async def test_repeated_job_started_is_idempotent() -> None:
    """A second JobStarted for a Running runner leaves the same status."""
    kube = FakeKube()
    stored = kube.add(runner("runner-1", "Running"))
    scaler = new_scaler(kube)
    await scaler.handle_job_started(JobStarted())
    first = dict(stored["status"])
    await scaler.handle_job_started(JobStarted())
    assert stored["status"] == first
    assert first["phase"] == "Running"


# Upstream: TestHandleJobStarted/preserves <phase> phase while patching job fields
@pytest.mark.parametrize("phase", ["Failed", "Succeeded", "Outdated"])
async def test_terminal_phase_is_preserved_while_job_fields_are_patched(phase: str) -> None:
    """A finished runner gets the job fields without a lock and keeps its phase."""
    kube = FakeKube()
    stored = kube.add(runner("runner-1", phase))
    await new_scaler(kube).handle_job_started(JobStarted())
    [patch] = kube.patches()
    assert "phase" not in patch["status"]
    assert "metadata" not in patch
    assert stored["status"]["phase"] == phase
    assert stored["status"]["jobId"] == "job-1"


# Upstream: TestHandleJobStarted/preserves deleting runner phase while patching job fields
async def test_deleting_runner_is_not_promoted() -> None:
    """A runner being deleted keeps its phase; only job fields are written."""
    kube = FakeKube()
    stored = kube.add(runner("runner-1", "Pending", deleting=True))
    await new_scaler(kube).handle_job_started(JobStarted())
    assert stored["status"]["phase"] == "Pending"
    assert "phase" not in kube.patches()[0]["status"]


# Upstream: TestHandleJobStarted/retries against fresh state when a terminal write wins the race
# Upstream: TestHandleJobStarted/does not resurrect a runner that became <phase> concurrently
# Upstream (spec §12.5 listener-side title): "does not resurrect a runner that failed after the read"
@pytest.mark.parametrize("phase", ["Failed", "Succeeded", "Outdated"])
async def test_conflict_is_retried_against_fresh_state(phase: str) -> None:
    """A terminal write between the GET and the PATCH makes the patch conflict; the retry keeps the phase."""
    kube = FakeKube()
    key_runner = kube.add(runner("runner-1", "Pending"))

    def terminal_write() -> None:
        key_runner["status"]["phase"] = phase
        key_runner["metadata"]["resourceVersion"] = str(int(key_runner["metadata"]["resourceVersion"]) + 1)

    kube.on_patch = [terminal_write]
    await new_scaler(kube).handle_job_started(JobStarted())
    assert [r.verb for r in kube.requests] == ["GET", "PATCH", "GET", "PATCH"]
    assert key_runner["status"]["phase"] == phase
    assert key_runner["status"]["jobId"] == "job-1"


# Upstream: TestHandleJobStarted/gives up when the runner keeps changing
async def test_gives_up_when_the_runner_keeps_changing() -> None:
    """Five conflicts in a row end in ConflictError and the runner stays Pending."""
    kube = FakeKube()
    stored = kube.add(runner("runner-1", "Pending"))
    kube.on_patch = [lambda: kube.bump("EphemeralRunner", kube.requests[0].key)] * 5
    with pytest.raises(ConflictError):
        await new_scaler(kube).handle_job_started(JobStarted())
    assert [r.verb for r in kube.requests].count("PATCH") == 5
    assert stored["status"]["phase"] == "Pending"


# Upstream: TestHandleJobStarted_NotFound/get not found abandons the update without patching
async def test_get_not_found_abandons_the_update() -> None:
    """A 404 on the read ends the update quietly, with no patch."""
    kube = FakeKube()
    kube.add(runner("runner-1", "Pending"))
    kube.not_found_for = "GET"
    await new_scaler(kube).handle_job_started(JobStarted())
    assert [r.verb for r in kube.requests] == ["GET"]


# Upstream: TestHandleJobStarted_NotFound/patch not found is swallowed and not retried
async def test_patch_not_found_is_swallowed_and_not_retried() -> None:
    """A 404 on the patch is success: exactly one patch, which did try to promote."""
    kube = FakeKube()
    kube.add(runner("runner-1", "Pending"))
    kube.not_found_for = "PATCH"
    await new_scaler(kube).handle_job_started(JobStarted())
    assert [r.verb for r in kube.requests] == ["GET", "PATCH"]
    assert kube.patches()[0]["status"]["phase"] == "Running"


async def test_job_events_mark_dirty_even_when_the_runner_is_gone() -> None:
    """Dirty is set before any API call, so the next decision carries a fresh patch ID."""
    kube = FakeKube()
    kube.add(runner_set())
    scaler = new_scaler(kube)
    await scaler.handle_desired_runner_count(0)
    await scaler.handle_job_started(JobStarted(runner_name="gone"))
    await scaler.handle_desired_runner_count(0)
    await scaler.handle_job_completed(JobCompleted())
    await scaler.handle_desired_runner_count(0)
    await scaler.handle_desired_runner_count(0)
    assert [p["spec"]["patchID"] for p in kube.patches()] == [0, 1, 2, 0]


# Upstream: TestHandleJobStarted_JobContext (both subtests)
def test_job_context_fields_and_timestamps() -> None:
    """Event name and service timestamps are recorded in UTC seconds; unreported ones are left out."""
    queued = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    full = JobStarted(
        event_name="pull_request",
        queue_time=queued,
        scale_set_assign_time=queued + timedelta(seconds=2),
        runner_assign_time=(queued + timedelta(seconds=7)).astimezone(UTC),
    )
    status = job_started_status(full)
    assert status["jobEventName"] == "pull_request"
    assert status["jobQueuedAt"] == "2026-01-02T03:04:05Z"
    assert status["jobScaleSetAssignedAt"] == "2026-01-02T03:04:07Z"
    assert status["jobRunnerAssignedAt"] == "2026-01-02T03:04:12Z"

    sparse = JobStarted(
        queue_time=datetime(1, 1, 1, tzinfo=UTC), runner_assign_time=queued, runner_request_id=0, job_id=""
    )
    status = job_started_status(sparse)
    for absent in ("jobEventName", "jobQueuedAt", "jobScaleSetAssignedAt", "jobRequestId", "jobId"):
        assert absent not in status
    assert status["jobRunnerAssignedAt"] == "2026-01-02T03:04:05Z"
    assert job_started_status(JobStarted(owner_name="", repository_name=""))["jobRepositoryName"] == "/"


async def test_a_refused_runner_set_patch_is_a_scaler_error_naming_the_patch() -> None:
    """A refused EphemeralRunnerSet patch raises ScalerError with the patch body, the API error as its cause."""
    kube = FakeKube()  # no EphemeralRunnerSet: the patch answers 404
    message = r'could not patch ephemeral runner set default/set-abcde.*"patchID":0'
    with pytest.raises(ScalerError, match=message) as info:
        await new_scaler(kube).handle_desired_runner_count(1)
    assert isinstance(info.value.__cause__, NotFoundError)


async def test_a_refused_status_patch_is_a_scaler_error() -> None:
    """A status patch refused for a reason other than 404 or 409 raises ScalerError, the API error as its cause."""
    kube = FakeKube()
    kube.add(runner("runner-1"))

    def refuse() -> None:
        raise PermissionError("forbidden")

    kube.on_patch.append(refuse)
    with pytest.raises(ScalerError, match="could not patch ephemeral runner default/runner-1 status") as info:
        await new_scaler(kube).handle_job_started(JobStarted())
    assert isinstance(info.value.__cause__, PermissionError)


def new_timed_scaler(kube: FakeKube, clock: FakeClock, *, min_runners: int = 0, max_runners: int = UNBOUNDED) -> Scaler:
    """A scaler with a 50 s republish interval on ``clock``'s time (its timer sleeps on it too)."""
    return Scaler(
        kube,
        namespace="default",
        runner_set_name="set-abcde",
        min_runners=min_runners,
        max_runners=max_runners,
        republish_interval=50.0,
        clock=clock.monotonic,
        sleep=clock.sleep,
    )


async def held_back_repeat(kube: FakeKube | None = None) -> tuple[FakeKube, FakeClock, Scaler]:
    """A timed scaler that sent 2 (IDs 0 and 1) and holds back a third 2: its timer is due at t = 50."""
    if kube is None:
        kube = FakeKube()
        kube.add(runner_set())
    clock = FakeClock()
    scaler = new_timed_scaler(kube, clock)
    for _ in range(3):
        await scaler.handle_desired_runner_count(2)
    return kube, clock, scaler


async def _advance(clock: FakeClock, seconds: float) -> None:
    """Move the clock and let the tasks it woke (the republish timer) run to their next wait."""
    clock.advance(seconds)
    for _ in range(10):
        await asyncio.sleep(0)


def _sent(kube: FakeKube) -> list[tuple[int | None, int]]:
    return [(p["spec"]["replicas"], p["spec"]["patchID"]) for p in kube.patches() if "spec" in p]


async def test_a_repeat_of_a_repeat_is_held_back_then_sent_by_the_timer_at_the_interval() -> None:
    """An unchanged decision is sent once more (a new ID, as Go's next empty poll); later repeats are
    held back, and the latest goes out by the timer at the last patch + the interval, with no message
    or poll to carry it (the loop waits in the long poll); the sequence does not advance meanwhile."""
    kube = FakeKube()
    kube.add(runner_set())
    clock = FakeClock()
    scaler = new_timed_scaler(kube, clock)
    assert await scaler.handle_desired_runner_count(2) == 2  # initial statistics
    assert await scaler.handle_desired_runner_count(2) == 2  # empty poll: the first repeat is sent
    for _ in range(5):  # empty polls 3 s apart: repeats of a repeat
        await _advance(clock, 3.0)
        assert await scaler.handle_desired_runner_count(2) == 2
    assert _sent(kube) == [(2, 0), (2, 1)]
    assert scaler.skipped == 5
    await _advance(clock, 50.0 - 15.0 - 0.5)
    assert _sent(kube) == [(2, 0), (2, 1)]
    await _advance(clock, 0.5)  # 50 s after the last patch, no message: the timer sends
    assert _sent(kube) == [(2, 0), (2, 1), (2, 2)]
    assert scaler.republished == 1
    assert not clock.has_waiters()  # nothing held back now: no timer armed
    assert [r.verb for r in kube.requests] == ["PATCH"] * 3
    await scaler.aclose()


async def test_the_timer_sends_the_latest_held_back_decision_with_the_next_id() -> None:
    """Held-back decisions collapse: the timer sends the newest count asked for, decided then, so its
    patch ID is the next one (as Go's patch for that poll would carry)."""
    kube = FakeKube()
    kube.add(runner_set())
    clock = FakeClock()
    scaler = new_timed_scaler(kube, clock, max_runners=4)
    await scaler.handle_desired_runner_count(9)  # 4 (max)
    await scaler.handle_desired_runner_count(8)  # still 4: the first repeat
    await scaler.handle_desired_runner_count(7)  # still 4: held back
    await scaler.handle_desired_runner_count(5)  # still 4: held back (the timer already runs)
    await _advance(clock, 50.0)
    assert _sent(kube) == [(4, 0), (4, 1), (4, 2)]
    await scaler.aclose()


async def test_a_patch_sent_meanwhile_supersedes_the_timer() -> None:
    """A decision sent before the timer is due (a new target, a completion) supersedes it: the timer
    does not send again, and the next held-back repeat arms a new one from the new patch."""
    kube, clock, scaler = await held_back_repeat()  # held back: the timer is armed for t = 50
    await _advance(clock, 20.0)
    await scaler.handle_desired_runner_count(3)  # a new target, sent at t = 20
    await _advance(clock, 40.0)  # t = 60: past the first timer's due time
    assert _sent(kube) == [(2, 0), (2, 1), (3, 2)]
    await scaler.handle_desired_runner_count(3)  # the first repeat after it: sent at t = 60
    await scaler.handle_desired_runner_count(3)  # held back: due at t = 110
    await _advance(clock, 49.0)
    assert _sent(kube) == [(2, 0), (2, 1), (3, 2), (3, 3)]
    await _advance(clock, 1.0)
    assert _sent(kube) == [(2, 0), (2, 1), (3, 2), (3, 3), (3, 4)]
    assert scaler.republished == 1
    await scaler.aclose()


async def test_aclose_cancels_the_timer() -> None:
    kube, clock, scaler = await held_back_repeat()
    await _advance(clock, 1.0)
    assert clock.has_waiters()
    await scaler.aclose()
    assert not clock.has_waiters()
    await _advance(clock, 100.0)
    assert _sent(kube) == [(2, 0), (2, 1)]
    await scaler.aclose()  # idempotent


async def test_one_set_patch_at_a_time_ids_reach_the_set_in_increasing_order() -> None:
    """A decision the loop makes while the timer's patch is in flight waits for it, then goes out
    with a higher ID: the set sees patch IDs strictly increasing, the last decision last."""
    kube, clock, scaler = await held_back_repeat()  # held back, due at t = 50
    release = asyncio.Event()
    fast = FakeKube.patch
    calls = []

    async def first_one_slow(obj: Any, patch: Any, /) -> Any:
        calls.append(obj)
        if len(calls) == 1:
            await release.wait()
        return await fast(kube, obj, patch)

    kube.patch = first_one_slow  # type: ignore[method-assign]
    await _advance(clock, 50.0)  # the timer's patch (ID 2) is in flight
    loop_patch = asyncio.create_task(scaler.handle_desired_runner_count(3))  # a new target meanwhile
    await _advance(clock, 0.0)
    release.set()
    assert await loop_patch == 3
    assert _sent(kube) == [(2, 0), (2, 1), (2, 2), (3, 3)]
    assert kube.objects[("EphemeralRunnerSet", ObjectKey("default", "set-abcde"))]["spec"]["patchID"] == 3
    await scaler.aclose()


async def test_due_while_a_message_is_handled_the_timer_sends_and_keeps_the_message_marks() -> None:
    """Due while a message is being handled (its JobStarted seen, its decision not yet asked for),
    the timer still sends the held-back decision on time, and the job start stays marked for the
    message's own decision: that one is never ID 0 (no forced scale-down right after a start)."""
    kube = FakeKube()
    kube.add(runner_set())
    kube.add(runner("runner-1"))
    clock = FakeClock()
    scaler = new_timed_scaler(kube, clock, min_runners=1, max_runners=4)
    await scaler.handle_desired_runner_count(0)  # (1, 0)
    await scaler.handle_job_started(JobStarted(runner_name="runner-1"))
    await scaler.handle_desired_runner_count(0)  # the first repeat: (1, 1)
    await scaler.handle_desired_runner_count(0)  # held back, due at t = 50
    await scaler.handle_job_started(JobStarted(runner_name="runner-1"))  # a message being handled
    await _advance(clock, 50.0)
    assert _sent(kube) == [(1, 0), (1, 1), (1, 2)]  # on time, mid-message
    await scaler.handle_desired_runner_count(0)  # the message's decision: a repeat, held back
    await _advance(clock, 50.0)
    assert _sent(kube) == [(1, 0), (1, 1), (1, 2), (1, 3)]  # still dirty from its start: not ID 0
    await scaler.aclose()


async def test_due_while_a_message_is_handled_its_completion_still_gets_a_new_id() -> None:
    kube, clock, scaler = await held_back_repeat()  # held back, due at t = 50
    await scaler.handle_job_completed(JobCompleted())  # a message being handled
    await _advance(clock, 50.0)
    assert _sent(kube) == [(2, 0), (2, 1), (2, 2)]
    await _advance(clock, 1.0)
    await scaler.handle_desired_runner_count(2)  # the message's decision: its completion, sent at once
    assert _sent(kube) == [(2, 0), (2, 1), (2, 2), (2, 3)]
    await scaler.aclose()


async def test_a_refused_republish_is_logged_and_the_next_poll_patches() -> None:
    """The timer has no caller to raise to: a refused patch is logged, and the next message or poll
    is sent (the interval has passed), ending the listener if it is refused too, as Go's would."""
    kube, clock, scaler = await held_back_repeat()  # held back
    refusals = [PermissionError("forbidden")]

    def refuse_once() -> None:
        if refusals:
            raise refusals.pop()

    kube.on_patch.extend([lambda: None, lambda: None, refuse_once])
    await _advance(clock, 50.0)  # the timer's patch (ID 2) is refused
    assert _sent(kube) == [(2, 0), (2, 1), (2, 2)]
    assert scaler.republished == 0
    assert not clock.has_waiters()
    await scaler.handle_desired_runner_count(2)  # the next poll: past the interval, sent
    assert _sent(kube) == [(2, 0), (2, 1), (2, 2), (2, 3)]
    await scaler.aclose()


async def test_a_new_target_or_a_job_completed_is_always_sent_a_job_start_alone_is_not() -> None:
    """After held-back repeats, a JobCompleted (the seed's new patch ID after a completion) or a new
    target is patched at once, and so is the first repeat after it; job starts alone are repeats."""
    kube = FakeKube()
    kube.add(runner_set())
    for name in ("runner-1", "runner-2"):
        kube.add(runner(name))
    kube, _clock, scaler = await held_back_repeat(kube)  # held back
    await scaler.handle_job_completed(JobCompleted())
    await scaler.handle_desired_runner_count(2)  # same target, but a job completed
    await scaler.handle_desired_runner_count(2)  # the first repeat after it: sent
    await scaler.handle_desired_runner_count(2)  # held back
    await scaler.handle_desired_runner_count(3)  # a new target
    await scaler.handle_job_started(JobStarted(runner_name="runner-1"))
    await scaler.handle_desired_runner_count(3)  # a job start: the first repeat, sent
    await scaler.handle_job_started(JobStarted(runner_name="runner-2"))
    await scaler.handle_desired_runner_count(3)  # another job start alone: held back
    await scaler.handle_job_completed(JobCompleted())
    await scaler.handle_desired_runner_count(3)  # a completion: sent
    assert _sent(kube) == [(2, 0), (2, 1), (2, 2), (2, 3), (3, 4), (3, 5), (3, 6)]
    assert scaler.skipped == 3
    assert [p["status"]["phase"] for p in kube.patches() if "status" in p] == ["Running", "Running"]
    await scaler.aclose()


async def test_a_held_back_job_start_keeps_the_next_patch_off_id_zero() -> None:
    """The dirty flag of a job start whose decision was held back holds until a decision is sent:
    the timer's republish at minRunners then carries a sequence ID, never 0 (no forced scale-down
    right after a start); the one after it is 0 (idle, as Go's next poll)."""
    kube = FakeKube()
    kube.add(runner_set())
    kube.add(runner("runner-1"))
    clock = FakeClock()
    scaler = new_timed_scaler(kube, clock, min_runners=1, max_runners=4)
    await scaler.handle_desired_runner_count(0)
    await scaler.handle_job_started(JobStarted(runner_name="runner-1"))
    await scaler.handle_desired_runner_count(0)  # first repeat: sent, ID 1
    await scaler.handle_job_started(JobStarted(runner_name="runner-1"))
    await scaler.handle_desired_runner_count(0)  # held back, still dirty
    await _advance(clock, 50.0)  # the timer: ID 2
    await _advance(clock, 10.0)
    await scaler.handle_desired_runner_count(0)  # held back (identical to nothing sent: ID 0 next)
    await _advance(clock, 40.0)
    assert _sent(kube) == [(1, 0), (1, 1), (1, 2), (1, 0)]
    await scaler.aclose()


async def test_idle_at_min_patch_id_zero_is_sent_once_per_interval() -> None:
    """Idle at minRunners the decision is patch ID 0 (converge now); sending it again is a no-op write,
    so polls within the interval are held back and the timer sends it once per interval."""
    kube = FakeKube()
    kube.add(runner_set())
    clock = FakeClock()
    scaler = new_timed_scaler(kube, clock)
    for _ in range(10):
        await scaler.handle_desired_runner_count(0)
        await _advance(clock, 10.0)
    assert _sent(kube) == [(None, 0), (None, 0), (None, 0)]  # at 0 s, 50 s (the timer) and 100 s
    await scaler.aclose()


async def test_republish_interval_zero_patches_every_poll_as_go() -> None:
    kube = FakeKube()
    kube.add(runner_set())
    clock = FakeClock()
    scaler = new_timed_scaler(kube, clock)
    scaler = new_scaler(kube, republish_interval=0.0, clock=clock.monotonic)
    for _ in range(4):
        await scaler.handle_desired_runner_count(1)
    assert _sent(kube) == [(1, 0), (1, 1), (1, 2), (1, 3)]
    assert scaler.skipped == 0
    assert not clock.has_waiters()


@pytest.mark.parametrize("interval", [-1.0, float("inf"), float("nan")])
def test_republish_interval_must_be_finite_seconds(interval: float) -> None:
    with pytest.raises(ValueError, match="republish_interval"):
        new_scaler(FakeKube(), republish_interval=interval)
