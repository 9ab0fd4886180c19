"""EphemeralRunnerSet reconciler: keeps the set's EphemeralRunners at ``spec.replicas``.

It writes the set's finalizer and status only, never its spec: the listener patches the
spec many times a minute. Status it wrote itself is read back through the uncached
reader, because the informer cache may not have seen the write yet.

Ports: controllers/actions.github.com/ephemeralrunnerset_controller.go
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import structlog

from arc_controllers._runner_constants import (
    EPHEMERAL_RUNNER,
    EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
    EPHEMERAL_RUNNER_SET,
    EPHEMERAL_RUNNER_SET_FINALIZER,
    PHASE_OUTDATED,
    PHASE_RUNNING,
    SECRET,
)
from arc_controllers.controllers.actions_seam import (
    ActionsClientFactory,
    RunnerActionsClient,
    is_job_still_running,
    is_runner_not_found,
)
from arc_controllers.controllers.drift import semantic_equal
from arc_controllers.controllers.patching import (
    LazyCopy,
    add_finalizer,
    contains_finalizer,
    remove_finalizer,
    retry_on_conflict,
)
from arc_controllers.controllers.runnerstates import (
    EphemeralRunnersByState,
    has_job,
    is_controlled_by,
    is_done,
    new_ephemeral_runners_by_states,
    runner_id,
)
from arc_controllers.resourcebuilder.runner import (
    RunnerBuildOptions,
    new_ephemeral_runner,
    new_ephemeral_runner_set_proxy_secret,
    proxy_ephemeral_runner_set_secret_name,
    proxy_secret_data,
)
from reconcilekit.client.interfaces import Client, Object, ObjectKey, Reader
from reconcilekit.errors import NotFoundError
from reconcilekit.reconcile import Request, Result

__all__ = ["RESOURCE_OWNER_KEY", "RUNNER_BATCH_CONCURRENCY", "EphemeralRunnerSetReconciler"]

log = structlog.get_logger(__name__)

RESOURCE_OWNER_KEY = ".metadata.controller"
"""The client-side field index naming an object's controller owner. Ports: resourceOwnerKey"""

CREATION_EXPECTATION_TTL = 60.0
"""Python only: see `EphemeralRunnerSetReconciler._observe_created`."""

RUNNER_BATCH_CONCURRENCY = 8
"""How many runners of one set are created or deleted at once.

One reconcile creates every runner a burst asks for; sequential round trips make the
last runner wait for all before it. The bound keeps a burst from flooding the client's
rate limiter in front of every other controller. Ports: runnerBatchConcurrency
"""


def _status(obj: Object) -> dict[str, Any]:
    status: dict[str, Any] = obj.get("status") or {}
    return status


def _spec(obj: Object) -> dict[str, Any]:
    spec: dict[str, Any] = obj.get("spec") or {}
    return spec


class _CombinedError(Exception):
    """Python only: several independent failures of one batch, all reported (multierr.Combine)."""

    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


def _raise_combined(errors: list[BaseException]) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise _CombinedError(errors)


async def _bounded(calls: Iterable[Callable[[], Awaitable[None]]], limit: int) -> list[BaseException]:
    """Python only: run ``calls`` with at most ``limit`` in flight; collect every Exception (errgroup + multierr)."""
    gate = asyncio.Semaphore(limit)
    errors: list[BaseException] = []

    async def one(call: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            try:
                await call()
            except Exception as err:  # collected, never short-circuits the batch
                errors.append(err)

    async with asyncio.TaskGroup() as group:
        for n, call in enumerate(calls):
            group.create_task(one(call), name=f"runner-batch-{n}")
    return errors


@dataclass(kw_only=True)
class EphemeralRunnerSetReconciler:
    """Ports: EphemeralRunnerSetReconciler"""

    client: Client
    """Reads from the informer cache, writes to the API server."""

    api_reader: Reader | None
    """Reads from the API server: for status this controller wrote itself. The scale-up
    suppression check refuses to run without it."""

    actions: ActionsClientFactory
    """Returns the Actions client for the set. Ports: ResourceBuilder.GetActionsService"""

    build_options: RunnerBuildOptions = field(default_factory=RunnerBuildOptions)

    batch_concurrency: int = RUNNER_BATCH_CONCURRENCY

    creation_expectation_ttl: float = CREATION_EXPECTATION_TTL
    """Seconds a created runner the cache has not shown yet still counts as pending."""

    _created: dict[ObjectKey, dict[str, float]] = field(default_factory=dict, init=False, repr=False)

    async def reconcile(self, request: Request, /) -> Result:
        """Ports: EphemeralRunnerSetReconciler.Reconcile

        The guards are Go's, in Go's order; each branch is one method below.
        """
        try:
            runner_set = await self.client.get(EPHEMERAL_RUNNER_SET, request.key)
        except NotFoundError:
            return Result()
        lazy = LazyCopy(runner_set)
        spec, status = _spec(runner_set), _status(runner_set)

        if runner_set["metadata"].get("deletionTimestamp"):
            return await self._finalize(lazy)
        if not contains_finalizer(runner_set, EPHEMERAL_RUNNER_SET_FINALIZER):
            return await self._add_finalizer(lazy)
        if int(spec.get("actionableRevision") or 0) > int(status.get("appliedActionableRevision") or 0):
            return await self._apply_actionable_revision(runner_set)
        if status.get("phase") == PHASE_OUTDATED:
            return await self._drain_while_outdated(runner_set)

        await self._reconcile_proxy_secret(runner_set)
        state = await self._list_runners(runner_set)
        if state.stale_outdated:
            return await self._replace_stale_outdated(runner_set, state)
        if state.outdated:
            return await self._release_rejected_spec(runner_set, state)
        return await self._scale(runner_set, state)

    # ---- branches of Reconcile, in order ------------------------------------------------

    async def _finalize(self, lazy: LazyCopy) -> Result:
        """Runners, then the proxy secret, then the finalizer.

        Ports: EphemeralRunnerSetReconciler.Reconcile, the deletion branch
        """
        runner_set = lazy.obj
        if not contains_finalizer(runner_set, EPHEMERAL_RUNNER_SET_FINALIZER):
            return Result()
        done, wait = await self._clean_up_ephemeral_runners(runner_set)
        if not done:
            log.info("waiting for runners to be deleted")
            return Result(requeue_after=wait)
        if not await self._clean_up_ephemeral_runner_set_proxy_secret(runner_set):
            return Result(requeue_after=1.0)
        if remove_finalizer(lazy.mutate(), EPHEMERAL_RUNNER_SET_FINALIZER):
            await self.client.patch(runner_set, lazy.merge_from())
        log.info("removed finalizer after cleanup")
        return Result()

    async def _add_finalizer(self, lazy: LazyCopy) -> Result:
        """Ports: EphemeralRunnerSetReconciler.Reconcile, the "add finalizer" branch"""
        add_finalizer(lazy.mutate(), EPHEMERAL_RUNNER_SET_FINALIZER)
        await self.client.patch(lazy.obj, lazy.merge_from())
        log.info("added finalizer")
        return Result()

    async def _apply_actionable_revision(self, runner_set: Object) -> Result:
        """Delete idle and pending runners, then record the revision as applied.

        The applied revision advances only after the cleanup succeeded: a crash (or an
        error) in the middle leaves it behind the spec, so the next reconcile redoes the
        cleanup instead of stranding runners on a spec nobody revisits.

        Ports: EphemeralRunnerSetReconciler.Reconcile, the actionable-revision branch
        """
        target = int(_spec(runner_set).get("actionableRevision") or 0)
        log.info("runner spec revision changed, deleting idle and pending runners", target=target)
        await self._clean_up_ephemeral_runners(runner_set)
        await self._reconcile_proxy_secret(runner_set)
        await self._patch_applied_actionable_revision_status(object_key(runner_set), target)
        log.info("applied actionable revision", applied=target)
        return Result()

    async def _drain_while_outdated(self, runner_set: Object) -> Result:
        """While Outdated, never scale: only release what is not busy.

        Ports: EphemeralRunnerSetReconciler.Reconcile, the Outdated-phase branch
        """
        _, wait = await self._clean_up_ephemeral_runners(runner_set)
        return Result(requeue_after=wait)

    async def _list_runners(self, runner_set: Object) -> EphemeralRunnersByState:
        """The set's runners from the cache, judged against the applied revision.

        Ports: EphemeralRunnerSetReconciler.Reconcile, the runner list
        """
        runners = await self.client.list(
            EPHEMERAL_RUNNER,
            namespace=runner_set["metadata"]["namespace"],
            fields={RESOURCE_OWNER_KEY: runner_set["metadata"]["name"]},
        )
        applied = int(_status(runner_set).get("appliedActionableRevision") or 0)
        state = new_ephemeral_runners_by_states(runners.items, applied)
        state.unobserved = self._observe_created(object_key(runner_set), runners.items)
        log.debug(
            "ephemeral runner counts",
            pending=len(state.pending),
            running=len(state.running),
            finished=len(state.finished),
            failed=len(state.failed),
            outdated=len(state.outdated),
            stale_outdated=len(state.stale_outdated),
            deleting=len(state.deleting),
        )
        return state

    def _observe_created(self, key: ObjectKey, listed: list[Object]) -> int:
        """How many runners this process created for the set that the cached list does not show yet.

        The informer cache may lag the creates of the previous reconcile; counting only
        what it shows would create those runners a second time (the listener's patch ID
        guards against that only for patch IDs other than 0). A runner stops counting
        once listed, or after `creation_expectation_ttl` seconds.

        Python only: controller-runtime's ReplicaSet-style expectations, which ARC lacks.
        """
        pending = self._created.get(key)
        if not pending:
            return 0
        seen = {r["metadata"]["name"] for r in listed}
        now = time.monotonic()
        for name in [n for n, at in pending.items() if n in seen or now - at > self.creation_expectation_ttl]:
            del pending[name]
        if not pending:
            del self._created[key]
        return len(pending)

    async def _replace_stale_outdated(self, runner_set: Object, state: EphemeralRunnersByState) -> Result:
        """Outdated reports from an older revision say nothing about the current spec: delete them.

        Ports: EphemeralRunnerSetReconciler.Reconcile, the stale-outdated branch
        """
        log.info("deleting outdated runners built before the last spec update", count=len(state.stale_outdated))
        await self._delete_ephemeral_runners_in_batches(state.stale_outdated)
        await self._update_status(runner_set, state)
        return Result()

    async def _release_rejected_spec(self, runner_set: Object, state: EphemeralRunnersByState) -> Result:
        """A runner rejected the current spec: record Outdated first, then release runners.

        Recording first means a failure half-way through the release leaves the phase
        set, so the Outdated branch picks the work up; the target count is ignored on
        this reconcile (it would build runners that reject the spec the same way).

        Ports: EphemeralRunnerSetReconciler.Reconcile, the outdated branch
        """
        log.info("runners rejected the runner spec, releasing runners", outdated=len(state.outdated))
        await self._update_status(runner_set, state)
        _, wait = await self._clean_up_ephemeral_runners(runner_set)
        return Result(requeue_after=wait)

    async def _scale(self, runner_set: Object, state: EphemeralRunnersByState) -> Result:
        """Finished-runner cleanup first, then the scale decision table, then the status.

        Only a patch ID that runners have not been stamped with yet (or 0) is acted on.

        Ports: EphemeralRunnerSetReconciler.Reconcile, the scaling block
        """
        spec = _spec(runner_set)
        patch_id, replicas = int(spec.get("patchID") or 0), int(spec.get("replicas") or 0)
        total = state.scale_total()
        wait = 0.0
        if patch_id == 0 or patch_id != state.latest_patch_id:
            if state.finished:
                return await self._clean_up_finished_runners(runner_set, state)
            # Runners being deleted still hold their registration: no replacement until gone.
            scale_up_total = total + len(state.deleting)
            log.debug("scaling comparison", current=total, deleting=len(state.deleting), desired=replicas)
            if scale_up_total < replicas:
                if await self._scale_up_serviced_by_finished_runner_cleanup(object_key(runner_set), runner_set):
                    _status_of(runner_set)["finishedRunnerCleanupPatchID"] = patch_id
                    log.info("skipping scale up until the listener publishes a new patch", patch_id=patch_id)
                    await self._update_status(runner_set, state)
                    return Result()
                await self._create_ephemeral_runners(runner_set, replicas - scale_up_total)
            elif patch_id > 0 and total >= replicas:
                pass  # excess runners drain as their jobs finish; the listener sends a later patch
            elif patch_id == 0 and total > replicas:
                wait = await self._delete_idle_ephemeral_runners(
                    runner_set, state.pending, state.running, total - replicas
                )
        await self._update_status(runner_set, state)
        return Result(requeue_after=wait)

    async def _clean_up_finished_runners(self, runner_set: Object, state: EphemeralRunnersByState) -> Result:
        """Record the patch ID, delete finished runners, and defer scaling to the next reconcile.

        ``spec.replicas`` was computed against the runners alive when the listener
        published ``spec.patchID``; filling it in the same pass would replace jobs that
        already completed.

        Ports: EphemeralRunnerSetReconciler.Reconcile, the finished-runner cleanup (#4642)
        """
        patch_id = int(_spec(runner_set).get("patchID") or 0)
        await self._patch_finished_runner_cleanup_patch_id_status(object_key(runner_set), patch_id)
        await self._delete_ephemeral_runners_in_batches(state.finished)
        _status_of(runner_set)["finishedRunnerCleanupPatchID"] = patch_id
        log.info("cleaned up finished runners, deferring the scaling decision", patch_id=patch_id)
        await self._update_status(runner_set, state)
        return Result()

    # ---- status writers --------------------------------------------------------------

    async def _scale_up_serviced_by_finished_runner_cleanup(self, key: ObjectKey, runner_set: Object) -> bool:
        """True when the shortfall was made by deleting finished runners for this very patch ID.

        Patch ID 0 is never suppressed. The marker is read from the API server, never
        the cache, in either direction.

        Raises:
            RuntimeError: no uncached reader is configured.

        Ports: EphemeralRunnerSetReconciler.scaleUpServicedByFinishedRunnerCleanup
        """
        patch_id = int(_spec(runner_set).get("patchID") or 0)
        if patch_id == 0:
            return False
        if self.api_reader is None:
            raise RuntimeError("api_reader is not configured: cannot confirm the finished runner cleanup patch ID")
        try:
            live = await self.api_reader.get(EPHEMERAL_RUNNER_SET, key)
        except Exception as err:
            raise RuntimeError(f"failed to read EphemeralRunnerSet {key} without the cache") from err
        return int(_status(live).get("finishedRunnerCleanupPatchID") or 0) == patch_id

    async def _patch_finished_runner_cleanup_patch_id_status(self, key: ObjectKey, patch_id: int) -> None:
        """Record ``patch_id`` as the one whose finished runners were deleted (equality, may go down).

        Re-read through the API reader inside a retry; the patch carries the optimistic
        lock so a write decided on state that changed since conflicts and is retried.

        Ports: EphemeralRunnerSetReconciler.patchFinishedRunnerCleanupPatchIDStatus
        """
        reader: Reader = self.api_reader or self.client

        async def attempt() -> None:
            live = await reader.get(EPHEMERAL_RUNNER_SET, key)
            if int(_status(live).get("finishedRunnerCleanupPatchID") or 0) == patch_id:
                return
            lazy = LazyCopy(live)
            _status_of(lazy.mutate())["finishedRunnerCleanupPatchID"] = patch_id
            await self.client.status().patch(live, lazy.merge_from(optimistic_lock=True))

        await retry_on_conflict(attempt)

    async def _patch_applied_actionable_revision_status(self, key: ObjectKey, target: int) -> None:
        """Advance the applied revision (never backwards), clear the marker on advance, derive the phase.

        The set and its runners are read through the API reader (the runners
        namespace-wide, filtered here: the controller index exists only client-side).
        Runners are judged against ``max(live applied, target)``, read from the mutated
        object. The status patch carries the optimistic lock.

        Ports: EphemeralRunnerSetReconciler.patchAppliedActionableRevisionStatus
        """
        reader: Reader = self.api_reader or self.client

        async def attempt() -> None:
            live = await reader.get(EPHEMERAL_RUNNER_SET, key)
            lazy = LazyCopy(live)
            if int(_status(live).get("appliedActionableRevision") or 0) < target:
                status = _status_of(lazy.mutate())
                status["appliedActionableRevision"] = target
                status.pop("finishedRunnerCleanupPatchID", None)  # Go's 0 with omitempty
            runners = await reader.list(EPHEMERAL_RUNNER, namespace=key.namespace)
            mine = [r for r in runners.items if is_controlled_by(r, "EphemeralRunnerSet", key.name)]
            state = new_ephemeral_runners_by_states(mine, int(_status(live).get("appliedActionableRevision") or 0))
            phase = PHASE_OUTDATED if state.outdated else PHASE_RUNNING
            if _status(live).get("phase") != phase:
                _status_of(lazy.mutate())["phase"] = phase
            if not lazy.modified():
                return
            await self.client.status().patch(live, lazy.merge_from(optimistic_lock=True))

        await retry_on_conflict(attempt)

    async def _update_status(self, runner_set: Object, state: EphemeralRunnersByState) -> None:
        """Write the phase (Outdated is absorbing here) with a plain diff-based merge patch.

        Ports: EphemeralRunnerSetReconciler.updateStatus
        """
        current = _status(runner_set)
        if state.outdated:
            phase = PHASE_OUTDATED
        elif not current.get("phase"):
            phase = PHASE_RUNNING
        else:
            phase = current["phase"]
        desired = {
            "phase": phase,
            "appliedActionableRevision": current.get("appliedActionableRevision"),
            "finishedRunnerCleanupPatchID": current.get("finishedRunnerCleanupPatchID"),
        }
        if semantic_equal(_zero_as_absent(current), _zero_as_absent(desired)):
            return
        lazy = LazyCopy(runner_set)
        _status_of(lazy.mutate())["phase"] = phase
        await self.client.status().patch(runner_set, lazy.merge_from())
        log.info("updated EphemeralRunnerSet status", phase=phase)

    # ---- runner removal ------------------------------------------------------------------

    async def _delete_ephemeral_runners_in_batches(self, runners: list[Object]) -> None:
        """Delete ``runners`` with bounded concurrency; NotFound is fine; every failure is reported.

        Ports: EphemeralRunnerSetReconciler.deleteEphemeralRunnersInBatches (and deleteTerminatedEphemeralRunners)
        """

        def call(runner: Object) -> Callable[[], Awaitable[None]]:
            async def delete() -> None:
                try:
                    await self.client.delete(runner)
                except NotFoundError:
                    pass

            return delete

        _raise_combined(await _bounded((call(r) for r in runners), self.batch_concurrency))

    async def _clean_up_ephemeral_runners(self, runner_set: Object) -> tuple[bool, float]:
        """Remove every runner that is not busy; (True, 0) once none is left.

        Terminated runners are deleted; pending runners without a job and running runners
        that are idle (or have no ID) are removed from the service and deleted.

        Ports: EphemeralRunnerSetReconciler.cleanUpEphemeralRunners
        """
        meta = runner_set["metadata"]
        runners = await self.client.list(
            EPHEMERAL_RUNNER, namespace=meta["namespace"], fields={RESOURCE_OWNER_KEY: meta["name"]}
        )
        if not runners.items:
            await self._clean_up_proxy_secret(runner_set)
            return True, 0.0
        state = new_ephemeral_runners_by_states(
            runners.items, int(_status(runner_set).get("appliedActionableRevision") or 0)
        )
        await self._delete_ephemeral_runners_in_batches(state.terminated())
        if not state.running and not state.pending:
            return False, 0.0

        actions: list[RunnerActionsClient] = []

        async def client_for(runner: Object) -> RunnerActionsClient | None:
            if runner_id(runner) <= 0:
                return None
            if not actions:
                actions.append(await self.actions(runner_set))
            return actions[0]

        errors: list[BaseException] = []
        victims = [r for r in state.pending if not has_job(r)]
        victims += [r for r in state.running if not (runner_id(r) > 0 and has_job(r))]
        for runner in victims:
            try:
                await self._delete_ephemeral_runner_with_actions_client(runner, await client_for(runner))
            except Exception as err:
                errors.append(err)
        _raise_combined(errors)
        return False, 0.0

    async def _delete_ephemeral_runner_with_actions_client(
        self, runner: Object, actions: RunnerActionsClient | None
    ) -> bool:
        """Unregister ``runner`` from the service, then delete it; False when it is running a job.

        A runner without an ID has no registration to ask about: it is deleted and its
        finalizer resolves the registration by name.

        Raises:
            ValueError: a negative runner ID.

        Ports: EphemeralRunnerSetReconciler.deleteEphemeralRunnerWithActionsClient
        """
        rid = runner_id(runner)
        if rid < 0:
            raise ValueError(f"invalid runner ID {rid} on EphemeralRunner {runner['metadata']['name']}")
        if rid > 0:
            if actions is None:
                raise RuntimeError("an Actions client is needed to remove a registered runner")
            try:
                await actions.remove_runner(rid)
            except Exception as err:
                if is_job_still_running(err):
                    log.info("runner is still running a job, skipping", runner=runner["metadata"]["name"])
                    return False
                if not is_runner_not_found(err):
                    raise
                log.info("runner registration already gone", runner=runner["metadata"]["name"], runner_id=rid)
            await self._release_registration_finalizer(runner)
        try:
            await self.client.delete(runner)
        except NotFoundError:
            pass
        log.info("deleted ephemeral runner", runner=runner["metadata"]["name"], runner_id=rid)
        return True

    async def _release_registration_finalizer(self, runner: Object) -> None:
        """Drop the registration finalizer of a runner the service no longer knows, before deleting it.

        [UNCONFIRMED] (spec §0.3 b, ``8c921054``): ported because without it a crash between
        ``RemoveRunner`` and the delete leaves a runner whose every later removal answers
        runner-not-found, and the revision can never be applied (pinned by the crash test).
        It also spares the runner finalizer a second unregistration.

        Ports: EphemeralRunnerSetReconciler.deleteEphemeralRunnerWithActionsClient, the finalizer release
        """
        if not contains_finalizer(runner, EPHEMERAL_RUNNER_ACTIONS_FINALIZER):
            return
        lazy = LazyCopy(runner)
        remove_finalizer(lazy.mutate(), EPHEMERAL_RUNNER_ACTIONS_FINALIZER)
        try:
            await self.client.patch(runner, lazy.merge_from())
        except NotFoundError:
            pass

    async def _delete_idle_ephemeral_runners(
        self, runner_set: Object, pending: list[Object], running: list[Object], count: int
    ) -> float:
        """Scale down by ``count``: oldest pending first, then oldest running; busy ones are skipped.

        Only runners the service agrees to remove count; a shortfall is retried on a
        later reconcile.

        Ports: EphemeralRunnerSetReconciler.deleteIdleEphemeralRunners
        """
        if count <= 0:
            return 0.0

        def by_age(runners: list[Object]) -> list[Object]:
            return sorted(runners, key=lambda r: str(r["metadata"].get("creationTimestamp") or ""))

        candidates = [*by_age(pending), *by_age(running)]
        if not candidates:
            return 0.0
        try:
            actions = await self.actions(runner_set)
        except Exception as err:
            raise RuntimeError("failed to get the Actions client for scale down") from err
        removed = 0
        errors: list[BaseException] = []
        for runner in candidates:
            done = is_done(runner)
            if not done and runner_id(runner) == 0:
                continue  # not registered yet
            if not done and has_job(runner):
                continue
            try:
                if not await self._delete_ephemeral_runner_with_actions_client(runner, actions):
                    continue
            except Exception as err:
                errors.append(err)
                continue
            removed += 1
            if removed >= count:
                break
        _raise_combined(errors)
        return 0.0

    async def _create_ephemeral_runners(self, runner_set: Object, count: int) -> None:
        """Create ``count`` runners, up to the batch bound at once; every failure is reported.

        Ports: EphemeralRunnerSetReconciler.createEphemeralRunners
        """
        if count <= 0:
            return
        proxy = (_spec(runner_set).get("ephemeralRunnerSpec") or {}).get("proxy")

        async def create() -> None:
            runner = new_ephemeral_runner(runner_set, options=self.build_options)
            if proxy is not None:
                runner["spec"]["proxySecretRef"] = proxy_ephemeral_runner_set_secret_name(runner_set)
            await self.client.create(runner)
            self._created.setdefault(object_key(runner_set), {})[runner["metadata"]["name"]] = time.monotonic()
            log.info("created ephemeral runner", runner=runner["metadata"]["name"])

        log.info("creating ephemeral runners (scale up)", count=count)
        _raise_combined(await _bounded((create for _ in range(count)), self.batch_concurrency))

    # ---- proxy secret -------------------------------------------------------------------------

    async def _clean_up_proxy_secret(self, runner_set: Object) -> None:
        """Delete the proxy secret by name, if a proxy is configured. Ports: cleanUpProxySecret"""
        if (_spec(runner_set).get("ephemeralRunnerSpec") or {}).get("proxy") is None:
            return
        secret = _secret_ref(runner_set["metadata"]["namespace"], proxy_ephemeral_runner_set_secret_name(runner_set))
        try:
            await self.client.delete(secret)
        except NotFoundError:
            pass

    async def _clean_up_ephemeral_runner_set_proxy_secret(self, runner_set: Object) -> bool:
        """True once the proxy secret is gone (or was never needed).

        Ports: EphemeralRunnerSetReconciler.cleanUpEphemeralRunnerSetProxySecret
        """
        if (_spec(runner_set).get("ephemeralRunnerSpec") or {}).get("proxy") is None:
            return True
        key = ObjectKey(runner_set["metadata"]["namespace"], proxy_ephemeral_runner_set_secret_name(runner_set))
        try:
            secret = await self.client.get(SECRET, key)
        except NotFoundError:
            return True
        try:
            await self.client.delete(secret)
        except NotFoundError:
            pass
        return False

    async def _proxy_data(self, runner_set: Object, proxy: dict[str, Any]) -> dict[str, bytes]:
        """Python only: read the proxy's credential secrets and build the proxy secret data."""
        namespace = runner_set["metadata"]["namespace"]
        credentials: dict[str, dict[str, bytes]] = {}
        for part in ("http", "https"):
            ref = (proxy.get(part) or {}).get("credentialSecretRef")
            if ref and ref not in credentials:
                secret = await self.client.get(SECRET, ObjectKey(namespace, ref))
                credentials[ref] = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
        return proxy_secret_data(proxy, credentials)

    async def _reconcile_proxy_secret(self, runner_set: Object) -> None:
        """Create the proxy secret, or merge-patch the parts of it that drifted.

        Ports: EphemeralRunnerSetReconciler.reconcileEphemeralRunnerSetProxySecret
        """
        proxy = (_spec(runner_set).get("ephemeralRunnerSpec") or {}).get("proxy")
        if proxy is None:
            return
        key = ObjectKey(runner_set["metadata"]["namespace"], proxy_ephemeral_runner_set_secret_name(runner_set))
        try:
            live = await self.client.get(SECRET, key)
        except NotFoundError:
            desired = new_ephemeral_runner_set_proxy_secret(runner_set, await self._proxy_data(runner_set, proxy))
            await self.client.create(desired)
            log.info("created EphemeralRunnerSet proxy secret", secret=key.name)
            return
        desired = new_ephemeral_runner_set_proxy_secret(runner_set, await self._proxy_data(runner_set, proxy))
        meta = live["metadata"]
        labels = {**(meta.get("labels") or {}), **desired["metadata"]["labels"]}
        annotations = {**(meta.get("annotations") or {}), **desired["metadata"]["annotations"]}
        lazy = LazyCopy(live)
        if not semantic_equal(live.get("data"), desired["data"]):
            lazy.mutate()["data"] = desired["data"]
        if not semantic_equal(meta.get("labels"), labels):
            lazy.mutate()["metadata"]["labels"] = labels
        if not semantic_equal(meta.get("annotations"), annotations):
            lazy.mutate()["metadata"]["annotations"] = annotations
        if lazy.modified():
            await self.client.patch(live, lazy.merge_from())
            log.info("updated EphemeralRunnerSet proxy secret", secret=key.name)


def object_key(obj: Object) -> ObjectKey:
    """Python only: the object's namespace and name."""
    return ObjectKey(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def _status_of(obj: Object) -> dict[str, Any]:
    """Python only: the object's status, created when absent, for writing."""
    status: dict[str, Any] = obj.setdefault("status", {})
    return status


def _zero_as_absent(status: dict[str, Any]) -> dict[str, Any]:
    """Python only: Go's omitempty view of a status (0 and "" are not sent)."""
    return {k: v for k, v in status.items() if v not in (0, "", None)}


def _secret_ref(namespace: str, name: str) -> Object:
    """Python only: a Secret object naming only its key (for deletes by name)."""
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": namespace, "name": name}}
