"""EphemeralRunner reconciler: one JIT registration, one secret, one pod per runner.

The controller writes Pending/Ready, Succeeded, Failed and Outdated, never Running (the
listener writes that when a job starts). Registrations of runners that did not
deregister themselves are removed by the unregistration queue, never inline.

With ``publish_metrics`` on, every reconcile publishes the runner's phase to the
``gha_controller_*_ephemeral_runners`` gauges (spec §3.8; §8.2 steps 2.1 and 3): the empty
phase for a runner being deleted, its current phase otherwise (this is how the listener's
Running reaches the gauges), and each phase the controller writes right after the write.
Differs: a runner found gone (its finalizers stripped by someone else, so no deletion
reconcile ran) is also removed from the gauges; upstream keeps counting it until restart.

Ports: controllers/actions.github.com/ephemeralrunner_controller.go (@ed5c8aa0, §8.1–§8.6 of the spec)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from arc_controllers._runner_constants import (
    EPHEMERAL_RUNNER,
    EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
    EPHEMERAL_RUNNER_CONTAINER_NAME,
    EPHEMERAL_RUNNER_FINALIZER,
    PHASE_FAILED,
    PHASE_OUTDATED,
    PHASE_PENDING,
    PHASE_SUCCEEDED,
    SECRET,
)
from arc_controllers.controllers.actions_seam import ActionsClientFactory, is_runner_exists
from arc_controllers.controllers.ephemeralrunner_resources import EphemeralRunnerResources
from arc_controllers.controllers.ephemeralrunner_resources import secret_value as _secret_value
from arc_controllers.controllers.metrics import RUNNER_PHASE_METRICS, RunnerPhaseMetrics
from arc_controllers.controllers.patching import (
    LazyCopy,
    SupersededVersions,
    add_finalizer,
    contains_finalizer,
    remove_finalizer,
)
from arc_controllers.controllers.runnerstates import (
    has_container_hook_configured,
    has_job,
    is_done,
    last_failure,
    parse_time,
    pod_ready,
    runner_id,
)
from arc_controllers.controllers.unregistration import RunnerUnregistrationQueue
from arc_controllers.resourcebuilder.runner import (
    JitRunnerConfig,
    RunnerBuildOptions,
    new_ephemeral_runner_jit_secret,
    new_ephemeral_runner_pod,
    proxy_env,
)
from reconcilekit.client.interfaces import Client, Object, ObjectKey
from reconcilekit.errors import AlreadyExistsError, ForbiddenError, InvalidError, NotFoundError
from reconcilekit.reconcile import Request, Result

__all__ = ["FAILURE_BACKOFF", "MAX_FAILURES", "EphemeralRunnerReconciler"]

log = structlog.get_logger("EphemeralRunner")  # Go's logr name for this reconciler (zap's `logger`)

MAX_FAILURES = 5
"""A runner whose pod failed more often than this is deleted (the set builds a new one). Ports: maxFailures"""

FAILURE_BACKOFF = (0.0, 5.0, 10.0, 20.0, 40.0, 80.0)
"""Seconds to wait before a new pod, indexed by the number of failures so far. Ports: failedRunnerBackoff"""

REASON_INVALID_POD = "InvalidPod"
RETRYABLE_REQUEUE = 0.5
POD_EXISTS_REQUEUE = 5.0
QUOTA_REQUEUE = 30.0
QUOTA_RECREATE_AGE = timedelta(minutes=10)


class _RetryableError(Exception):
    """Python only: JIT registration should be tried again shortly. Ports: retryableError"""


class _FatalError(Exception):
    """Python only: the runner can never register; delete it. Ports: fatalError"""


def _utcnow() -> datetime:
    """Python only: the default clock (aware UTC)."""
    return datetime.now(UTC)


def _rfc3339(t: datetime) -> str:
    """Python only: a timestamp as the API server writes it (second precision, Z)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _key(obj: Object) -> ObjectKey:
    """Python only: the object's namespace and name."""
    return ObjectKey(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def _status(obj: Object) -> dict[str, Any]:
    """Python only: ``status`` of a JSON object, {} when absent (read only)."""
    status: dict[str, Any] = obj.get("status") or {}
    return status


def _runner_container_status(pod: Object) -> dict[str, Any] | None:
    """Python only: the status of the container named ``runner``, or None."""
    for cs in _status(pod).get("containerStatuses") or []:
        if cs.get("name") == EPHEMERAL_RUNNER_CONTAINER_NAME:
            found: dict[str, Any] = cs
            return found
    return None


@dataclass(kw_only=True)
class EphemeralRunnerReconciler(EphemeralRunnerResources):
    """Ports: EphemeralRunnerReconciler"""

    client: Client
    actions: ActionsClientFactory
    unregistration_queue: RunnerUnregistrationQueue | None
    """A None queue silently drops pushes, as upstream's nil queue does."""
    build_options: RunnerBuildOptions = field(default_factory=RunnerBuildOptions)
    terminated_pod_grace_period_seconds: int = 0
    """Grace period for deleting a fully terminated pod; negative means the default graceful delete."""
    clock: Callable[[], datetime] = _utcnow
    publish_metrics: bool = False
    """Publish the phase gauges (main.go: the metrics address is not "0"). Ports: PublishMetrics"""
    phase_metrics: RunnerPhaseMetrics = field(default_factory=lambda: RUNNER_PHASE_METRICS)
    """Python only: the per-runner phase bookkeeping (process-wide by default)."""

    _superseded: SupersededVersions = field(default_factory=SupersededVersions, init=False, repr=False)
    """Python only: versions of runners this process replaced by its own writes (stale-cache guard)."""

    _secrets_deleted: set[str] = field(default_factory=set, init=False, repr=False)
    """Python only: UIDs of runners whose JIT secret this process already deleted (no second DELETE)."""

    async def reconcile(self, request: Request, /) -> Result:
        """Ports: EphemeralRunnerReconciler.Reconcile

        The guards are Go's, in Go's order; each branch is one method below.
        """
        try:
            runner = await self.client.get(EPHEMERAL_RUNNER, request.key)
        except NotFoundError:
            self._publish_phase({"metadata": {"namespace": request.namespace, "name": request.name}}, "")
            return Result()
        if self._superseded.is_stale(runner):
            log.debug("cache shows a version this controller replaced, waiting for the newer one")
            return Result()
        lazy = LazyCopy(runner)

        if runner["metadata"].get("deletionTimestamp"):
            self._publish_phase(runner, "")
            return await self._finalize(lazy)
        self._publish_phase(runner, _status(runner).get("phase") or "")
        if is_done(runner):
            return await self._release_finished(runner)
        if not self._has_both_finalizers(runner):
            await self._add_finalizers(lazy)

        # Differs: the pod is read before the JIT-secret step (spec §8.2 reads the secret
        # first, step 6, and the pod at step 10). Once the pod exists and the runner ID is
        # recorded, the secret is neither read nor re-created: this saves the repeated
        # secret read on every pod event (request budget, performance-facts §1). A JIT
        # secret deleted under a live pod is therefore not re-registered, where Go would
        # re-run JIT registration (remove the existing registration, retry).
        pod = await self._get_pod(runner)
        secret: Object | None = None
        if runner_id(runner) == 0 or pod is None:
            got = await self._ensure_jit_secret(runner)
            if isinstance(got, Result):
                return got
            secret = got
        identity: tuple[int, str] | None = None
        if runner_id(runner) == 0 and secret is not None:
            parsed = await self._runner_identity(secret)
            if parsed is None:
                return Result(requeue_after=RETRYABLE_REQUEUE)
            identity = parsed
        if len(_status(runner).get("failures") or {}) > MAX_FAILURES:
            return await self._delete_after_too_many_failures(runner)
        if (wait := self._failure_backoff_remaining(runner)) > 0:
            return Result(requeue_after=wait)
        if pod is None:
            assert secret is not None
            return await self._create_pod(runner, secret, identity)
        if identity is not None:
            await self._record_runner_identity(runner, identity)
        return await self._reconcile_pod_state(runner, pod)

    # ---- deletion and terminal branches -------------------------------------------------

    async def _finalize(self, lazy: LazyCopy) -> Result:
        """Release the registration (queued), delete pod and secret, then drop the finalizers.

        The registration ID is resolved before the JIT secret goes, and the registration
        finalizer is patched away before the push, so a retry never unregisters twice.
        A Succeeded runner deregistered itself: nothing is queued and its finalizer
        removal rides on the final patch.

        Ports: EphemeralRunnerReconciler.Reconcile, the deletion branch
        """
        runner = lazy.obj
        if not contains_finalizer(runner, EPHEMERAL_RUNNER_FINALIZER):
            return Result()
        if contains_finalizer(runner, EPHEMERAL_RUNNER_ACTIONS_FINALIZER):
            rid = 0 if _status(runner).get("phase") == PHASE_SUCCEEDED else await self._registered_runner_id(runner)
            remove_finalizer(lazy.mutate(), EPHEMERAL_RUNNER_ACTIONS_FINALIZER)
            if rid != 0:
                await self._write(runner, lazy.merge_from())
                self._push(runner, rid)
        await self._cleanup_resources(runner)
        if has_container_hook_configured(runner):
            await self._cleanup_container_hook_resources(runner)
        remove_finalizer(lazy.mutate(), EPHEMERAL_RUNNER_FINALIZER)
        with contextlib.suppress(NotFoundError):
            await self._write(runner, lazy.merge_from())
        self._secrets_deleted.discard(str(runner["metadata"].get("uid", "")))
        log.info("removed runner finalizers", runner=runner["metadata"]["name"])
        return Result()

    async def _release_finished(self, runner: Object) -> Result:
        """A done runner: queue its unregistration (unless it deregistered itself), free pod and secret.

        The set deletes the runner object itself.

        Ports: EphemeralRunnerReconciler.Reconcile, the IsDone branch
        """
        if _status(runner).get("phase") != PHASE_SUCCEEDED:
            await self._queue_unregistration(runner)
        await self._cleanup_resources(runner)
        return Result()

    # ---- provisioning ---------------------------------------------------------------

    @staticmethod
    def _has_both_finalizers(runner: Object) -> bool:
        """Python only: both runner finalizers are present."""
        return contains_finalizer(runner, EPHEMERAL_RUNNER_FINALIZER) and contains_finalizer(
            runner, EPHEMERAL_RUNNER_ACTIONS_FINALIZER
        )

    async def _add_finalizers(self, lazy: LazyCopy) -> None:
        """Add both finalizers in one merge patch, whichever is missing (no short circuit).

        Ports: EphemeralRunnerReconciler.Reconcile, the finalizer block
        """
        obj = lazy.mutate()
        add_finalizer(obj, EPHEMERAL_RUNNER_FINALIZER)
        add_finalizer(obj, EPHEMERAL_RUNNER_ACTIONS_FINALIZER)
        await self._write(lazy.obj, lazy.merge_from())
        log.info("added runner finalizers", runner=lazy.obj["metadata"]["name"])

    async def _ensure_jit_secret(self, runner: Object) -> Object | Result:
        """The JIT secret, registering the runner and creating the secret when it is missing.

        Python only as to when: upstream reads the secret on every reconcile; here it is
        read only while the runner ID is unrecorded or the pod is missing (the ledger's
        repeated secret reads), which changes no decision.

        Ports: EphemeralRunnerReconciler.Reconcile, the JIT secret block
        """
        try:
            return await self.client.get(SECRET, _key(runner))
        except NotFoundError:
            pass
        try:
            jit = await self._create_runner_jit_config(runner)
        except _RetryableError:
            return Result(requeue_after=RETRYABLE_REQUEUE)
        except _FatalError as err:
            log.warning("runner cannot register, deleting it", runner=runner["metadata"]["name"], reason=str(err))
            with contextlib.suppress(NotFoundError):
                await self._delete_runner(runner)
            return Result()
        secret = new_ephemeral_runner_jit_secret(runner, jit, options=self.build_options)
        await self.client.create(secret)
        log.info("created JIT secret", runner=runner["metadata"]["name"], runner_id=jit.runner_id)
        return secret

    async def _create_runner_jit_config(self, runner: Object) -> JitRunnerConfig:
        """Register the runner just in time; an existing registration of the same name is removed first.

        Raises:
            _RetryableError: the name was taken and is being freed.
            _FatalError: the name belongs to another scale set.

        Ports: EphemeralRunnerReconciler.createRunnerJitConfig
        """
        actions = await self.actions(runner)
        spec = runner.get("spec") or {}
        work_folder = ""
        for container in (spec.get("spec") or {}).get("containers") or []:
            if container.get("name") == EPHEMERAL_RUNNER_CONTAINER_NAME and container.get("workingDir"):
                work_folder = container["workingDir"]
        scale_set_id = int(spec.get("runnerScaleSetId") or 0)
        name = runner["metadata"]["name"]
        try:
            return await actions.generate_jit_runner_config(
                name=name, work_folder=work_folder, scale_set_id=scale_set_id
            )
        except Exception as err:
            if not is_runner_exists(err):
                raise RuntimeError(f"failed to generate JIT config for EphemeralRunner {name}") from err
        existing = await actions.get_runner_by_name(name)
        if existing is None:
            raise _RetryableError("runner exists but was not found by name")
        if existing.runner_scale_set_id != scale_set_id:
            raise _FatalError(f"runner name {name} is registered to scale set {existing.runner_scale_set_id}")
        await actions.remove_runner(existing.id)
        raise _RetryableError("removed a stale registration of the same name")

    async def _runner_identity(self, secret: Object) -> tuple[int, str] | None:
        """``(runnerId, runnerName)`` from the JIT secret; a corrupt secret is deleted (None).

        Ports: EphemeralRunnerReconciler.Reconcile, the runner ID parse
        """
        try:
            rid = int(_secret_value(secret, "runnerId"))
        except ValueError:
            log.warning("corrupt JIT secret, deleting it", secret=secret["metadata"]["name"])
            with contextlib.suppress(NotFoundError):
                await self.client.delete(secret)
            return None
        return rid, _secret_value(secret, "runnerName")

    async def _delete_after_too_many_failures(self, runner: Object) -> Result:
        """Ports: EphemeralRunnerReconciler.Reconcile, the too-many-failures branch"""
        log.info("runner failed too many times, deleting it", runner=runner["metadata"]["name"])
        with contextlib.suppress(NotFoundError):
            await self._delete_runner(runner)
        return Result()

    def _failure_backoff_remaining(self, runner: Object) -> float:
        """Seconds left before a new pod may be created after the last failure (at least 1 ms).

        Ports: EphemeralRunnerReconciler.Reconcile, the backoff block
        """
        last = last_failure(runner)
        if last is None:
            return 0.0
        failures = len(_status(runner).get("failures") or {})
        until = last + timedelta(seconds=FAILURE_BACKOFF[min(failures, MAX_FAILURES)])
        now = self.clock()
        if now >= until:
            return 0.0
        return max((until - now).total_seconds(), 0.001)

    async def _create_pod(self, runner: Object, secret: Object, identity: tuple[int, str] | None) -> Result:
        """Create the pod; publish the runner ID once it exists. Error outcomes per the spec's table.

        Ports: EphemeralRunnerReconciler.createPod and the pod-creation outcome table
        """
        spec = runner.get("spec") or {}
        env = proxy_env(spec.get("proxy"), str(spec.get("proxySecretRef") or ""))
        pod = new_ephemeral_runner_pod(runner, secret, *env, options=self.build_options)
        name = runner["metadata"]["name"]
        try:
            await self.client.create(pod)
        except AlreadyExistsError:
            return Result(requeue_after=POD_EXISTS_REQUEUE)
        except InvalidError as err:
            await self._mark_as_failed(runner, f"Failed to create the pod: {err}", REASON_INVALID_POD)
            return Result()
        except ForbiddenError as err:
            if "exceeded quota:" not in str(err):
                await self._mark_as_failed(runner, f"Failed to create the pod: {err}", REASON_INVALID_POD)
                return Result()
            created = parse_time(runner["metadata"].get("creationTimestamp"))
            if created is not None and self.clock() - created > QUOTA_RECREATE_AGE:
                with contextlib.suppress(NotFoundError):
                    await self._delete_runner(runner)
                return Result()
            return Result(requeue_after=QUOTA_REQUEUE)
        log.info("created runner pod", runner=name)
        if identity is not None:
            await self._record_runner_identity(runner, identity, created_pod=pod)
        return Result()

    async def _record_runner_identity(
        self, runner: Object, identity: tuple[int, str], *, created_pod: Object | None = None
    ) -> None:
        """Status merge patch ``runnerId``/``runnerName``, after the pod exists.

        With ``created_pod`` (the pod this reconcile just created) the same patch also
        carries what `_update_run_status_from_pod` would write next: ``phase`` Pending
        (only when the runner has no phase yet), ``ready`` false and the pod's reason and
        message; it then carries the optimistic lock, as every controller write of the
        phase does (#4646: never over a phase the listener wrote since our read). A 409 is
        the reconcile error; the retry finds the pod and records the identity alone.

        Differs: upstream (§8.2 steps 11 and 12) makes two writes, the runner ID right
        after the pod is created and Pending once the ``runner`` container reports; they
        are merged here (performance-facts §1.2 rows R2/R3, §1.5 "runnerId and Pending
        merged"), one status write and one runner watch event fewer per runner.
        Observable difference: the phase reads Pending from pod creation on instead of
        empty until the ``runner`` container reports. The set classifies both as pending,
        and a pod without container state still never moves the phase.

        Ports: EphemeralRunnerReconciler.Reconcile, the runner ID status patch
        """
        lazy = LazyCopy(runner)
        status = lazy.mutate().setdefault("status", {})
        status["runnerId"], status["runnerName"] = identity
        if created_pod is None:
            await self._write_status(runner, lazy.merge_from())
            return
        if not _status(runner).get("phase"):
            status["phase"] = PHASE_PENDING
        status.update(
            ready=False, reason=_status(created_pod).get("reason", ""), message=_status(created_pod).get("message", "")
        )
        await self._write_status(runner, lazy.merge_from(optimistic_lock=True))

    # ---- pod state ------------------------------------------------------------------

    async def _reconcile_pod_state(self, runner: Object, pod: Object) -> Result:
        """The pod-state decision table, first match wins.

        Ports: EphemeralRunnerReconciler.Reconcile, the pod state switch
        """
        cs = _runner_container_status(pod)
        terminated = ((cs or {}).get("state") or {}).get("terminated")
        exit_code = int(terminated.get("exitCode", 0)) if terminated else None
        if _status(pod).get("phase") == "Failed":
            if exit_code is None:
                return await self._delete_ephemeral_runner_or_pod(runner, pod)
            if exit_code == 0:
                return await self._succeed_and_delete(runner, pod)
            if exit_code == 7:
                await self._mark_as_outdated(runner)
                return Result()
            return await self._delete_ephemeral_runner_or_pod(runner, pod)
        for init in _status(pod).get("initContainerStatuses") or []:
            init_terminated = (init.get("state") or {}).get("terminated")
            if init_terminated and int(init_terminated.get("exitCode", 0)) != 0:
                return await self._delete_ephemeral_runner_or_pod(runner, pod)
        if cs is None:
            return Result()
        if exit_code is None:
            await self._update_run_status_from_pod(runner, pod)
            return Result()
        if exit_code == 7:
            await self._mark_as_outdated(runner)
            return Result()
        if exit_code != 0:
            return await self._delete_ephemeral_runner_or_pod(runner, pod)
        return await self._succeed_and_delete(runner, pod)

    async def _succeed_and_delete(self, runner: Object, pod: Object) -> Result:
        """Record Succeeded, then delete the runner (finalizers keep it readable).

        Ports: EphemeralRunnerReconciler.Reconcile, the exit-code-0 rows
        """
        await self._mark_as_succeeded(runner, pod)
        with contextlib.suppress(NotFoundError):
            await self._delete_runner(runner)
        return Result()

    async def _delete_ephemeral_runner_or_pod(self, runner: Object, pod: Object) -> Result:
        """A job-bearing runner whose pod died is deleted; otherwise the pod is, with a failure recorded.

        Ports: EphemeralRunnerReconciler.deleteEphemeralRunnerOrPod
        """
        if has_job(runner):
            log.info("pod of a runner with a job failed, deleting the runner", runner=runner["metadata"]["name"])
            with contextlib.suppress(NotFoundError):
                await self._delete_runner(runner)
            return Result()
        await self._delete_pod_as_failed(runner, pod)
        return Result()

    async def _delete_pod_as_failed(self, runner: Object, pod: Object) -> None:
        """Delete the pod (unless already deleting), then record the failure by pod UID.

        Ports: EphemeralRunnerReconciler.deletePodAsFailed
        """
        if not pod["metadata"].get("deletionTimestamp"):
            with contextlib.suppress(NotFoundError):
                await self._delete_pod(pod)
        lazy = LazyCopy(runner)
        status = lazy.mutate().setdefault("status", {})
        status["failures"] = {**(status.get("failures") or {}), pod["metadata"]["uid"]: _rfc3339(self.clock())}
        status["ready"] = False
        status["reason"] = _status(pod).get("reason", "")
        status["message"] = _status(pod).get("message", "")
        await self._write_status(runner, lazy.merge_from())
        log.info("runner pod failed, recorded the failure", runner=runner["metadata"]["name"])

    async def _patch_status(self, runner: Object, **fields: Any) -> None:
        """Python only: a plain diff-based status merge patch of ``fields``."""
        lazy = LazyCopy(runner)
        lazy.mutate().setdefault("status", {}).update(fields)
        await self._write_status(runner, lazy.merge_from())

    async def _mark_as_failed(self, runner: Object, message: str, reason: str) -> None:
        """Ports: EphemeralRunnerReconciler.markAsFailed"""
        await self._patch_status(runner, phase=PHASE_FAILED, reason=reason, message=message)
        self._publish_phase(runner, PHASE_FAILED)
        await self._queue_unregistration(runner)

    async def _mark_as_outdated(self, runner: Object) -> None:
        """The runner rejected its spec (exit code 7). Ports: EphemeralRunnerReconciler.markAsOutdated"""
        await self._patch_status(runner, phase=PHASE_OUTDATED, reason="Outdated", message="Runner is deprecated")
        self._publish_phase(runner, PHASE_OUTDATED)
        await self._queue_unregistration(runner)

    async def _mark_as_succeeded(self, runner: Object, pod: Object) -> None:
        """No unregistration: an ephemeral runner deregisters itself.

        Ports: EphemeralRunnerReconciler.markAsSucceeded
        """
        await self._patch_status(
            runner,
            phase=PHASE_SUCCEEDED,
            ready=False,
            reason=_status(pod).get("reason", ""),
            message=_status(pod).get("message", ""),
        )
        self._publish_phase(runner, PHASE_SUCCEEDED)

    async def _update_run_status_from_pod(self, runner: Object, pod: Object) -> None:
        """Write Pending (never Running) and Ready from the pod, with the optimistic lock.

        A 409 is raised as the reconcile error; the work queue retries with a fresh read.

        Ports: EphemeralRunnerReconciler.updateRunStatusFromPod
        """
        if _status(pod).get("phase") in ("Succeeded", "Failed"):
            return
        ready = pod_ready(pod)
        current = _status(runner)
        phase = current.get("phase") or PHASE_PENDING
        if phase == current.get("phase") and ready == bool(current.get("ready")):
            return
        lazy = LazyCopy(runner)
        status = lazy.mutate().setdefault("status", {})
        status.update(
            phase=phase, ready=ready, reason=_status(pod).get("reason", ""), message=_status(pod).get("message", "")
        )
        await self._write_status(runner, lazy.merge_from(optimistic_lock=True))
        self._publish_phase(runner, phase)

    def _publish_phase(self, runner: Object, phase: str) -> None:
        """Count ``runner`` in ``phase`` on the phase gauges ("" removes it); nothing when metrics are off.

        Ports: the EphemeralRunnerReconciler phase-metric calls (PublishMetrics guard)
        """
        if self.publish_metrics:
            self.phase_metrics.publish(runner, phase)
