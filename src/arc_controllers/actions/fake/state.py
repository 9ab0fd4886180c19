"""The in-memory world of the fake Actions service.

Runner groups, scale sets, runners, message sessions, jobs and one message
queue per scale set. Every change happens on the event loop without an
``await`` in between, so no lock is needed; long polls wait on the queue's
wake-up future.

A job moves ``queued`` → ``available`` (a ``JobAvailable`` for the first
scale set whose labels cover the job's) → ``acquired`` (acquire jobs) →
``assigned`` (while the scale set's assigned jobs stay under the capacity
the listener last sent: ``JobAssigned``) → ``running`` (a registered idle
runner takes it: ``JobStarted``) → ``completed`` (``JobCompleted``; the
ephemeral runner's registration is deleted).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
import json
import secrets
import time
import uuid
from collections.abc import Callable
from typing import Any

from arc_controllers.actions.fake.model import (
    FakeError,
    FakeJob,
    FakeRunner,
    FakeScaleSet,
    FakeSession,
    now,
)
from arc_controllers.actions.types import format_go_time

__all__ = ["FakeState"]


class FakeState:
    """Everything the fake service knows."""

    def __init__(self, *, queue_token_ttl: float = 3600.0, clock: Callable[[], float] = time.time) -> None:
        self.queue_token_ttl = queue_token_ttl
        self.clock = clock
        self.runner_groups: dict[int, dict[str, Any]] = {
            1: {"id": 1, "name": "default", "size": 0, "isDefaultGroup": True}
        }
        self.scale_sets: dict[int, FakeScaleSet] = {}
        self.runners: dict[int, FakeRunner] = {}
        self.sessions: dict[int, FakeSession] = {}
        self.jobs: dict[int, FakeJob] = {}
        self.closing = False
        self._ids = {
            name: itertools.count(start)
            for name, start in (("group", 2), ("set", 1), ("runner", 1), ("job", 101), ("message", 1), ("run", 555))
        }

    def next_id(self, kind: str) -> int:
        return next(self._ids[kind])

    # -- runner groups and scale sets ------------------------------------------------

    def add_runner_group(self, name: str) -> dict[str, Any]:
        group_id = self.next_id("group")
        group: dict[str, Any] = {"id": group_id, "name": name, "size": 0, "isDefaultGroup": False}
        self.runner_groups[group_id] = group
        return group

    def runner_groups_named(self, name: str) -> list[dict[str, Any]]:
        return [g for g in self.runner_groups.values() if g["name"].lower() == name.lower()]

    def scale_set(self, scale_set_id: int) -> FakeScaleSet:
        found = self.scale_sets.get(scale_set_id)
        if found is None:
            raise FakeError(404, "RunnerScaleSetNotFoundException", f"runner scale set {scale_set_id} not found")
        return found

    def scale_set_json(self, ss: FakeScaleSet) -> dict[str, Any]:
        return {
            "id": ss.id,
            "name": ss.name,
            "runnerGroupId": ss.runner_group_id,
            "runnerGroupName": ss.runner_group_name,
            "labels": ss.labels,
            "RunnerSetting": {"disableUpdate": True} if ss.disable_update else {},
            "createdOn": format_go_time(ss.created_on),
            "runnerJitConfigUrl": f"_apis/runtime/runnerscalesets/{ss.id}/generatejitconfig",
            "statistics": self.statistics(ss.id),
        }

    def create_scale_set(self, body: dict[str, Any]) -> FakeScaleSet:
        name = str(body.get("name") or "")
        group_id = int(body.get("runnerGroupId") or 1)
        group = self.runner_groups.get(group_id)
        if not name or group is None:
            raise FakeError(400, "ArgumentException", "a scale set needs a name and an existing runner group")
        if any(s.name == name and s.runner_group_id == group_id for s in self.scale_sets.values()):
            raise FakeError(409, "RunnerScaleSetExistsException", f"runner scale set {name} already exists")
        labels = [{"type": str(lb.get("type") or "System"), "name": str(lb["name"])} for lb in body.get("labels") or []]
        ss = FakeScaleSet(
            id=self.next_id("set"),
            name=name,
            runner_group_id=group_id,
            runner_group_name=group["name"],
            labels=labels or [{"type": "System", "name": name}],
            disable_update=bool((body.get("RunnerSetting") or {}).get("disableUpdate")),
        )
        self.scale_sets[ss.id] = ss
        self._offer_queued_jobs()
        return ss

    def update_scale_set(self, scale_set_id: int, body: dict[str, Any]) -> FakeScaleSet:
        ss = self.scale_set(scale_set_id)
        if body.get("name"):
            ss.name = str(body["name"])
        if body.get("runnerGroupId"):
            group = self.runner_groups.get(int(body["runnerGroupId"]))
            if group is None:
                raise FakeError(400, "ArgumentException", "no such runner group")
            ss.runner_group_id, ss.runner_group_name = group["id"], group["name"]
        if body.get("labels"):
            ss.labels = [{"type": str(lb.get("type") or "System"), "name": str(lb["name"])} for lb in body["labels"]]
        if body.get("RunnerSetting"):
            ss.disable_update = bool(body["RunnerSetting"].get("disableUpdate"))
        self._offer_queued_jobs()
        return ss

    def delete_scale_set(self, scale_set_id: int) -> None:
        ss = self.scale_set(scale_set_id)
        del self.scale_sets[scale_set_id]
        self.sessions.pop(scale_set_id, None)
        for runner in [r for r in self.runners.values() if r.scale_set_id == scale_set_id]:
            del self.runners[runner.id]
        for job in self.jobs.values():
            if job.scale_set_id == scale_set_id and job.state != "completed":
                job.state, job.scale_set_id = "queued", None
        ss.queue.wake()

    # -- runners -------------------------------------------------------------------------

    def generate_jit_config(self, scale_set_id: int, name: str) -> tuple[FakeRunner, str]:
        self.scale_set(scale_set_id)
        if not name:
            raise FakeError(400, "ArgumentException", "runner name is required")
        if any(r.name == name for r in self.runners.values()):
            raise FakeError(409, "GitHub.DistributedTask.WebApi.AgentExistsException", f"runner {name} already exists")
        runner = FakeRunner(
            id=self.next_id("runner"), name=name, scale_set_id=scale_set_id, jit_secret=secrets.token_urlsafe(24)
        )
        self.runners[runner.id] = runner
        payload = {"runnerId": runner.id, "scaleSetId": scale_set_id, "name": name, "secret": runner.jit_secret}
        return runner, base64.b64encode(json.dumps(payload).encode()).decode()

    def runner(self, runner_id: int) -> FakeRunner:
        found = self.runners.get(runner_id)
        if found is None:
            raise FakeError(
                404, "GitHub.DistributedTask.WebApi.AgentNotFoundException", f"runner {runner_id} not found"
            )
        return found

    def remove_runner(self, runner_id: int) -> None:
        """Unregister a runner; an unknown or already removed id is a no-op, as on the service.

        Go ARC removes every scaled-down runner twice (the set's scale-down, then the
        runner's finalizer), so the service answers 204 for an id it no longer knows;
        a 404 here would leave Go ARC's finalizers retrying forever.

        Raises:
            FakeError: 400 ``JobStillRunningException`` while the runner runs a job.
        """
        runner = self.runners.get(runner_id)
        if runner is None:
            return
        if runner.busy:
            raise FakeError(
                400,
                "GitHub.DistributedTask.WebApi.JobStillRunningException",
                f"runner {runner.name} is still running job {runner.job_request_id}",
            )
        del self.runners[runner_id]

    def register_runner(self, encoded_jit_config: str) -> FakeRunner:
        """A runner starts with its JIT config and comes online."""
        try:
            payload = json.loads(base64.b64decode(encoded_jit_config, validate=True))
            runner = self.runners[int(payload["runnerId"])]
            ok = secrets.compare_digest(str(payload["secret"]), runner.jit_secret)
        except (ValueError, KeyError, TypeError, binascii.Error):
            ok = False
        if not ok:
            raise FakeError(401, "InvalidJitConfigException", "JIT config is not valid")
        runner.online = True
        return runner

    def take_job(self, runner_id: int) -> FakeJob | None:
        """An idle online runner takes its scale set's oldest assigned job: ``JobStarted``."""
        runner = self.runner(runner_id)
        if not runner.online or runner.busy:
            raise FakeError(409, "RunnerBusyException", f"runner {runner.name} is not idle and online")
        job = next(
            (j for j in self.jobs.values() if j.state == "assigned" and j.scale_set_id == runner.scale_set_id), None
        )
        if job is None:
            return None
        job.state, job.runner_id, job.runner_name = "running", runner.id, runner.name
        job.runner_assign_time = now()
        runner.job_request_id = job.request_id
        self._emit(job, job.message("JobStarted", runnerId=runner.id, runnerName=runner.name))
        return job

    # -- jobs --------------------------------------------------------------------------

    def queue_job(self, spec: dict[str, Any]) -> FakeJob:
        owner = str(spec.get("ownerName") or "my-org")
        repo = str(spec.get("repositoryName") or "repo")
        job = FakeJob(
            request_id=self.next_id("job"),
            job_id=str(uuid.uuid4()),
            labels=[str(x) for x in spec.get("labels") or []],
            repository_name=repo,
            owner_name=owner,
            workflow_ref=str(spec.get("jobWorkflowRef") or f"{owner}/{repo}/.github/workflows/ci.yml@refs/heads/main"),
            display_name=str(spec.get("jobDisplayName") or "build"),
            workflow_run_id=self.next_id("run"),
            event_name=str(spec.get("eventName") or "push"),
        )
        self.jobs[job.request_id] = job
        self._offer(job)
        return job

    def job(self, request_id: int) -> FakeJob:
        found = self.jobs.get(request_id)
        if found is None:
            raise FakeError(404, "JobNotFoundException", f"job {request_id} not found")
        return found

    def complete_job(self, request_id: int, result: str = "succeeded") -> FakeJob:
        """Finish a job: ``JobCompleted``; its ephemeral runner is unregistered.

        A job no runner had started yet ends ``canceled`` unless another
        result is given; a job never offered to a scale set ends silently.
        """
        job = self.job(request_id)
        if job.state == "completed":
            raise FakeError(409, "JobCompletedException", f"job {request_id} already completed")
        was_assigned = job.state in ("assigned", "running")
        job.finish_time = now()
        job.result = result if job.state == "running" else (result if result != "succeeded" else "canceled")
        runner = self.runners.pop(job.runner_id, None) if job.runner_id else None
        if runner is not None:
            runner.job_request_id = None
        previous_state, job.state = job.state, "completed"
        if job.scale_set_id is not None and previous_state != "queued":
            extra = {"result": job.result, "runnerId": job.runner_id, "runnerName": job.runner_name}
            self._emit(job, job.message("JobCompleted", **extra))
        if was_assigned and job.scale_set_id is not None:
            self._assign(job.scale_set_id)
        return job

    def acquire_jobs(self, scale_set_id: int, request_ids: list[int]) -> list[int]:
        acquired = []
        for request_id in request_ids:
            job = self.jobs.get(int(request_id))
            if job is None or job.scale_set_id != scale_set_id:
                continue
            if job.state == "available":
                job.state = "acquired"
            if job.state in ("acquired", "assigned", "running"):
                acquired.append(job.request_id)
        self._assign(scale_set_id)
        return acquired

    def _offer(self, job: FakeJob) -> None:
        wanted = {label.lower() for label in job.labels}
        for ss in sorted(self.scale_sets.values(), key=lambda s: s.id):
            if wanted <= ss.label_names():
                job.state, job.scale_set_id = "available", ss.id
                url = f"_apis/runtime/runnerscalesets/{ss.id}/acquirejobs"
                self._emit(job, job.message("JobAvailable", acquireJobUrl=url))
                return

    def _offer_queued_jobs(self) -> None:
        for job in list(self.jobs.values()):
            if job.state == "queued":
                self._offer(job)

    def _assign(self, scale_set_id: int) -> None:
        ss = self.scale_sets.get(scale_set_id)
        if ss is None:
            return
        mine = [j for j in self.jobs.values() if j.scale_set_id == scale_set_id]
        active = sum(1 for j in mine if j.state in ("assigned", "running"))
        for job in mine:
            if active >= ss.capacity:
                break
            if job.state == "acquired":
                job.state, job.scale_set_assign_time = "assigned", now()
                active += 1
                self._emit(job, job.message("JobAssigned"))

    def _emit(self, job: FakeJob, event: dict[str, Any]) -> None:
        ss = self.scale_sets.get(job.scale_set_id or 0)
        if ss is not None:
            ss.queue.push(event)

    # -- statistics, sessions, messages --------------------------------------------------

    def statistics(self, scale_set_id: int) -> dict[str, int]:
        jobs = [j for j in self.jobs.values() if j.scale_set_id == scale_set_id]
        runners = [r for r in self.runners.values() if r.scale_set_id == scale_set_id]

        def count(*states: str) -> int:
            return sum(1 for j in jobs if j.state in states)

        busy = sum(1 for r in runners if r.busy)
        return {
            "totalAvailableJobs": count("available"),
            "totalAcquiredJobs": count("acquired", "assigned", "running"),
            "totalAssignedJobs": count("assigned", "running"),
            "totalRunningJobs": count("running"),
            "totalRegisteredRunners": len(runners),
            "totalBusyRunners": busy,
            "totalIdleRunners": len(runners) - busy,
        }

    def create_session(self, scale_set_id: int, owner_name: str) -> FakeSession:
        self.scale_set(scale_set_id)
        if scale_set_id in self.sessions:
            raise FakeError(
                409,
                "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionConflictException",
                f"The runner scale set {scale_set_id} already has an active session.",
            )
        session = FakeSession(
            session_id=str(uuid.uuid4()),
            scale_set_id=scale_set_id,
            owner_name=owner_name,
            queue_token="",
            token_expires_at=0.0,
        )
        self._new_queue_token(session)
        self.sessions[scale_set_id] = session
        return session

    def _new_queue_token(self, session: FakeSession) -> None:
        session.queue_token = "mq-" + secrets.token_urlsafe(24)
        session.token_expires_at = self.clock() + self.queue_token_ttl

    def session(self, scale_set_id: int, session_id: str) -> FakeSession:
        self.scale_set(scale_set_id)  # a deleted scale set answers for its sessions first
        found = self.sessions.get(scale_set_id)
        if found is None or found.session_id != session_id:
            raise FakeError(404, "RunnerScaleSetSessionNotFoundException", f"session {session_id} not found")
        return found

    def refresh_session(self, scale_set_id: int, session_id: str) -> FakeSession:
        session = self.session(scale_set_id, session_id)
        self._new_queue_token(session)
        return session

    def delete_session(self, scale_set_id: int, session_id: str) -> None:
        self.session(scale_set_id, session_id)
        del self.sessions[scale_set_id]
        self.scale_sets[scale_set_id].queue.wake()

    def expire_session(self, scale_set_id: int) -> bool:
        """Drop the scale set's session as the service does with an orphaned one; ``False`` if none."""
        if self.sessions.pop(scale_set_id, None) is None:
            return False
        self.scale_sets[scale_set_id].queue.wake()
        return True

    def session_by_token(self, scale_set_id: int, token: str) -> FakeSession | None:
        session = self.sessions.get(scale_set_id)
        if session is None or not token or not secrets.compare_digest(session.queue_token, token):
            return None
        if self.clock() >= session.token_expires_at:
            return None
        return session

    def expire_queue_tokens(self) -> int:
        for session in self.sessions.values():
            session.token_expires_at = 0.0
        return len(self.sessions)

    def message_json(self, scale_set_id: int, message: tuple[int, list[dict[str, Any]]]) -> dict[str, Any]:
        message_id, events = message
        return {
            "messageId": message_id,
            "messageType": "RunnerScaleSetJobMessages",
            "body": json.dumps(events, separators=(",", ":")),
            "statistics": self.statistics(scale_set_id),
        }

    async def next_message(
        self, session: FakeSession, last_message_id: int, capacity: int, hold_seconds: float
    ) -> dict[str, Any] | None:
        """Long poll: the oldest unacknowledged message, or ``None`` after ``hold_seconds``."""
        ss = self.scale_set(session.scale_set_id)
        ss.capacity = capacity
        if last_message_id > 0:
            ss.queue.ack_through(last_message_id)
        self._assign(ss.id)
        deadline = asyncio.get_running_loop().time() + hold_seconds
        while True:
            if self.sessions.get(ss.id) is not session or self.closing:
                return None
            found = ss.queue.next(lambda: self.next_id("message"))
            if found is not None:
                return self.message_json(ss.id, found)
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return None
            try:
                async with asyncio.timeout(remaining):
                    await asyncio.shield(ss.queue.waiter())
            except TimeoutError:
                return None

    def wake_all(self) -> None:
        for ss in self.scale_sets.values():
            ss.queue.wake()
