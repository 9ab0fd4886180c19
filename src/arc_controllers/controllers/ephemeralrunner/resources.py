"""EphemeralRunner resources: the runner's own writes, its pod and JIT secret, its registration ID.

Ports: controllers/actions.github.com/ephemeralrunner_controller.go (cleanupResources,
cleanupContainerHooksResources, deletePodOptions, registeredRunnerID)
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from dataclasses import dataclass, field

import structlog

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import POD, SECRET, PodPhase, objects
from arc_controllers.api.v1alpha1.objects import status as _status
from arc_controllers.controllers.actions_seam import ActionsClientFactory
from arc_controllers.controllers.deletions import DeletionsRequested
from arc_controllers.controllers.patching import SupersededVersions
from arc_controllers.controllers.runnerstates import runner_id, secret_ref
from reconcilekit.client.interfaces import Client, Object, ObjectKey
from reconcilekit.client.interfaces import object_key_from_object as _key
from reconcilekit.client.patch import MergeFromPatch
from reconcilekit.errors import NotFoundError

__all__ = ["RunnerResources", "RunnerWrites", "pod_terminated", "secret_value"]

log = structlog.get_logger("EphemeralRunner")  # Go's logr name for this reconciler


def _pod_terminated(pod: Object) -> bool:
    """Every (init) container terminated, and the pod is terminal or reports all its containers.

    Ports: podTerminated (deletePodOptions)
    """
    status = _status(pod)
    statuses = [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]
    if not all((cs.get("state") or {}).get("terminated") for cs in statuses):
        return False
    if status.get("phase") in (PodPhase.SUCCEEDED, PodPhase.FAILED):
        return True
    containers = objects.spec(pod).get("containers") or []
    return len(status.get("containerStatuses") or []) == len(containers)


def _secret_value(secret: Object, key: str) -> str:
    """Python only: one decoded value of a secret's data, "" when absent."""
    raw = (secret.get("data") or {}).get(key)
    return base64.b64decode(raw).decode() if raw else ""


pod_terminated = _pod_terminated
secret_value = _secret_value


@dataclass(kw_only=True)
class RunnerWrites:
    """The runner's own writes, each remembering the version it replaced (the stale-cache guard).

    Python only: see `SupersededVersions`.
    """

    client: Client
    superseded: SupersededVersions = field(default_factory=SupersededVersions)
    """Versions of runners this process replaced by its own writes."""
    deletions: DeletionsRequested = field(default_factory=DeletionsRequested)
    """Runners whose DELETE this process sent (shared with the set's finished-runner cleanup)."""

    async def patch(self, runner: Object, patch: MergeFromPatch) -> None:
        """Python only: merge-patch the runner and remember the version it replaced."""
        uid, rv = objects.uid(runner), objects.resource_version(runner)
        await self.client.patch(runner, patch)
        self.superseded.superseded(uid, rv)

    async def patch_status(self, runner: Object, patch: MergeFromPatch) -> None:
        """Python only: merge-patch the runner's status and remember the version it replaced."""
        uid, rv = objects.uid(runner), objects.resource_version(runner)
        await self.client.status().patch(runner, patch)
        self.superseded.superseded(uid, rv)

    async def delete_runner(self, runner: Object) -> Object | None:
        """Python only: delete the runner (finalizers keep it) and remember the version it replaced.

        The deletion counts in `deletions` from before the DELETE is sent, so the set's
        cleanup never sends a second one; a failure other than NotFound takes it back.

        Returns:
            The API server's answer (the runner with its deletionTimestamp) when the
            client gives it, else None.
        """
        uid, rv = objects.uid(runner), objects.resource_version(runner)
        self.deletions.requested(uid)
        try:
            answer = await self.client.delete(runner)
        except NotFoundError:
            raise
        except BaseException:
            self.deletions.failed(uid)
            raise
        self.superseded.superseded(uid, rv)
        return answer


@dataclass(kw_only=True)
class RunnerResources:
    """The runner's pod, JIT secret and registration ID; every method names its Go function.

    Python only: the resource handling of `EphemeralRunnerReconciler`, given its dependencies.
    """

    client: Client
    actions: ActionsClientFactory
    terminated_pod_grace_period_seconds: int = 0
    """Grace period for deleting a fully terminated pod; negative means the default graceful delete."""
    secrets_deleted: set[str] = field(default_factory=set, init=False, repr=False)
    """UIDs of runners whose JIT secret this process already deleted (no second DELETE)."""

    async def get_pod(self, runner: Object) -> Object | None:
        """Python only: the runner's pod from the cache, or None."""
        try:
            return await self.client.get(POD, _key(runner))
        except NotFoundError:
            return None

    async def delete_pod(self, pod: Object) -> None:
        """Delete with zero grace and a UID precondition once fully terminated, else gracefully.

        Ports: EphemeralRunnerReconciler.deletePodOptions with the Delete call
        """
        if _pod_terminated(pod) and self.terminated_pod_grace_period_seconds >= 0:
            await self.client.delete(
                pod,
                grace_period_seconds=self.terminated_pod_grace_period_seconds,
                preconditions={"uid": objects.uid(pod)},
            )
        else:
            await self.client.delete(pod)

    async def registered_runner_id(self, runner: Object) -> int:
        """The registration to remove: status, else the JIT secret, else the service by name.

        Raises:
            RuntimeError: the registration found by name belongs to another scale set.
            APIStatusError: the secret could not be read (never guess 0).

        A runner with neither an ID nor a JIT secret whose GitHub config secret is gone has
        no registration this controller could ever remove: 0, without building a client.

        Ports: EphemeralRunnerReconciler.registeredRunnerID
        Beyond: ARC #4653: the by-name lookup failed on the missing config secret forever, stranding the deletion.
        """
        if (rid := runner_id(runner)) != 0:
            return rid
        try:
            secret = await self.client.get(SECRET, _key(runner))
        except NotFoundError:
            if not await self._config_secret_exists(runner):
                log.info("runner never registered and its config secret is gone", runner=objects.name(runner))
                return 0
            actions = await self.actions(runner)
            found = await actions.get_runner_by_name(objects.name(runner))
            if found is None:
                return 0
            scale_set_id = int(objects.spec(runner).get("runnerScaleSetId") or 0)
            if found.runner_scale_set_id != scale_set_id:
                raise RuntimeError(
                    f"runner {objects.name(runner)} is registered to scale set {found.runner_scale_set_id}"
                ) from None
            return found.id
        try:
            return int(_secret_value(secret, "runnerId"))
        except ValueError:
            log.warning("unparseable runner ID in JIT secret", runner=objects.name(runner))
            return 0

    async def _config_secret_exists(self, runner: Object) -> bool:
        """Python only: the secret ``spec.githubConfigSecret`` names exists in the runner's namespace."""
        name = str(objects.spec(runner).get("githubConfigSecret") or "")
        if not name:
            return False
        try:
            await self.client.get(SECRET, ObjectKey(objects.namespace(runner), name))
        except NotFoundError:
            return False
        return True

    async def cleanup_resources(self, runner: Object) -> None:
        """Delete the pod (unless already deleting) and the JIT secret; gone is fine.

        Python only as to the secret: deleted by name (404 tolerated) instead of read first,
        and only once per runner in this process. The two DELETEs go out at once (they
        draw on different rate-limiter buckets); the first failure is raised, the other
        DELETE cancelled.

        Ports: EphemeralRunnerReconciler.cleanupResources
        Differs: pod and secret are deleted concurrently, not one after the other (docs/porting-notes.md).
        """
        pod = await self.get_pod(runner)
        uid = objects.uid(runner)

        async def delete_pod() -> None:
            if pod is not None and not objects.is_deleting(pod):
                with contextlib.suppress(NotFoundError):
                    await self.delete_pod(pod)

        async def delete_secret() -> None:
            if uid and uid in self.secrets_deleted:
                return
            with contextlib.suppress(NotFoundError):
                await self.client.delete(secret_ref(objects.namespace(runner), objects.name(runner)))
            if uid:
                self.secrets_deleted.add(uid)

        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(delete_pod(), name=f"delete-pod-{objects.name(runner)}")
                group.create_task(delete_secret(), name=f"delete-jit-secret-{objects.name(runner)}")
        except ExceptionGroup as errors:
            raise errors.exceptions[0] from None

    async def cleanup_container_hook_resources(self, runner: Object) -> None:
        """Delete pods and secrets labelled ``runner-pod=<runner>`` (made by container hooks).

        Ports: EphemeralRunnerReconciler.cleanupContainerHooksResources
        """
        labels = {constants.LABEL_KEY_RUNNER_POD: objects.name(runner)}
        namespace = objects.namespace(runner)
        errors: list[Exception] = []
        for gvk in (POD, SECRET):
            for obj in (await self.client.list(gvk, namespace=namespace, labels=labels)).items:
                if objects.is_deleting(obj):
                    continue
                try:
                    if gvk is POD:
                        await self.delete_pod(obj)
                    else:
                        await self.client.delete(obj)
                except NotFoundError:
                    pass
                except Exception as err:
                    errors.append(err)
        if errors:
            raise errors[0] if len(errors) == 1 else ExceptionGroup("container hook cleanup failed", errors)
