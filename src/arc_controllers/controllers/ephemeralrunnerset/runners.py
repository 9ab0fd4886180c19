"""EphemeralRunnerSet runner work: creating, removing and cleaning up runners.

Creates and deletes run in bounded batches (8 at once) and report every failure.

Ports: controllers/actions.github.com/ephemeralrunnerset_controller.go (createEphemeralRunners,
deleteEphemeralRunnersInBatches, cleanUpEphemeralRunners, deleteEphemeralRunnerWithActionsClient,
deleteIdleEphemeralRunners)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import structlog

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import EPHEMERAL_RUNNER, objects
from arc_controllers.controllers.actions_seam import (
    ActionsClientFactory,
    RunnerActionsClient,
    is_job_still_running,
    is_runner_not_found,
)
from arc_controllers.controllers.deletions import DeletionsRequested
from arc_controllers.controllers.ephemeralrunnerset.proxysecret import ProxySecrets, runner_proxy
from arc_controllers.controllers.indexers import RESOURCE_OWNER_KEY
from arc_controllers.controllers.newrunners import NewRunners
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.controllers.runnerstates import has_job, is_done, new_ephemeral_runners_by_states, runner_id
from arc_controllers.resourcebuilder.runner import (
    RunnerBuildOptions,
    new_ephemeral_runner,
    proxy_ephemeral_runner_set_secret_name,
)
from reconcilekit.client.interfaces import Client, Object, ObjectKey, Reader, object_key_from_object
from reconcilekit.controllerutil import contains_finalizer, remove_finalizer
from reconcilekit.errors import NotFoundError

__all__ = ["CREATION_EXPECTATION_TTL", "RunnerSetRunners"]

log = structlog.get_logger("EphemeralRunnerSet")  # Go's logr name for this reconciler

CREATION_EXPECTATION_TTL = 60.0
"""Python only: see `RunnerSetRunners.observe_created`."""


class _CombinedError(Exception):
    """Python only: several independent failures of one batch, all reported (multierr.Combine)."""

    def __init__(self, errors: list[BaseException]) -> None:
        """Python only: see the class docstring."""
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


def _raise_combined(errors: list[BaseException]) -> None:
    """Python only: raise the one error, or all of them combined; nothing when empty."""
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
class RunnerSetRunners:
    """Creates, removes and cleans up a set's EphemeralRunners; every method names its Go function.

    Python only: the runner work of `EphemeralRunnerSetReconciler`, given its dependencies.
    """

    client: Client
    """Reads from the informer cache, writes to the API server."""
    api_reader: Reader | None
    """Reads from the API server (the deleting-runner check); None falls back to the listed copy."""
    actions: ActionsClientFactory
    proxy: ProxySecrets
    build_options: RunnerBuildOptions = field(default_factory=RunnerBuildOptions)
    batch_concurrency: int = constants.RUNNER_BATCH_CONCURRENCY
    """How many runners of one set are created or deleted at once (`constants.RUNNER_BATCH_CONCURRENCY`).

    One reconcile creates every runner a burst asks for; sequential round trips make the
    last runner wait for all before it. The bound keeps a burst from flooding the client's
    rate limiter in front of every other controller. Ports: runnerBatchConcurrency
    """
    creation_expectation_ttl: float = CREATION_EXPECTATION_TTL
    """Seconds a created runner the cache has not shown yet still counts as pending."""
    deletions: DeletionsRequested = field(default_factory=DeletionsRequested)
    """Runners whose DELETE this process sent (shared with the EphemeralRunner reconciler)."""
    new_runners: NewRunners = field(default_factory=NewRunners)
    """Runners this process created, not provisioned yet (shared with the EphemeralRunner reconciler)."""
    created: dict[ObjectKey, dict[str, float]] = field(default_factory=dict, init=False, repr=False)
    """Per set: names of runners this process created, with the monotonic time of the create."""

    def observe_created(self, key: ObjectKey, listed: list[Object]) -> int:
        """How many runners this process created for the set that the cached list does not show yet.

        The informer cache may lag the creates of the previous reconcile; counting only
        what it shows would create those runners a second time (the listener's patch ID
        guards against that only for patch IDs other than 0). A runner stops counting
        once listed, or after `creation_expectation_ttl` seconds.

        Python only: controller-runtime's ReplicaSet-style expectations, which ARC lacks.
        """
        pending = self.created.get(key)
        if not pending:
            return 0
        seen = {objects.name(r) for r in listed}
        now = time.monotonic()
        for name in [n for n, at in pending.items() if n in seen or now - at > self.creation_expectation_ttl]:
            del pending[name]
        if not pending:
            del self.created[key]
        return len(pending)

    def not_yet_deleted(self, runners: list[Object]) -> list[Object]:
        """``runners`` less those whose DELETE this process already sent (the runner reconciler's).

        The finished-runner cleanup works from a cache that can show a runner Succeeded
        after the runner reconciler deleted it; a second DELETE changes nothing but costs
        a token of the ``ephemeralrunners`` rate-limiter bucket.

        Python only: Go ARC deletes such a runner twice (issue 20's finding 1).
        """
        return [r for r in runners if objects.uid(r) not in self.deletions]

    async def delete_ephemeral_runners_in_batches(self, runners: list[Object]) -> None:
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

    async def clean_up_ephemeral_runners(self, runner_set: Object) -> tuple[bool, float]:
        """Remove every runner that is not busy; (True, 0) once none is left.

        Terminated runners are deleted; pending runners without a job and running runners
        that are idle (or have no ID) are removed from the service and deleted.

        Ports: EphemeralRunnerSetReconciler.cleanUpEphemeralRunners
        Differs: no grace period for runners whose ID is still 0; the wait is always 0 (docs/porting-notes.md).
        """
        runners = await self.list_owned(runner_set)
        self.observe_created(object_key_from_object(runner_set), runners)
        if not runners:
            await self.proxy.clean_up_proxy_secret(runner_set)
            return True, 0.0
        state = new_ephemeral_runners_by_states(
            runners, int(objects.status(runner_set).get("appliedActionableRevision") or 0)
        )
        await self.delete_ephemeral_runners_in_batches(state.terminated())
        if not state.running and not state.pending:
            return False, 0.0
        victims = [r for r in state.pending if not has_job(r)]
        victims += [r for r in state.running if not (runner_id(r) > 0 and has_job(r))]
        await self.remove_ephemeral_runners(runner_set, victims)
        return False, 0.0

    async def list_owned(self, runner_set: Object) -> list[Object]:
        """Python only: the set's runners from the cache (the owner index)."""
        runners = await self.client.list(
            EPHEMERAL_RUNNER,
            namespace=objects.namespace(runner_set),
            fields={RESOURCE_OWNER_KEY: objects.name(runner_set)},
        )
        return list(runners.items)

    async def remove_ephemeral_runners(self, runner_set: Object, runners: list[Object]) -> None:
        """Unregister each of ``runners`` from the service and delete it, one by one; every failure is reported.

        One Actions client serves them all, made when the first registered runner needs it.
        A runner the service reports busy is kept (it finishes its job).

        Ports: EphemeralRunnerSetReconciler.cleanUpEphemeralRunners, the removal loop
        """
        actions: list[RunnerActionsClient] = []

        async def client_for(runner: Object) -> RunnerActionsClient | None:
            if runner_id(runner) <= 0:
                return None
            if not actions:
                actions.append(await self.actions(runner_set))
            return actions[0]

        errors: list[BaseException] = []
        for runner in runners:
            try:
                await self.delete_ephemeral_runner_with_actions_client(runner, await client_for(runner))
            except Exception as err:
                errors.append(err)
        _raise_combined(errors)

    async def delete_ephemeral_runner_with_actions_client(
        self, runner: Object, actions: RunnerActionsClient | None
    ) -> bool:
        """Unregister ``runner`` from the service, then delete it; False when it is running a job.

        A runner without an ID has no registration to ask about: it is deleted and its
        finalizer resolves the registration by name.

        Raises:
            ValueError: a negative runner ID.

        Ports: EphemeralRunnerSetReconciler.deleteEphemeralRunnerWithActionsClient
        Differs: runner ID 0 is deleted without asking the service (docs/porting-notes.md).
        """
        rid = runner_id(runner)
        if rid < 0:
            raise ValueError(f"invalid runner ID {rid} on EphemeralRunner {objects.name(runner)}")
        if rid > 0:
            if actions is None:
                raise RuntimeError("an Actions client is needed to remove a registered runner")
            if await self._already_deleting(runner):
                log.info("runner is already being deleted, not removing it again", runner=objects.name(runner))
                return True
            try:
                await actions.remove_runner(rid)
            except Exception as err:
                if is_job_still_running(err):
                    log.info("runner is still running a job, skipping", runner=objects.name(runner))
                    return False
                if not is_runner_not_found(err):
                    raise
                log.info("runner registration already gone", runner=objects.name(runner), runner_id=rid)
            await self._release_registration_finalizer(runner)
        try:
            await self.client.delete(runner)
        except NotFoundError:
            pass
        log.info("deleted ephemeral runner", runner=objects.name(runner), runner_id=rid)
        return True

    async def _already_deleting(self, runner: Object) -> bool:
        """True when the API server shows ``runner`` gone or being deleted (an uncached read).

        A removal drops the registration finalizer and then deletes the runner; the
        finalizer patch wakes the next reconcile, whose cached list can still show the
        runner as it was. Asking the service again would remove the registration twice.
        The runner finalizer releases whatever registration a deleting runner still holds,
        so such a runner counts as removed. Without an API reader the listed copy is all
        there is (the older behaviour).

        Ports: EphemeralRunnerSetReconciler.deleteEphemeralRunnerWithActionsClient, the deleting-runner check
        """
        if objects.is_deleting(runner):
            return True
        if self.api_reader is None:
            return False
        try:
            live = await self.api_reader.get(EPHEMERAL_RUNNER, object_key_from_object(runner))
        except NotFoundError:
            return True
        return objects.is_deleting(live)

    async def _release_registration_finalizer(self, runner: Object) -> None:
        """Drop the registration finalizer of a runner the service no longer knows, before deleting it.

        Without it a crash between ``RemoveRunner`` and the delete leaves a runner whose
        every later removal answers runner-not-found. It also spares the runner finalizer
        a second unregistration. The same patch marks the runner
        (``ANNOTATION_KEY_REGISTRATION_REMOVED``) so the runner reconciler, reading a copy
        from before the delete, never adds the finalizer back.

        Ports: EphemeralRunnerSetReconciler.deleteEphemeralRunnerWithActionsClient, the finalizer release
        Beyond: no ARC issue; issue 19's finalizer race (the re-added finalizer stranded the runner).
        """
        if not contains_finalizer(runner, constants.EPHEMERAL_RUNNER_ACTIONS_FINALIZER_NAME):
            return
        lazy = LazyCopy(runner)
        remove_finalizer(lazy.mutate(), constants.EPHEMERAL_RUNNER_ACTIONS_FINALIZER_NAME)
        marks = objects.mutable_meta(lazy.obj).setdefault("annotations", {})
        marks[constants.ANNOTATION_KEY_REGISTRATION_REMOVED] = "true"
        try:
            await self.client.patch(runner, lazy.merge_from())
        except NotFoundError:
            pass

    async def delete_idle_ephemeral_runners(
        self, runner_set: Object, pending: list[Object], running: list[Object], count: int
    ) -> float:
        """Scale down by ``count``: oldest pending first, then oldest running; busy ones are skipped.

        Only runners the service agrees to remove count; a shortfall is retried on a
        later reconcile.

        Ports: EphemeralRunnerSetReconciler.deleteIdleEphemeralRunners
        Differs: a runner with ID 0 is skipped, no grace-period wait (docs/porting-notes.md).
        """
        if count <= 0:
            return 0.0

        def by_age(runners: list[Object]) -> list[Object]:
            return sorted(runners, key=lambda r: str(objects.meta(r).get("creationTimestamp") or ""))

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
                continue  # not registered yet (see the Differs line)
            if not done and has_job(runner):
                continue
            try:
                if not await self.delete_ephemeral_runner_with_actions_client(runner, actions):
                    continue
            except Exception as err:
                errors.append(err)
                continue
            removed += 1
            if removed >= count:
                break
        _raise_combined(errors)
        return 0.0

    async def create_ephemeral_runners(self, runner_set: Object, count: int) -> None:
        """Create ``count`` runners, up to the batch bound at once; every failure is reported.

        Ports: EphemeralRunnerSetReconciler.createEphemeralRunners
        """
        if count <= 0:
            return
        proxy = runner_proxy(runner_set)

        async def create() -> None:
            runner = new_ephemeral_runner(runner_set, options=self.build_options)
            if proxy is not None:
                runner["spec"]["proxySecretRef"] = proxy_ephemeral_runner_set_secret_name(runner_set)
            self.new_runners.create_started()
            try:
                await self.client.create(runner)
            except BaseException:
                self.new_runners.create_ended()
                raise
            self.new_runners.create_ended(objects.uid(runner))
            self.created.setdefault(object_key_from_object(runner_set), {})[objects.name(runner)] = time.monotonic()
            log.info("created ephemeral runner", runner=objects.name(runner))

        log.info("creating ephemeral runners (scale up)", count=count)
        _raise_combined(await _bounded((create for _ in range(count)), self.batch_concurrency))
