"""The scaler: turns demand into EphemeralRunnerSet patches, and job starts into runner status.

Two writers live here. `DesiredState` is a pure state machine that decides the
replica count and the patch ID from the assigned-jobs statistic; `Scaler`
sends its decisions as merge patches on the EphemeralRunnerSet and, for each
JobStarted, records the job on the EphemeralRunner and promotes it to
``Running`` under an optimistic lock.

Patch shapes (merge patches, ``application/merge-patch+json``)::

    EphemeralRunnerSet (main resource)  {"spec": {"patchID": P, "replicas": N}}
                                        {"spec": {"patchID": P, "replicas": null}}   when N == 0
    EphemeralRunner /status             {"metadata": {"resourceVersion": RV},         only when promoting
                                         "status": {<job fields>, "phase": "Running"}}

A decision that repeats a repeat (the same target, no job completed since) is held back
until `DEFAULT_REPUBLISH_INTERVAL` has passed since the last patch, then sent by the scaler's
own timer even while the loop waits in the long poll: see `Scaler.handle_desired_runner_count`.

Ports: cmd/ghalistener/scaler/scaler.go at actions-runner-controller@0ba3cc92
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from arc_controllers.api.v1alpha1 import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET, EphemeralRunnerPhase, objects
from reconcilekit.client import merge_from, merge_from_with_optimistic_lock
from reconcilekit.client.interfaces import GroupVersionKind, Object, ObjectKey, Patch
from reconcilekit.errors import ConflictError, NotFoundError
from reconcilekit.retry import Backoff, retry_on_conflict

__all__ = [
    "DEFAULT_CONFLICT_BACKOFF",
    "DEFAULT_REPUBLISH_INTERVAL",
    "EPHEMERAL_RUNNER_GVK",
    "EPHEMERAL_RUNNER_SET_GVK",
    "MAX_PATCH_SEQ",
    "Decision",
    "DesiredState",
    "JobStartedInfo",
    "Scaler",
    "ScalerClient",
    "ScalerError",
    "desired_count_patch",
    "job_started_status",
    "should_promote_to_running",
]

log = structlog.get_logger(__name__, component="worker")  # lazy: configured at first use

EPHEMERAL_RUNNER_SET_GVK = EPHEMERAL_RUNNER_SET
"""The kind whose ``spec.replicas`` and ``spec.patchID`` the listener owns."""

EPHEMERAL_RUNNER_GVK = EPHEMERAL_RUNNER
"""The kind whose job fields and ``Running`` phase the listener writes."""

MAX_PATCH_SEQ = 2**31 - 1
"""The patch sequence wraps after this value (Go's ``math.MaxInt32``); the next ID is 1."""

DEFAULT_CONFLICT_BACKOFF = Backoff(duration=0.01, factor=1.0, jitter=0.1, steps=5)
"""client-go's retry.DefaultRetry: 5 attempts, 10 ms apart plus up to 10 % jitter."""

DEFAULT_REPUBLISH_INTERVAL = 3.0
"""Seconds (3) a repeated, unchanged decision is held back at most after the last patch.

Repeats that come sooner (bursts of JobStarted-only messages, empty polls) collapse into one
patch that the scaler's timer sends at last patch + 3 s. So a scale-up the EphemeralRunnerSet
deferred under the finished-runner marker waits at most 3 s longer than Go (whose next message
or empty poll carries the next patch ID); against GitHub's 50 s polls the timer comes sooner
than Go's next poll. Measured in a 50-job burst of 20 s jobs: 2.70 and 3.00 listener requests
per runner against Go's behaviour's 3.9 (docs/performance-issue-20.md); a longer interval
saves only the fake service's 3 s empty polls (about 0.06 per runner at 5 s), which GitHub
does not make, so the tighter bound is kept. 0 patches on every message and empty poll, as
Go does (``LISTENER_REPUBLISH_INTERVAL=0``).
"""

_TERMINAL_PHASES = frozenset(
    {EphemeralRunnerPhase.FAILED, EphemeralRunnerPhase.SUCCEEDED, EphemeralRunnerPhase.OUTDATED}
)
_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


class ScalerError(Exception):
    """A Kubernetes write of the scaler was refused; the message names the object and the patch.

    The API server's error (an `APIStatusError`, or whatever the client raised) is the
    ``__cause__``.

    Python only: Go wraps the error with ``fmt.Errorf("could not patch …: %w")``.
    """


@dataclass(frozen=True, slots=True)
class Decision:
    """One desired-count decision: what the EphemeralRunnerSet patch carries.

    Python only: Go returns the patch ID and keeps the target in the scaler.
    """

    replicas: int
    """``spec.replicas``: min(minRunners + assigned jobs, maxRunners)."""

    patch_id: int
    """``spec.patchID``: 0 means "converge now, scale-down included"."""


class DesiredState:
    """The scaler's memory: last target, patch sequence and the dirty flag.

    A fresh instance is a fresh process: target −1, sequence −1 (so the first
    patch ID is 0), not dirty. Nothing here is persisted.

    Ports: the targetRunners, patchSeq and dirty fields of scaler.Scaler
    """

    def __init__(self, *, min_runners: int, max_runners: int) -> None:
        """Ports: the initial field values set by scaler.New (targetRunners −1, patchSeq −1)"""
        self.min_runners = min_runners
        self.max_runners = max_runners
        self.target_runners = -1
        """The last decided replica count; −1 before the first decision."""
        self.patch_seq = -1
        """The last used sequence number; −1 before the first decision."""
        self.dirty = False
        """A job started or completed since the last decision."""
        self.completed = False
        """A job completed since the last decision (Python only: `is_repeat` reads it)."""
        self.repeated = False
        """The last decision was a repeat (`is_repeat`)."""

    def is_repeat(self, assigned_jobs: int) -> bool:
        """Whether deciding for ``assigned_jobs`` now would repeat the last decision to the set:
        the same target and no job completed since.

        A job start alone does not count: it changes nothing the EphemeralRunnerSet acts on
        (the listener itself promotes the runner to Running), and the dirty flag it sets
        stays until the next decision, so that one never forces convergence (ID 0).

        Python only: Go does not ask; it decides and patches on every call.
        """
        target = min(self.min_runners + assigned_jobs, self.max_runners)
        return not self.completed and self.target_runners == target

    def peek(self, assigned_jobs: int) -> Decision:
        """What `decide` would return now, without deciding. Python only."""
        target = min(self.min_runners + assigned_jobs, self.max_runners)
        if not self.dirty and target == self.target_runners and target == self.min_runners:
            return Decision(replicas=target, patch_id=0)
        return Decision(replicas=target, patch_id=1 if self.patch_seq == MAX_PATCH_SEQ else self.patch_seq + 1)

    def mark_dirty(self, *, completed: bool = False) -> None:
        """Record that a job started (or, with ``completed``, completed).

        Ports: the ``w.dirty = true`` of HandleJobStarted/HandleJobCompleted
        """
        self.dirty = True
        self.completed = self.completed or completed

    def decide(self, assigned_jobs: int) -> Decision:
        """Decide the replica count and patch ID for ``assigned_jobs`` assigned jobs.

        The sequence always advances. The published ID is the sequence number,
        except 0 when nothing happened since the last decision and the target is
        unchanged and equal to ``min_runners`` (idle: force convergence).

        Args:
            assigned_jobs: ``statistics.totalAssignedJobs`` (waiting plus running).

        Ports: Scaler.setDesiredWorkerState
        """
        was_dirty = self.dirty
        self.repeated = self.is_repeat(assigned_jobs)
        self.dirty = self.completed = False
        if self.patch_seq == MAX_PATCH_SEQ:
            self.patch_seq = 0
        self.patch_seq += 1
        target = min(self.min_runners + assigned_jobs, self.max_runners)
        previous = self.target_runners
        self.target_runners = target
        patch_id = self.patch_seq
        if not was_dirty and target == previous and target == self.min_runners:
            patch_id = 0
        log.debug(
            "calculated target runner count",
            assigned_jobs=assigned_jobs,
            decision=target,
            min=self.min_runners,
            max=self.max_runners,
            patch_id=patch_id,
        )
        return Decision(replicas=target, patch_id=patch_id)


def desired_count_patch(decision: Decision) -> dict[str, Any]:
    """The exact merge-patch body for the EphemeralRunnerSet.

    Go diffs ``{replicas: −1, patchID: −1}`` against the new values with
    ``replicas`` omitted when zero, so 0 replicas is sent as ``null``.

    Ports: the patch built in Scaler.HandleDesiredRunnerCount
    """
    replicas = decision.replicas if decision.replicas != 0 else None
    return {"spec": {"patchID": decision.patch_id, "replicas": replicas}}


class JobStartedInfo(Protocol):
    """The parts of a JobStarted message the scaler reads.

    Timestamps may be ``None`` or the zero time (0001-01-01T00:00:00Z): both
    mean "not reported" and are left out of the patch.

    Ports: scaleset.JobStarted (as consumed by the scaler)
    """

    @property
    def runner_request_id(self) -> int: ...
    @property
    def repository_name(self) -> str: ...
    @property
    def owner_name(self) -> str: ...
    @property
    def job_id(self) -> str: ...
    @property
    def job_workflow_ref(self) -> str: ...
    @property
    def job_display_name(self) -> str: ...
    @property
    def workflow_run_id(self) -> int: ...
    @property
    def event_name(self) -> str: ...
    @property
    def queue_time(self) -> datetime | None: ...
    @property
    def scale_set_assign_time(self) -> datetime | None: ...
    @property
    def runner_assign_time(self) -> datetime | None: ...
    @property
    def runner_name(self) -> str: ...


def _kube_time(value: datetime | None) -> str | None:
    """RFC 3339 in UTC with seconds precision, or None for an unreported time.

    Ports: optionalTime, with metav1.Time's JSON form
    """
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    if value == _ZERO_TIME:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_started_status(job: JobStartedInfo) -> dict[str, Any]:
    """The job fields of the runner's status for ``job``, zero values left out.

    ``jobRepositoryName`` is always present (``"owner/repo"``, even ``"/"``).
    Fields are never cleared: a value the message lacks is simply not sent.

    Ports: the EphemeralRunnerStatus built in Scaler.patchJobStarted
    """
    status: dict[str, Any] = {"jobRepositoryName": f"{job.owner_name}/{job.repository_name}"}
    optional: dict[str, Any] = {
        "jobRequestId": job.runner_request_id,
        "jobId": job.job_id,
        "workflowRunId": job.workflow_run_id,
        "jobWorkflowRef": job.job_workflow_ref,
        "jobDisplayName": job.job_display_name,
        "jobEventName": job.event_name,
        "jobQueuedAt": _kube_time(job.queue_time),
        "jobScaleSetAssignedAt": _kube_time(job.scale_set_assign_time),
        "jobRunnerAssignedAt": _kube_time(job.runner_assign_time),
    }
    status.update({key: value for key, value in optional.items() if value})
    return status


def should_promote_to_running(runner: Mapping[str, Any]) -> bool:
    """Whether a JobStarted may move ``runner`` to ``Running``.

    Not when it is being deleted, nor when its phase is Failed, Succeeded or
    Outdated: a runner that already finished is never resurrected.

    Ports: the phase guard in Scaler.patchJobStarted
    """
    if objects.meta(runner).get("deletionTimestamp"):
        return False
    return objects.status(runner).get("phase", "") not in _TERMINAL_PHASES


class _SubResourcePatcher(Protocol):
    """Python only: the one subresource call the scaler makes (status patch)."""

    async def patch(self, obj: Object, patch: Patch, /) -> Object: ...


class ScalerClient(Protocol):
    """The Kubernetes calls the scaler needs, and nothing more.

    Satisfied by `reconcilekit.client.Client`; RBAC needed: ``patch`` on the
    EphemeralRunnerSet, ``get`` on ephemeralrunners, ``patch`` on ephemeralrunners/status.

    Python only: the scaler's role-sized view of the client.
    """

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object: ...

    async def patch(self, obj: Object, patch: Patch, /) -> Object: ...

    def status(self) -> _SubResourcePatcher: ...


def _dumps(body: Mapping[str, Any]) -> str:
    """Python only: the patch as compact JSON with sorted keys, for error messages."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


class Scaler:
    """Writes the listener's decisions to Kubernetes.

    The loop calls one handler at a time, as the Go listener does; the republish timer's
    patch is serialized with the loop's (one set patch at a time, patch IDs increasing in
    sending order). Call `aclose` when the loop ends.

    Ports: scaler.Scaler
    """

    def __init__(
        self,
        client: ScalerClient,
        *,
        namespace: str,
        runner_set_name: str,
        min_runners: int,
        max_runners: int,
        conflict_backoff: Backoff = DEFAULT_CONFLICT_BACKOFF,
        republish_interval: float = DEFAULT_REPUBLISH_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """Args:
        client: Kubernetes access (see `ScalerClient` for the RBAC).
        namespace: Namespace of the EphemeralRunnerSet and its runners.
        runner_set_name: Name of the EphemeralRunnerSet.
        min_runners, max_runners: Bounds of the desired count.
        conflict_backoff: Attempts of the job-started GET and PATCH, and the
            sleeps between them, before a conflict is given up on.
        republish_interval: Seconds after the last patch within which a repeated, unchanged
            decision is held back, and at which the held-back one is sent (see
            `handle_desired_runner_count`); 0 patches every time, as Go does.
        clock: Monotonic seconds (tests move it).
        sleep: Waits the given seconds of ``clock``'s time (the republish timer's wait).

        Raises:
            ValueError: ``republish_interval`` is negative or not finite.

        Ports: scaler.New (without building the clientset: the client is given)
        """
        if not 0 <= republish_interval < float("inf"):
            raise ValueError(f"republish_interval must be a number of seconds >= 0, got {republish_interval!r}")
        self._client = client
        self._namespace = namespace
        self._runner_set_name = runner_set_name
        self._conflict_backoff = conflict_backoff
        self._republish_interval = republish_interval
        self._clock = clock
        self._sleep = sleep
        self._published_at: float | None = None
        self._last_sent: Decision | None = None
        self._asked: int | None = None
        """The assigned-jobs count of the latest `handle_desired_runner_count` call."""
        self._started_since_asked = False
        self._completed_since_asked = False
        """A job started (completed) since the latest call: a message is being handled, and its
        own decision follows with these marks (`_republish_when_due` keeps them for it)."""
        self._patching = asyncio.Lock()
        """Held while a decision is made and sent: one patch at a time, IDs in sending order."""
        self._republish: asyncio.Task[None] | None = None
        """The timer that sends a held-back decision (`_republish_when_due`); owned, see `aclose`."""
        self.state = DesiredState(min_runners=min_runners, max_runners=max_runners)
        self.skipped = 0
        """Decisions held back because they repeated a repeat (see `handle_desired_runner_count`)."""
        self.republished = 0
        """Held-back decisions the timer sent (see `handle_desired_runner_count`)."""

    async def handle_desired_runner_count(self, count: int) -> int:
        """Decide for ``count`` assigned jobs and patch the EphemeralRunnerSet, unless that repeats itself.

        Sent at once: every decision with a new target or after a job completed (a new patch
        ID, the seed's), and the first repeat after it (the next message or empty poll), with
        a new patch ID as Go sends it: the set may have deferred a scale-up under the previous
        ID (the finished-runner cleanup marker lifts only at a new ID). Held back: a repeat of
        a repeat (job starts alone included: they change nothing the set acts on) and a patch
        identical to the last one (ID 0 again), while less than ``republish_interval`` has
        passed since the last patch. A held-back decision is never held longer: the scaler's
        timer sends the latest one (a new patch ID, as Go's next message or poll would carry)
        at the last patch + ``republish_interval``, even while the loop waits in the long
        poll; any patch sent before then supersedes it. Nothing held back advances the
        sequence or clears the dirty flag, so the next decision after a job start is never
        ID 0 (no forced scale-down right after a start).

        Beyond: no ARC issue; issue 20: Go patches on every message and empty poll, each a write
        that wakes the set; collapsing repeats within ``republish_interval`` saves about one of
        the listener's 3.5-3.9 requests per runner in a 50-job burst, while the timer keeps a
        scale-up the set deferred under the marker (the seed mechanism, unchanged) waiting at
        most ``republish_interval`` for its next patch ID.

        Returns:
            The replica count decided (recorded as ``gha_desired_runners``), sent or not.

        Raises:
            ScalerError: the patch failed (the API error is its ``__cause__``).

        Ports: Scaler.HandleDesiredRunnerCount
        """
        self._asked = count
        self._started_since_asked = self._completed_since_asked = False
        async with self._patching:
            now = self._clock()
            if self._repeats_itself(count, now):
                self.skipped += 1
                self._arm_republish()
                log.debug(
                    "desired runner count unchanged and already republished; holding the patch back",
                    replicas=self.state.target_runners,
                )
                return self.state.target_runners
            await self._cancel_republish()
            return (await self._send(count, now)).replicas

    async def aclose(self) -> None:
        """Stop the republish timer (a held-back decision is then not sent); idempotent.

        Python only: the owner of the timer task.
        """
        await self._cancel_republish()

    async def _send(self, count: int, now: float, *, keep_later_marks: bool = False) -> Decision:
        """Decide for ``count`` and patch the set; the caller holds ``_patching``.

        With ``keep_later_marks``, the job starts and completions seen since ``count`` was asked
        for stay marked after the decision (they belong to the message being handled, whose own
        decision follows). Python only.
        """
        decision = self.state.decide(count)
        if keep_later_marks and (self._started_since_asked or self._completed_since_asked):
            self.state.mark_dirty(completed=self._completed_since_asked)
        body = desired_count_patch(decision)
        base = {**self._runner_set_object(), "spec": {"patchID": -1, "replicas": -1}}
        target = {**self._runner_set_object(), "spec": {k: v for k, v in body["spec"].items() if v is not None}}
        try:
            await self._client.patch(target, merge_from(base))
        except Exception as err:
            raise ScalerError(
                f"could not patch ephemeral runner set {self._namespace}/{self._runner_set_name}, "
                f"patch JSON: {_dumps(body)}: {err}"
            ) from err
        self._published_at, self._last_sent = now, decision
        log.info(
            "ephemeral runner set scaled",
            namespace=self._namespace,
            name=self._runner_set_name,
            replicas=decision.replicas,
            patch_id=decision.patch_id,
        )
        return decision

    def _repeats_itself(self, count: int, now: float) -> bool:
        """Whether the decision for ``count`` need not be sent now (see `handle_desired_runner_count`).

        Python only.
        """
        if self._published_at is None or now - self._published_at >= self._republish_interval:
            return False
        if self.state.peek(count) == self._last_sent:
            return True
        return self.state.repeated and self.state.is_repeat(count)

    def _arm_republish(self) -> None:
        """Start the timer for a held-back decision unless it runs already. Python only."""
        if self._republish is None or self._republish.done():
            assert self._published_at is not None
            due = self._published_at + self._republish_interval
            self._republish = asyncio.create_task(self._republish_when_due(due), name="listener-republish")

    async def _cancel_republish(self) -> None:
        """Cancel the timer and wait for it to end. Python only."""
        task, self._republish = self._republish, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})

    async def _republish_when_due(self, due: float) -> None:
        """At ``due`` (clock seconds), send the latest decision that was held back.

        Also while a message is being handled: the decision is the one last asked for (the
        previous message's or poll's, as Go sent it then), and the job events the message
        brought so far stay marked for the message's own decision (a JobStarted keeps it off
        ID 0, a JobCompleted gives it a new ID). A refused patch is logged; the next message
        or empty poll then patches (the interval has passed) and ends the listener if it is
        refused too, as Go's would.

        Python only.
        """
        await self._sleep(max(0.0, due - self._clock()))
        async with self._patching:
            if self._asked is None:
                return
            try:
                await self._send(self._asked, self._clock(), keep_later_marks=True)
            except ScalerError as err:
                log.error("could not republish the desired runner count", error=str(err))
                return
            self.republished += 1

    async def handle_job_completed(self, job: object) -> None:
        """Mark the state dirty; no API call, never fails. Ports: Scaler.HandleJobCompleted"""
        self._completed_since_asked = True
        self.state.mark_dirty(completed=True)

    async def handle_job_started(self, job: JobStartedInfo) -> None:
        """Record ``job`` on its EphemeralRunner; promote the runner to Running when allowed.

        The state is marked dirty first, whatever happens next. Then, up to
        ``conflict_backoff.steps`` times: read the runner, build the status patch
        (the phase and the read resourceVersion only when `should_promote_to_running`),
        patch the status subresource. A 409 starts over from a fresh read; a 404
        on either call ends quietly.

        Raises:
            ConflictError: the runner changed under every attempt.
            ScalerError: any other refusal of the status patch (the API error is its ``__cause__``).
            APIStatusError: the runner could not be read (other than 404).

        Ports: Scaler.HandleJobStarted
        """
        log.info(
            "updating job info for the runner",
            runner_name=job.runner_name,
            owner_name=job.owner_name,
            repo_name=job.repository_name,
            job_id=job.job_id,
            workflow_ref=job.job_workflow_ref,
            workflow_run_id=job.workflow_run_id,
            job_display_name=job.job_display_name,
            request_id=job.runner_request_id,
        )
        self._started_since_asked = True
        self.state.mark_dirty()
        await retry_on_conflict(self._conflict_backoff, lambda: self._patch_job_started(job))

    async def _patch_job_started(self, job: JobStartedInfo) -> None:
        """One read-decide-patch attempt. Ports: Scaler.patchJobStarted"""
        key = ObjectKey(self._namespace, job.runner_name)
        try:
            runner = await self._client.get(EPHEMERAL_RUNNER_GVK, key)
        except NotFoundError:
            log.info("ephemeral runner not found, skipping job info update", runner_name=job.runner_name)
            return
        status = job_started_status(job)
        base = self._runner_object(job.runner_name)
        patch: Patch
        if should_promote_to_running(runner):
            status["phase"] = EphemeralRunnerPhase.RUNNING.value
            base["metadata"]["resourceVersion"] = objects.meta(runner).get("resourceVersion", "")
            patch = merge_from_with_optimistic_lock(base)
        else:
            patch = merge_from(base)
        target = {**self._runner_object(job.runner_name), "status": status}
        body = json.loads(patch.data(target))
        try:
            await self._client.status().patch(target, patch)
        except NotFoundError:
            log.info("ephemeral runner not found, skipping status patch", runner_name=job.runner_name)
            return
        except ConflictError:
            log.info("ephemeral runner changed while patching job info, retrying", runner_name=job.runner_name)
            raise
        except Exception as err:
            raise ScalerError(
                f"could not patch ephemeral runner {key} status, patch JSON: {_dumps(body)}: {err}"
            ) from err
        log.info("ephemeral runner status updated", runner_name=job.runner_name, phase=status.get("phase"))

    def _runner_object(self, name: str) -> Object:
        """Python only: a bare EphemeralRunner the status patch is computed from and addressed to."""
        return {
            "apiVersion": EPHEMERAL_RUNNER_GVK.api_version,
            "kind": EPHEMERAL_RUNNER_GVK.kind,
            "metadata": {"namespace": self._namespace, "name": name},
        }

    def _runner_set_object(self) -> Object:
        """Python only: the object the ERS patch is addressed to (the client reads its key and kind)."""
        return {
            "apiVersion": EPHEMERAL_RUNNER_SET_GVK.api_version,
            "kind": EPHEMERAL_RUNNER_SET_GVK.kind,
            "metadata": {"namespace": self._namespace, "name": self._runner_set_name},
        }
