"""EphemeralRunner reconciler: one JIT registration, one secret, one pod per runner.

The controller writes Pending/Ready, Succeeded, Failed and Outdated, never Running (the
listener writes that when a job starts). Registrations of runners that did not
deregister themselves are removed by the unregistration queue, never inline.

With ``publish_metrics`` on, every reconcile publishes the runner's phase to the
``gha_controller_*_ephemeral_runners`` gauges: the empty phase for a runner being
deleted, its current phase otherwise (this is how the listener's Running reaches the
gauges), and each phase the controller writes right after the write.

Ports: controllers/actions.github.com/ephemeralrunner_controller.go
Differs: a runner found gone also leaves the gauges (docs/porting-notes.md, EphemeralRunnerReconciler.Reconcile).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import EPHEMERAL_RUNNER, POD, SECRET, EphemeralRunnerPhase, PodPhase, objects
from arc_controllers.api.v1alpha1.objects import mutable_status
from arc_controllers.api.v1alpha1.objects import status as _status
from arc_controllers.controllers.actions_seam import ActionsClientFactory
from arc_controllers.controllers.completions import JobCompletions
from arc_controllers.controllers.deletions import DeletionsRequested
from arc_controllers.controllers.ephemeralrunner.registration import FatalError, JitRegistration, RetryableError
from arc_controllers.controllers.ephemeralrunner.resources import RunnerResources, RunnerWrites
from arc_controllers.controllers.metrics import RUNNER_PHASE_METRICS, RunnerPhaseMetrics
from arc_controllers.controllers.newrunners import NewRunners
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.controllers.predicates import ephemeral_runner_pod_predicate
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
    RunnerBuildOptions,
    new_ephemeral_runner_jit_secret,
    new_ephemeral_runner_pod,
    proxy_env,
)
from reconcilekit.builder import controller_managed_by
from reconcilekit.client.interfaces import Client, Object
from reconcilekit.client.interfaces import object_key_from_object as _key
from reconcilekit.controller import yield_worker
from reconcilekit.controller.options import Options as ControllerOptions
from reconcilekit.controllerutil import add_finalizer, contains_finalizer, remove_finalizer
from reconcilekit.errors import AlreadyExistsError, ConflictError, ForbiddenError, InvalidError, NotFoundError
from reconcilekit.manager import Manager
from reconcilekit.predicate import ResourceVersionChangedPredicate
from reconcilekit.reconcile import Request, Result

__all__ = ["DEFAULT_CONCURRENCY", "DEFAULT_MAX_CONCURRENT_REGISTRATIONS", "EphemeralRunnerReconciler"]

log = structlog.get_logger("EphemeralRunner")  # Go's logr name for this reconciler

DEFAULT_CONCURRENCY = constants.DEFAULT_MAX_CONCURRENT_RECONCILES_EPHEMERAL_RUNNER
"""Workers when `EphemeralRunnerReconciler.setup_with_manager` is given no options."""

DEFAULT_MAX_CONCURRENT_REGISTRATIONS = 20
"""New runners provisioned at once without holding a worker (`yield_worker`).

Provisioning is round trips only: the JIT secret read, the JIT registration (Actions), the
secret and pod creates and the status patch. With the chart's 2 workers and 100 ms of Actions
latency, 20 in flight outpace the client's per-resource buckets (QPS 20), which then set the
pace, while bounding the concurrent requests to the Actions service and the API server.
"""

_MAX_FAILURES = constants.EPHEMERAL_RUNNER_MAX_FAILURES
_FAILURE_BACKOFF = constants.EPHEMERAL_RUNNER_FAILURE_BACKOFF
_QUOTA_RECREATE_AGE = timedelta(seconds=constants.EPHEMERAL_RUNNER_RESOURCE_QUOTA_RECREATE_AGE)

_FINALIZER = constants.EPHEMERAL_RUNNER_FINALIZER_NAME
_ACTIONS_FINALIZER = constants.EPHEMERAL_RUNNER_ACTIONS_FINALIZER_NAME


def _utcnow() -> datetime:
    """Python only: the default clock (aware UTC)."""
    return datetime.now(UTC)


def _rfc3339(t: datetime) -> str:
    """Python only: a timestamp as the API server writes it (second precision, Z)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _runner_container_status(pod: Object) -> dict[str, Any] | None:
    """Python only: the status of the container named ``runner``, or None."""
    for cs in _status(pod).get("containerStatuses") or []:
        if cs.get("name") == constants.EPHEMERAL_RUNNER_CONTAINER_NAME:
            found: dict[str, Any] = cs
            return found
    return None


def _registration_removed(runner: Object) -> bool:
    """The set removed this runner's registration and is deleting it: no finalizer may come back.

    The set drops the registration finalizer (with this marker) and then deletes the runner;
    a reconcile working from a copy between the two would re-add the finalizer, and the
    runner would wait on it once deleted.

    Beyond: no ARC issue; issue 19's finalizer race (finalizers re-added 2 ms before the set's DELETE).
    """
    return objects.annotations(runner).get(constants.ANNOTATION_KEY_REGISTRATION_REMOVED) == "true"


@dataclass(kw_only=True)
class EphemeralRunnerReconciler:
    """Ports: EphemeralRunnerReconciler

    The runner's own writes, its resources and its JIT registration are three helpers built
    from these fields (`writes`, `resources`, `registration`); `reconcile` decides, they act.
    """

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
    failed_recycle_age: float = constants.EPHEMERAL_RUNNER_FAILED_RECYCLE_AGE
    """Seconds from its creation after which a Failed runner is deleted for the set to replace it (> 0).

    Beyond: ARC #3014: the README's Failed-runner policy; the manager's ``--failed-runner-recycle-age``.
    """
    deletions: DeletionsRequested = field(default_factory=DeletionsRequested)
    """Python only: runners whose DELETE this process sent; shared with the EphemeralRunnerSet reconciler."""
    completions: JobCompletions = field(default_factory=JobCompletions)
    """Python only: runners that completed a job, by set; shared with the EphemeralRunnerSet reconciler."""
    new_runners: NewRunners = field(default_factory=NewRunners)
    """Python only: runners the EphemeralRunnerSet reconciler created in this process and nobody provisioned yet.

    Shared with that reconciler; `_ensure_jit_secret` skips the JIT-secret read once for each.
    """
    max_concurrent_registrations: int = DEFAULT_MAX_CONCURRENT_REGISTRATIONS
    """Python only: how many new runners may be provisioned (registered, given a secret and a pod) without a worker.

    `controller_options` gives it to the controller as ``max_yielded_reconciles`` unless the
    options set that; 0 registers while holding the worker, as upstream does.
    """

    writes: RunnerWrites = field(init=False, repr=False)
    resources: RunnerResources = field(init=False, repr=False)
    registration: JitRegistration = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Python only: build the helpers from the fields.

        Raises:
            ValueError: ``failed_recycle_age`` is not a finite number of seconds above 0.
        """
        if not 0 < self.failed_recycle_age < float("inf"):
            raise ValueError(f"failed_recycle_age must be seconds > 0, got {self.failed_recycle_age!r}")
        self.writes = RunnerWrites(client=self.client, deletions=self.deletions)
        self.resources = RunnerResources(
            client=self.client,
            actions=self.actions,
            terminated_pod_grace_period_seconds=self.terminated_pod_grace_period_seconds,
        )
        self.registration = JitRegistration(client=self.client, actions=self.actions)

    def setup_with_manager(self, mgr: Manager, /, *, options: ControllerOptions | None = None) -> None:
        """``For(EphemeralRunner).Owns(Pod)`` with the pod projection.

        Creates the unregistration queue and adds it to ``mgr`` when the reconciler has none.
        The controller runs with `controller_options`.

        Ports: EphemeralRunnerReconciler.SetupWithManager
        """
        if self.unregistration_queue is None:
            self.unregistration_queue = RunnerUnregistrationQueue(actions=self.actions)
            mgr.add(self.unregistration_queue)
        (
            controller_managed_by(mgr)
            .for_(EPHEMERAL_RUNNER)
            .owns(POD, predicates=[ephemeral_runner_pod_predicate()])
            .with_event_filter(ResourceVersionChangedPredicate())
            .with_options(self.controller_options(options))
            .named("ephemeralrunner")
            .complete(self)
        )

    def controller_options(self, options: ControllerOptions | None = None, /) -> ControllerOptions:
        """``options`` (default: `DEFAULT_CONCURRENCY` workers) with room for the yielded registrations.

        Options that leave ``max_yielded_reconciles`` at 0 get ``max_concurrent_registrations``.

        Python only: see `_ensure_jit_secret`.
        """
        options = options or ControllerOptions(max_concurrent_reconciles=DEFAULT_CONCURRENCY)
        if options.max_yielded_reconciles == 0:
            options = dataclasses.replace(options, max_yielded_reconciles=self.max_concurrent_registrations)
        return options

    async def reconcile(self, request: Request, /) -> Result:
        """Ports: EphemeralRunnerReconciler.Reconcile

        The guards are Go's, in Go's order; each branch is one method below.
        """
        try:
            runner = await self.client.get(EPHEMERAL_RUNNER, request.key)
        except NotFoundError:
            self._publish_phase({"metadata": {"namespace": request.namespace, "name": request.name}}, "")
            return Result()
        if (stale := self.writes.superseded.stale_for(runner)) > 0:
            # Beyond: no ARC issue; issue 19's finalizer race: the newer version may never come.
            log.debug("cache shows a version this controller replaced, waiting for the newer one")
            return Result(requeue_after=stale)
        lazy = LazyCopy(runner)

        if objects.is_deleting(runner):
            self._publish_phase(runner, "")
            return await self._finalize(lazy)
        self._publish_phase(runner, _status(runner).get("phase") or "")
        if is_done(runner):
            return await self._release_finished(runner)
        if not self._has_both_finalizers(runner) and not _registration_removed(runner):
            await self._add_finalizers(lazy)

        # Differs: the pod is read before the JIT secret (docs/porting-notes.md, EphemeralRunnerReconciler.Reconcile).
        pod = await self.resources.get_pod(runner)
        if pod is None and has_job(runner):
            return await self._delete_after_pod_lost_mid_job(runner)
        secret: Object | None = None
        if runner_id(runner) == 0 or pod is None:
            async with yield_worker():  # round trips only: the API server's and the Actions service's
                got = await self._ensure_jit_secret(runner)
            if isinstance(got, Result):
                return got
            secret = got
        identity: tuple[int, str] | None = None
        if runner_id(runner) == 0 and secret is not None:
            parsed = await self.registration.runner_identity(secret)
            if parsed is None:
                return Result(requeue_after=constants.EPHEMERAL_RUNNER_CORRUPTED_JIT_SECRET_REQUEUE)
            identity = parsed
        if len(_status(runner).get("failures") or {}) > _MAX_FAILURES:
            return await self._delete_after_too_many_failures(runner)
        if (wait := self._failure_backoff_remaining(runner)) > 0:
            return Result(requeue_after=wait)
        if pod is None:
            assert secret is not None
            async with yield_worker():  # the pod's create and the runner's status patch
                return await self._create_pod(runner, secret, identity)
        if identity is not None:
            await self._record_runner_identity(runner, identity)
        return await self._reconcile_pod_state(runner, pod)

    # ---- deletion and terminal branches -------------------------------------------------

    async def _finalize(self, lazy: LazyCopy, *, resources_released: bool = False) -> Result:
        """Release the registration (queued), delete pod and secret, then drop the finalizers.

        The registration ID is resolved before the JIT secret goes, and the registration
        finalizer is patched away before the push, so a retry never unregisters twice.
        A Succeeded runner deregistered itself: nothing is queued and its finalizer
        removal rides on the final patch.

        With ``resources_released`` the caller already deleted pod and JIT secret.

        Ports: EphemeralRunnerReconciler.Reconcile, the deletion branch
        """
        runner = lazy.obj
        if not contains_finalizer(runner, _FINALIZER):
            return Result()
        if contains_finalizer(runner, _ACTIONS_FINALIZER):
            rid = await self._runner_id_to_unregister(runner)
            remove_finalizer(lazy.mutate(), _ACTIONS_FINALIZER)
            if rid != 0:
                await self.writes.patch(runner, lazy.merge_from())
                self._push(runner, rid)
        if not resources_released:
            await self.resources.cleanup_resources(runner)
        if has_container_hook_configured(runner):
            await self.resources.cleanup_container_hook_resources(runner)
        remove_finalizer(lazy.mutate(), _FINALIZER)
        with contextlib.suppress(NotFoundError):
            await self.writes.patch(runner, lazy.merge_from())
        self.resources.secrets_deleted.discard(objects.uid(runner))
        log.info("removed runner finalizers", runner=objects.name(runner))
        return Result()

    async def _release_finished(self, runner: Object) -> Result:
        """A done runner: queue its unregistration (unless it deregistered itself), free pod and secret.

        The set deletes the runner object itself.

        Ports: EphemeralRunnerReconciler.Reconcile, the IsDone branch
        """
        if _status(runner).get("phase") != EphemeralRunnerPhase.SUCCEEDED:
            await self._queue_unregistration(runner)
        await self.resources.cleanup_resources(runner)
        if _status(runner).get("phase") == EphemeralRunnerPhase.FAILED:
            return await self._recycle_failed(runner)
        return Result()

    async def _recycle_failed(self, runner: Object) -> Result:
        """A Failed runner is deleted once `failed_recycle_age` seconds old (from creation); until then it waits.

        The set counts a Failed runner against its replicas and never deletes one while
        scaling, so a runner whose pod admission refuses (PodSecurity, a webhook) held its
        slot for good. Deleting it lets the set create a fresh runner: one attempt per slot
        per recycle age, the age being the backoff, while the Failed runner stays visible
        (reason, message) until then.

        Beyond: ARC #3014 (#3685, #4258): Failed runners refused at admission held the set's capacity forever.
        """
        created = parse_time(objects.meta(runner).get("creationTimestamp"))
        age = self.clock() - created if created is not None else timedelta(0)
        recycle_age = timedelta(seconds=self.failed_recycle_age)
        if age < recycle_age:
            return Result(requeue_after=max((recycle_age - age).total_seconds(), 0.001))
        log.info("failed runner reached its recycle age, deleting it", runner=objects.name(runner))
        with contextlib.suppress(NotFoundError):
            await self.writes.delete_runner(runner)
        return Result()

    async def _runner_id_to_unregister(self, runner: Object) -> int:
        """0 for a Succeeded runner (it deregistered itself), else the registration to remove.

        Ports: the phase check of EphemeralRunnerReconciler.queueUnregistration
        """
        if _status(runner).get("phase") == EphemeralRunnerPhase.SUCCEEDED:
            return 0
        return await self.resources.registered_runner_id(runner)

    async def _queue_unregistration(self, runner: Object) -> None:
        """Resolve the ID, drop the registration finalizer, and only then queue the removal.

        Ports: EphemeralRunnerReconciler.queueUnregistration
        """
        if not contains_finalizer(runner, _ACTIONS_FINALIZER):
            return
        rid = await self._runner_id_to_unregister(runner)
        lazy = LazyCopy(runner)
        remove_finalizer(lazy.mutate(), _ACTIONS_FINALIZER)
        with contextlib.suppress(NotFoundError):
            await self.writes.patch(runner, lazy.merge_from())
        if rid != 0:
            self._push(runner, rid)

    def _push(self, runner: Object, rid: int) -> None:
        """Python only: push to the unregistration queue; a None queue drops the push (as upstream's nil queue)."""
        if self.unregistration_queue is not None:
            self.unregistration_queue.push(runner, rid)

    # ---- provisioning ---------------------------------------------------------------

    @staticmethod
    def _has_both_finalizers(runner: Object) -> bool:
        """Python only: both runner finalizers are present."""
        return contains_finalizer(runner, _FINALIZER) and contains_finalizer(runner, _ACTIONS_FINALIZER)

    async def _add_finalizers(self, lazy: LazyCopy) -> None:
        """Add both finalizers in one merge patch, whichever is missing (no short circuit).

        Ports: EphemeralRunnerReconciler.Reconcile, the finalizer block
        """
        obj = lazy.mutate()
        add_finalizer(obj, _FINALIZER)
        add_finalizer(obj, _ACTIONS_FINALIZER)
        await self.writes.patch(lazy.obj, lazy.merge_from())
        log.info("added runner finalizers", runner=objects.name(lazy.obj))

    async def _ensure_jit_secret(self, runner: Object) -> Object | Result:
        """The JIT secret, registering the runner and creating the secret when it is missing.

        Python only as to when: upstream reads the secret on every reconcile; here it is
        read only while the runner ID is unrecorded or the pod is missing (the ledger's
        repeated secret reads), which changes no decision.

        `reconcile` calls it inside `yield_worker` (and `_create_pod` too): its round trips
        (this read, the registration, one Actions round trip or more on a name conflict, the
        create) leave the worker to other runners, up to ``max_concurrent_registrations`` of
        them at once. The runner's request stays in flight, so no second reconcile of it can
        register it again. A runner deleted meanwhile gets no pod (see `_cached_copy`).

        A runner the set created in this process is not read the first time (`NewRunners`:
        its secret cannot exist yet); should a secret answer the create with 409 after all,
        the registration just made is queued for removal and the next attempt reads it.

        Ports: EphemeralRunnerReconciler.Reconcile, the JIT secret block
        Beyond: no ARC issue; issue 20: a worker sat idle through every registration (2 at a time in the chart).
        Beyond: no ARC issue; issue 20: reading a secret that cannot exist yet held bursts on the secrets bucket.
        """
        if not await self.new_runners.take(objects.uid(runner)):
            try:
                return await self.client.get(SECRET, _key(runner))
            except NotFoundError:
                pass
        try:
            jit = await self.registration.create_runner_jit_config(runner)
        except RetryableError:
            return Result(requeue_after=constants.EPHEMERAL_RUNNER_RETRYABLE_JIT_ERROR_REQUEUE)
        except FatalError as err:
            log.warning("runner cannot register, deleting it", runner=objects.name(runner), reason=str(err))
            with contextlib.suppress(NotFoundError):
                await self.writes.delete_runner(runner)
            return Result()
        current = await self._cached_copy(runner)
        if current is None:
            log.info("runner was deleted while it registered, removing the registration", runner=objects.name(runner))
            self._push(runner, jit.runner_id)
            return Result()
        secret = new_ephemeral_runner_jit_secret(runner, jit, options=self.build_options)
        try:
            await self.client.create(secret)
        except AlreadyExistsError:
            log.info("runner's JIT secret already exists, removing the new registration", runner=objects.name(runner))
            self._push(runner, jit.runner_id)
            return Result(requeue_after=constants.EPHEMERAL_RUNNER_RETRYABLE_JIT_ERROR_REQUEUE)
        log.info("created JIT secret", runner=objects.name(runner), runner_id=jit.runner_id)
        if objects.is_deleting(current):
            log.info("runner is being deleted, not creating its pod", runner=objects.name(runner))
            return Result()
        return secret

    async def _cached_copy(self, runner: Object) -> Object | None:
        """The cache's copy of ``runner`` after its registration; None once it is gone (or replaced by name).

        The registration ran without a worker (`yield_worker`), so the runner may have been
        deleted meanwhile. One kept by its finalizers gets its JIT secret (the finalizer
        branch, which runs after this reconcile, reads the registration from it) but no pod.
        One already gone (its finalizers removed by hand) would strand the registration: the
        caller queues its removal instead.

        Python only: upstream registers while holding its worker (the same window, shorter).
        """
        try:
            current = await self.client.get(EPHEMERAL_RUNNER, _key(runner))
        except NotFoundError:
            return None
        return current if objects.uid(current) == objects.uid(runner) else None

    async def _delete_after_too_many_failures(self, runner: Object) -> Result:
        """Ports: EphemeralRunnerReconciler.Reconcile, the too-many-failures branch"""
        log.info("runner failed too many times, deleting it", runner=objects.name(runner))
        with contextlib.suppress(NotFoundError):
            await self.writes.delete_runner(runner)
        return Result()

    async def _delete_after_pod_lost_mid_job(self, runner: Object) -> Result:
        """The pod of a runner that took a job is gone: delete the runner, never relaunch it.

        The JIT config is spent once its job started; a pod built from it again can never
        run a job and would hold the set's slot for good. Deleting the runner hands its
        registration to the finalizer (one ``RemoveRunner``, 404 is fine) and lets the set
        create a fresh runner. Only a runner that never took a job is relaunched from its
        JIT config.

        Beyond: ARC #4588: a pod lost mid-job was recreated from the consumed JIT config, stranding its slot.
        """
        log.info("pod of a runner with a job is gone, deleting the runner", runner=objects.name(runner))
        with contextlib.suppress(NotFoundError):
            await self.writes.delete_runner(runner)
        return Result()

    def _failure_backoff_remaining(self, runner: Object) -> float:
        """Seconds left before a new pod may be created after the last failure (at least 1 ms).

        Ports: EphemeralRunnerReconciler.Reconcile, the backoff block
        """
        last = last_failure(runner)
        if last is None:
            return 0.0
        failures = len(_status(runner).get("failures") or {})
        until = last + timedelta(seconds=_FAILURE_BACKOFF[min(failures, _MAX_FAILURES)])
        now = self.clock()
        if now >= until:
            return 0.0
        return max((until - now).total_seconds(), 0.001)

    async def _create_pod(self, runner: Object, secret: Object, identity: tuple[int, str] | None) -> Result:
        """Create the pod; publish the runner ID once it exists. Error outcomes per the spec's table.

        Ports: EphemeralRunnerReconciler.createPod and the pod-creation outcome table
        """
        spec = objects.spec(runner)
        env = proxy_env(spec.get("proxy"), str(spec.get("proxySecretRef") or ""))
        pod = new_ephemeral_runner_pod(runner, secret, *env, options=self.build_options)
        name = objects.name(runner)
        try:
            await self.client.create(pod)
        except AlreadyExistsError:
            return Result(requeue_after=constants.EPHEMERAL_RUNNER_POD_ALREADY_EXISTS_REQUEUE)
        except InvalidError as err:
            await self._mark_as_failed(runner, f"Failed to create the pod: {err}", constants.REASON_INVALID_POD_FAILURE)
            return Result()
        except ForbiddenError as err:
            if "exceeded quota:" not in str(err):
                await self._mark_as_failed(
                    runner, f"Failed to create the pod: {err}", constants.REASON_INVALID_POD_FAILURE
                )
                return Result()
            created = parse_time(objects.meta(runner).get("creationTimestamp"))
            if created is not None and self.clock() - created > _QUOTA_RECREATE_AGE:
                with contextlib.suppress(NotFoundError):
                    await self.writes.delete_runner(runner)
                return Result()
            return Result(requeue_after=constants.EPHEMERAL_RUNNER_RESOURCE_QUOTA_REQUEUE)
        log.info("created runner pod", runner=name)
        if identity is not None:
            status_as_read = dict(_status(runner))  # the merged write changes ``runner``'s status in place
            try:
                await self._record_runner_identity(runner, identity, created_pod=pod)
            except ConflictError:
                # The listener wrote Running while the merged write waited on the client's bucket:
                # the identity alone now, as the retry would (without its secret read and its backoff).
                await self._record_runner_identity({**runner, "status": status_as_read}, identity)
        return Result()

    async def _record_runner_identity(
        self, runner: Object, identity: tuple[int, str], *, created_pod: Object | None = None
    ) -> None:
        """Status merge patch ``runnerId``/``runnerName``, after the pod exists.

        With ``created_pod`` (the pod this reconcile just created) the same patch also
        carries what `_update_run_status_from_pod` would write next: ``phase`` Pending
        (only when the runner has no phase yet), ``ready`` false and the pod's reason and
        message; it then carries the optimistic lock, as every controller write of the
        phase does (#4646: never over a phase the listener wrote since our read). On a 409
        `_create_pod` records the identity alone at once (a plain patch of the controller's
        own two fields), which is what the retry did after a secret read and a backoff.

        Ports: EphemeralRunnerReconciler.Reconcile, the runner ID status patch
        Differs: the runner ID and Pending go in one write, not two (docs/porting-notes.md).
        """
        lazy = LazyCopy(runner)
        status = mutable_status(lazy.mutate())
        status["runnerId"], status["runnerName"] = identity
        if created_pod is None:
            await self.writes.patch_status(runner, lazy.merge_from())
            return
        if not _status(runner).get("phase"):
            status["phase"] = EphemeralRunnerPhase.PENDING
        status.update(
            ready=False, reason=_status(created_pod).get("reason", ""), message=_status(created_pod).get("message", "")
        )
        await self.writes.patch_status(runner, lazy.merge_from(optimistic_lock=True))

    # ---- pod state ------------------------------------------------------------------

    async def _reconcile_pod_state(self, runner: Object, pod: Object) -> Result:
        """The pod-state decision table, first match wins.

        Ports: EphemeralRunnerReconciler.Reconcile, the pod state switch
        """
        cs = _runner_container_status(pod)
        terminated = ((cs or {}).get("state") or {}).get("terminated")
        exit_code = int(terminated.get("exitCode", 0)) if terminated else None
        if _status(pod).get("phase") == PodPhase.FAILED:
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
        """Record Succeeded, delete the runner, and go on into the finalizer branch with the DELETE's answer.

        The answer is the runner with its deletionTimestamp (both finalizers hold it), the
        very object the deletion event's reconcile would read: finalizing it now saves
        that reconcile's wait in the queue (issue 20's drain) and no request. Without an
        answer (a client that does not give it) the deletion event's reconcile finalizes.
        The pod and JIT-secret DELETEs go out alongside the runner's DELETE (the done
        branch frees them before deletion too), so the finalizer branch only drops the
        finalizers. The completion is recorded first, for the set's count (`JobCompletions`).

        Ports: EphemeralRunnerReconciler.Reconcile, the exit-code-0 rows
        Differs: the finalizer branch runs in the same reconcile as the DELETE (docs/porting-notes.md).
        """
        self.completions.runner_completed(runner)
        # The DELETE counts as requested from before the Succeeded patch: the set can see
        # that patch (its watch event) before this coroutine resumes to send the DELETE.
        self.deletions.requested(objects.uid(runner))
        try:
            await self._mark_as_succeeded(runner, pod)
        except BaseException:
            self.deletions.failed(objects.uid(runner))
            raise
        gone = False
        try:
            async with asyncio.TaskGroup() as group:
                deleting = group.create_task(self.writes.delete_runner(runner), name="delete-runner")
                group.create_task(self.resources.cleanup_resources(runner), name="delete-pod-and-secret")
        except* NotFoundError:
            gone = True
        if gone:
            return Result()
        deleted = deleting.result()
        if deleted is None or not objects.is_deleting(deleted):
            return Result()
        self._publish_phase(deleted, "")
        return await self._finalize(LazyCopy(deleted), resources_released=True)

    async def _delete_ephemeral_runner_or_pod(self, runner: Object, pod: Object) -> Result:
        """A job-bearing runner whose pod died is deleted; otherwise the pod is, with a failure recorded.

        Ports: EphemeralRunnerReconciler.deleteEphemeralRunnerOrPod
        """
        if has_job(runner):
            log.info("pod of a runner with a job failed, deleting the runner", runner=objects.name(runner))
            with contextlib.suppress(NotFoundError):
                await self.writes.delete_runner(runner)
            return Result()
        await self._delete_pod_as_failed(runner, pod)
        return Result()

    async def _delete_pod_as_failed(self, runner: Object, pod: Object) -> None:
        """Delete the pod (unless already deleting), then record the failure by pod UID.

        Ports: EphemeralRunnerReconciler.deletePodAsFailed
        """
        if not objects.is_deleting(pod):
            with contextlib.suppress(NotFoundError):
                await self.resources.delete_pod(pod)
        lazy = LazyCopy(runner)
        status = mutable_status(lazy.mutate())
        status["failures"] = {**(status.get("failures") or {}), objects.uid(pod): _rfc3339(self.clock())}
        status["ready"] = False
        status["reason"] = _status(pod).get("reason", "")
        status["message"] = _status(pod).get("message", "")
        await self.writes.patch_status(runner, lazy.merge_from())
        log.info("runner pod failed, recorded the failure", runner=objects.name(runner))

    async def _patch_status(self, runner: Object, **fields: Any) -> None:
        """Python only: a plain diff-based status merge patch of ``fields``."""
        lazy = LazyCopy(runner)
        mutable_status(lazy.mutate()).update(fields)
        await self.writes.patch_status(runner, lazy.merge_from())

    async def _mark_as_failed(self, runner: Object, message: str, reason: str) -> None:
        """Ports: EphemeralRunnerReconciler.markAsFailed"""
        await self._patch_status(runner, phase=EphemeralRunnerPhase.FAILED, reason=reason, message=message)
        self._publish_phase(runner, EphemeralRunnerPhase.FAILED)
        await self._queue_unregistration(runner)

    async def _mark_as_outdated(self, runner: Object) -> None:
        """The runner rejected its spec (exit code 7). Ports: EphemeralRunnerReconciler.markAsOutdated"""
        await self._patch_status(
            runner, phase=EphemeralRunnerPhase.OUTDATED, reason="Outdated", message="Runner is deprecated"
        )
        self._publish_phase(runner, EphemeralRunnerPhase.OUTDATED)
        await self._queue_unregistration(runner)

    async def _mark_as_succeeded(self, runner: Object, pod: Object) -> None:
        """No unregistration: an ephemeral runner deregisters itself.

        Ports: EphemeralRunnerReconciler.markAsSucceeded
        """
        await self._patch_status(
            runner,
            phase=EphemeralRunnerPhase.SUCCEEDED,
            ready=False,
            reason=_status(pod).get("reason", ""),
            message=_status(pod).get("message", ""),
        )
        self._publish_phase(runner, EphemeralRunnerPhase.SUCCEEDED)

    async def _update_run_status_from_pod(self, runner: Object, pod: Object) -> None:
        """Write Pending (never Running) and Ready from the pod, with the optimistic lock.

        A 409 is raised as the reconcile error; the work queue retries with a fresh read.

        Ports: EphemeralRunnerReconciler.updateRunStatusFromPod
        """
        if _status(pod).get("phase") in (PodPhase.SUCCEEDED, PodPhase.FAILED):
            return
        ready = pod_ready(pod)
        current = _status(runner)
        phase = current.get("phase") or EphemeralRunnerPhase.PENDING
        if phase == current.get("phase") and ready == bool(current.get("ready")):
            return
        lazy = LazyCopy(runner)
        mutable_status(lazy.mutate()).update(
            phase=phase, ready=ready, reason=_status(pod).get("reason", ""), message=_status(pod).get("message", "")
        )
        await self.writes.patch_status(runner, lazy.merge_from(optimistic_lock=True))
        self._publish_phase(runner, phase)

    def _publish_phase(self, runner: Object, phase: str) -> None:
        """Count ``runner`` in ``phase`` on the phase gauges ("" removes it); nothing when metrics are off.

        Ports: the EphemeralRunnerReconciler phase-metric calls (PublishMetrics guard)
        """
        if self.publish_metrics:
            self.phase_metrics.publish(runner, phase)
