"""EphemeralRunner resources: the runner's own writes, its pod and JIT secret, its registration release.

Ports: controllers/actions.github.com/ephemeralrunner_controller.go (cleanupResources,
cleanupContainerHooksResources, deletePodOptions, queueUnregistration, registeredRunnerID)
"""

from __future__ import annotations

import base64
import contextlib

import structlog

from arc_controllers._runner_constants import (
    EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
    LABEL_RUNNER_POD,
    PHASE_SUCCEEDED,
    POD,
    SECRET,
)
from arc_controllers.controllers.actions_seam import ActionsClientFactory
from arc_controllers.controllers.patching import (
    LazyCopy,
    MergeFrom,
    SupersededVersions,
    contains_finalizer,
    remove_finalizer,
)
from arc_controllers.controllers.runnerstates import object_key as _key
from arc_controllers.controllers.runnerstates import runner_id
from arc_controllers.controllers.runnerstates import status_of as _status
from arc_controllers.controllers.unregistration import RunnerUnregistrationQueue
from reconcilekit.client.interfaces import Client, Object
from reconcilekit.errors import NotFoundError

__all__ = ["EphemeralRunnerResources", "pod_terminated", "secret_value"]

log = structlog.get_logger("EphemeralRunner")  # Go's logr name for this reconciler (zap's `logger`)


def _pod_terminated(pod: Object) -> bool:
    """Every (init) container terminated, and the pod is terminal or reports all its containers.

    Ports: podTerminated (deletePodOptions)
    """
    status = _status(pod)
    statuses = [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]
    if not all((cs.get("state") or {}).get("terminated") for cs in statuses):
        return False
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    containers = ((pod.get("spec") or {}).get("containers")) or []
    return len(status.get("containerStatuses") or []) == len(containers)


def _secret_value(secret: Object, key: str) -> str:
    """Python only: one decoded value of a secret's data, "" when absent."""
    raw = (secret.get("data") or {}).get(key)
    return base64.b64decode(raw).decode() if raw else ""


def _key_meta(obj: Object) -> dict[str, str]:
    """Python only: name and namespace of ``obj``."""
    return {"name": obj["metadata"]["name"], "namespace": obj["metadata"].get("namespace", "")}


pod_terminated = _pod_terminated
secret_value = _secret_value


class EphemeralRunnerResources:
    """The resource-handling half of `EphemeralRunnerReconciler` (a mixin).

    Python only: the module split of style-anchors §3.3; every method names its Go function.
    """

    client: Client
    actions: ActionsClientFactory
    unregistration_queue: RunnerUnregistrationQueue | None
    terminated_pod_grace_period_seconds: int
    _superseded: SupersededVersions
    _secrets_deleted: set[str]

    async def _get_pod(self, runner: Object) -> Object | None:
        """Python only: the runner's pod from the cache, or None."""
        try:
            return await self.client.get(POD, _key(runner))
        except NotFoundError:
            return None

    async def _delete_pod(self, pod: Object) -> None:
        """Delete with zero grace and a UID precondition once fully terminated, else gracefully.

        Ports: EphemeralRunnerReconciler.deletePodOptions with the Delete call
        """
        if _pod_terminated(pod) and self.terminated_pod_grace_period_seconds >= 0:
            await self.client.delete(
                pod,
                grace_period_seconds=self.terminated_pod_grace_period_seconds,
                preconditions={"uid": pod["metadata"]["uid"]},
            )
        else:
            await self.client.delete(pod)

    async def _write(self, runner: Object, patch: MergeFrom) -> None:
        """Python only: merge-patch the runner and remember the version it replaced."""
        uid, rv = str(runner["metadata"].get("uid", "")), str(runner["metadata"].get("resourceVersion", ""))
        await self.client.patch(runner, patch)
        self._superseded.superseded(uid, rv)

    async def _write_status(self, runner: Object, patch: MergeFrom) -> None:
        """Python only: merge-patch the runner's status and remember the version it replaced."""
        uid, rv = str(runner["metadata"].get("uid", "")), str(runner["metadata"].get("resourceVersion", ""))
        await self.client.status().patch(runner, patch)
        self._superseded.superseded(uid, rv)

    async def _delete_runner(self, runner: Object) -> None:
        """Python only: delete the runner (finalizers keep it) and remember the version it replaced."""
        uid, rv = str(runner["metadata"].get("uid", "")), str(runner["metadata"].get("resourceVersion", ""))
        await self.client.delete(runner)
        self._superseded.superseded(uid, rv)

    def _push(self, runner: Object, rid: int) -> None:
        """Python only: push to the unregistration queue; a None queue drops the push (as upstream's nil queue)."""
        if self.unregistration_queue is not None:
            self.unregistration_queue.push(runner, rid)

    async def _queue_unregistration(self, runner: Object) -> None:
        """Resolve the ID, drop the registration finalizer, and only then queue the removal.

        Ports: EphemeralRunnerReconciler.queueUnregistration
        """
        if not contains_finalizer(runner, EPHEMERAL_RUNNER_ACTIONS_FINALIZER):
            return
        rid = 0 if _status(runner).get("phase") == PHASE_SUCCEEDED else await self._registered_runner_id(runner)
        lazy = LazyCopy(runner)
        remove_finalizer(lazy.mutate(), EPHEMERAL_RUNNER_ACTIONS_FINALIZER)
        with contextlib.suppress(NotFoundError):
            await self._write(runner, lazy.merge_from())
        if rid != 0:
            self._push(runner, rid)

    async def _registered_runner_id(self, runner: Object) -> int:
        """The registration to remove: status, else the JIT secret, else the service by name.

        Raises:
            RuntimeError: the registration found by name belongs to another scale set.
            APIStatusError: the secret could not be read (never guess 0).

        Ports: EphemeralRunnerReconciler.registeredRunnerID
        """
        if (rid := runner_id(runner)) != 0:
            return rid
        try:
            secret = await self.client.get(SECRET, _key(runner))
        except NotFoundError:
            actions = await self.actions(runner)
            found = await actions.get_runner_by_name(runner["metadata"]["name"])
            if found is None:
                return 0
            scale_set_id = int((runner.get("spec") or {}).get("runnerScaleSetId") or 0)
            if found.runner_scale_set_id != scale_set_id:
                raise RuntimeError(
                    f"runner {runner['metadata']['name']} is registered to scale set {found.runner_scale_set_id}"
                ) from None
            return found.id
        try:
            return int(_secret_value(secret, "runnerId"))
        except ValueError:
            log.warning("unparseable runner ID in JIT secret", runner=runner["metadata"]["name"])
            return 0

    async def _cleanup_resources(self, runner: Object) -> None:
        """Delete the pod (unless already deleting) and the JIT secret; gone is fine.

        Python only as to the secret: deleted by name (404 tolerated) instead of read first,
        and only once per runner in this process.

        Ports: EphemeralRunnerReconciler.cleanupResources
        """
        pod = await self._get_pod(runner)
        if pod is not None and not pod["metadata"].get("deletionTimestamp"):
            with contextlib.suppress(NotFoundError):
                await self._delete_pod(pod)
        uid = str(runner["metadata"].get("uid", ""))
        if uid and uid in self._secrets_deleted:
            return
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {**_key_meta(runner)}}
        with contextlib.suppress(NotFoundError):
            await self.client.delete(secret)
        if uid:
            self._secrets_deleted.add(uid)

    async def _cleanup_container_hook_resources(self, runner: Object) -> None:
        """Delete pods and secrets labelled ``runner-pod=<runner>`` (made by container hooks).

        Ports: EphemeralRunnerReconciler.cleanupContainerHooksResources
        """
        labels = {LABEL_RUNNER_POD: runner["metadata"]["name"]}
        namespace = runner["metadata"]["namespace"]
        errors: list[Exception] = []
        for gvk in (POD, SECRET):
            for obj in (await self.client.list(gvk, namespace=namespace, labels=labels)).items:
                if obj["metadata"].get("deletionTimestamp"):
                    continue
                try:
                    if gvk is POD:
                        await self._delete_pod(obj)
                    else:
                        await self.client.delete(obj)
                except NotFoundError:
                    pass
                except Exception as err:
                    errors.append(err)
        if errors:
            raise errors[0] if len(errors) == 1 else ExceptionGroup("container hook cleanup failed", errors)
