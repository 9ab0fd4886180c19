"""AutoscalingRunnerSet reconciler: a user's scale set becomes a registered scale set, one runner set, one listener.

It registers the scale set with the Actions service, keeps the one EphemeralRunnerSet
(named like the AutoscalingRunnerSet) in step with the runner spec, bumping
``spec.actionableRevision`` only when the runner spec really changed, and keeps one
AutoscalingListener in the controller namespace. When the runners reject their spec the
scale set is parked (``Outdated``): listener stopped, runner set pinned to zero, until the
runner spec changes. It never writes the runner set's ``replicas``/``patchID`` outside
parking: those belong to the listener.

Ports: controllers/actions.github.com/autoscalingrunnerset_controller.go
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from arc_controllers import constants
from arc_controllers._runner_constants import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER_SET,
    PHASE_OUTDATED,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
)
from arc_controllers.api.v1alpha1.version import is_version_allowed
from arc_controllers.controllers.actions_seam import is_actions_not_found
from arc_controllers.controllers.helpers import (
    ephemeral_runner_set_actionable_spec_changed,
    ephemeral_runner_set_desired_spec_changed,
    ephemeral_runner_set_outdated_for_applied_revision,
    listener_spec_changed,
    next_actionable_revision,
)
from arc_controllers.controllers.patching import add_finalizer, contains_finalizer, merge_patch, remove_finalizer
from arc_controllers.resourcebuilder.labels import apply_github_url_labels, filter_and_merge_labels, merge_annotations
from arc_controllers.resourcebuilder.listener import (
    ListenerBuildOptions,
    new_autoscaling_listener,
    scale_set_listener_name,
)
from arc_controllers.resourcebuilder.runner import RunnerBuildOptions
from arc_controllers.resourcebuilder.runnerset import new_ephemeral_runner_set
from reconcilekit.client.interfaces import Client, GroupVersionKind, Object, ObjectKey
from reconcilekit.errors import AlreadyExistsError, ForbiddenError, NotFoundError
from reconcilekit.reconcile import Request, Result

__all__ = [
    "AUTOSCALING_LISTENER",
    "AUTOSCALING_RUNNER_SET",
    "AUTOSCALING_RUNNER_SET_OWNER_KEY",
    "AutoscalingRunnerSetReconciler",
    "ScaleSetActionsClient",
    "ScaleSetClientFactory",
    "autoscaling_runner_set_owner_index_value",
]

log = structlog.get_logger("AutoscalingRunnerSet")  # Go's logr name for this reconciler (zap's `logger`)

AUTOSCALING_RUNNER_SET_OWNER_KEY = ".spec.autoscalingRunnerSet"
"""The client-side field index on AutoscalingListeners naming their scale set. Ports: autoscalingRunnerSetOwnerKey"""

PHASE_PENDING = "Pending"
PHASE_RUNNING = "Running"
LISTENER_PHASE_STOPPED = "Stopped"
LISTENER_PHASE_RUNNING = "Running"


def autoscaling_runner_set_owner_index_value(namespace: str, name: str) -> str:
    """``<namespace>/<name>``: the index value of a listener's scale set. Ports: autoscalingRunnerSetOwnerIndexValue"""
    return f"{namespace}/{name}"


class ScaleSetActionsClient(Protocol):
    """**Protocol:** the scale set calls of the Actions client (`arc_controllers.actions.ActionsClient` has them).

    Ports: multiclient.Client (the subset the AutoscalingRunnerSet reconciler calls)
    """

    @property
    def system_info(self) -> Any:
        """The client's `SystemInfo` (user agent).

        Ports: scaleset.Client.SystemInfo
        """
        ...

    def set_system_info(self, info: Any, /) -> None:
        """Replace the client's `SystemInfo`.

        Ports: scaleset.Client.SetSystemInfo
        """
        ...

    async def get_runner_group_by_name(self, runner_group: str, /) -> Any:
        """The runner group; raises ``ActionsError`` when there is none or several.

        Ports: multiclient.Client.GetRunnerGroupByName
        """
        ...

    async def get_runner_scale_set(self, runner_group_id: int, name: str, /) -> Any:
        """The scale set of that name in the group, or None.

        Ports: multiclient.Client.GetRunnerScaleSet
        """
        ...

    async def get_runner_scale_set_by_id(self, runner_scale_set_id: int, /) -> Any:
        """The scale set; raises ``ActionsNotFoundError`` when it is gone.

        Ports: multiclient.Client.GetRunnerScaleSetByID
        """
        ...

    async def create_runner_scale_set(self, scale_set: Any, /) -> Any:
        """Register a scale set.

        Ports: multiclient.Client.CreateRunnerScaleSet
        """
        ...

    async def update_runner_scale_set(self, runner_scale_set_id: int, scale_set: Any, /) -> Any:
        """Change a scale set's name or runner group.

        Ports: multiclient.Client.UpdateRunnerScaleSet
        """
        ...

    async def delete_runner_scale_set(self, runner_scale_set_id: int, /) -> None:
        """Remove a scale set; raises ``ActionsNotFoundError`` when it is gone.

        Ports: multiclient.Client.DeleteRunnerScaleSet
        """
        ...


ScaleSetClientFactory = Callable[[Object], Awaitable[ScaleSetActionsClient]]
"""Returns the Actions client for an AutoscalingRunnerSet. Ports: SecretResolver.GetActionsService"""


def _meta(obj: Object) -> dict[str, Any]:
    """Python only: ``obj["metadata"]``, created when missing."""
    meta: dict[str, Any] = obj.setdefault("metadata", {})
    return meta


def _spec(obj: Object) -> dict[str, Any]:
    """Python only: ``obj["spec"]``, or an empty dict."""
    spec: dict[str, Any] = obj.get("spec") or {}
    return spec


def _status(obj: Object) -> dict[str, Any]:
    """Python only: ``obj["status"]``, or an empty dict."""
    status: dict[str, Any] = obj.get("status") or {}
    return status


def _labels(obj: Object) -> dict[str, str]:
    """Python only: a copy of the labels (empty when none)."""
    return dict(_meta(obj).get("labels") or {})


def _annotations(obj: Object) -> dict[str, str]:
    """Python only: a copy of the annotations (empty when none)."""
    return dict(_meta(obj).get("annotations") or {})


def _deleting(obj: Object) -> bool:
    """Python only: whether ``metadata.deletionTimestamp`` is set."""
    return bool(_meta(obj).get("deletionTimestamp"))


def _parse_scale_set_id(ars: Object) -> int:
    """Raises ValueError when the id annotation is missing or not an integer.

    Python only: the ``runner-scale-set-id`` annotation; ValueError when missing or not an integer.
    """
    return int(_annotations(ars).get(constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID, ""), 10)


@dataclass(kw_only=True)
class AutoscalingRunnerSetReconciler:
    """Ports: AutoscalingRunnerSetReconciler"""

    client: Client
    """Reads from the informer cache (secrets uncached), writes to the API server."""

    actions: ScaleSetClientFactory
    """Returns the Actions client of a scale set. Ports: ResourceBuilder.GetActionsService"""

    controller_namespace: str
    """Where listeners live. Ports: ControllerNamespace (env CONTROLLER_MANAGER_POD_NAMESPACE)"""

    default_listener_image: str
    """The listener pods' image. Ports: DefaultRunnerScaleSetListenerImage"""

    default_listener_image_pull_secrets: Sequence[str] = ()
    """Secret names for pulling the listener image; part of every desired listener.
    Ports: DefaultRunnerScaleSetListenerImagePullSecrets"""

    build_options: RunnerBuildOptions = field(default_factory=RunnerBuildOptions)
    """Label propagation exclusions and the build version (the version gate)."""

    listener_options: ListenerBuildOptions = field(default_factory=ListenerBuildOptions)
    """Label propagation exclusions for the listener."""

    async def reconcile(self, request: Request, /) -> Result:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile

        Go's guards in Go's order; each branch is a method below.
        """
        try:
            ars = await self.client.get(AUTOSCALING_RUNNER_SET, request.key)
        except NotFoundError:
            return Result()

        if _deleting(ars):
            return await self._finalize(ars)
        version = _labels(ars).get(constants.LABEL_KEY_KUBERNETES_VERSION, "")
        if not is_version_allowed(version, self.build_options.build_version):
            return await self._delete_disallowed_version(ars)
        if not contains_finalizer(ars, constants.AUTOSCALING_RUNNER_SET_FINALIZER_NAME):
            return await self._add_finalizer(ars)

        if _status(ars).get("phase") == PHASE_OUTDATED:
            if not await self._outdated_runner_spec_corrected(ars):
                return await self._reconcile_outdated(ars)
            await self._update_status(ars, PHASE_PENDING)
        if int(_meta(ars).get("generation") or 0) > int(_status(ars).get("observedGeneration") or 0):
            await self._update_status(ars, PHASE_PENDING)

        if self._should_create_scale_set(ars):
            return await self._create_runner_scale_set(ars)
        if self._runner_group_out_of_sync(ars):
            return await self._update_runner_scale_set_runner_group(ars)
        if self._scale_set_name_out_of_sync(ars):
            return await self._update_runner_scale_set_name(ars)

        try:
            runner_set = await self.client.get(
                EPHEMERAL_RUNNER_SET, ObjectKey(_meta(ars)["namespace"], _meta(ars)["name"])
            )
        except NotFoundError:
            return await self._create_ephemeral_runner_set(ars)
        if ephemeral_runner_set_outdated_for_applied_revision(runner_set) and not self._runner_spec_changed(
            ars, runner_set
        ):
            await self._update_status(ars, PHASE_OUTDATED)
            return await self._reconcile_outdated(ars)
        try:
            desired_set = new_ephemeral_runner_set(ars, options=self.build_options)
        except ValueError as err:
            log.error("could not build the desired EphemeralRunnerSet", error=str(err))
            return Result()
        if self._needs_new_revision(runner_set, desired_set):
            return await self._publish_runner_spec(runner_set, desired_set)
        if self._runner_set_metadata_drifted(runner_set, desired_set):
            return await self._update_runner_set_metadata(runner_set, desired_set)

        if await self._delete_renamed_listeners(ars):
            return Result()
        try:
            listener = await self.client.get(
                AUTOSCALING_LISTENER, ObjectKey(self.controller_namespace, scale_set_listener_name(ars))
            )
        except NotFoundError:
            if await self._runner_scale_set_gone(ars):
                return await self._create_runner_scale_set(ars)
            return await self._create_listener(ars, runner_set)
        result = await self._reconcile_listener(ars, runner_set, listener)
        if result is not None:
            return result

        await self._update_status(ars, PHASE_RUNNING, observed_generation=int(_meta(ars).get("generation") or 0))
        return Result()

    # -- lifecycle -----------------------------------------------------------------

    async def _add_finalizer(self, ars: Object) -> Result:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile, the "add finalizer" branch"""
        async with merge_patch(self.client, ars) as obj:
            add_finalizer(obj, constants.AUTOSCALING_RUNNER_SET_FINALIZER_NAME)
        log.info("added finalizer", autoscalingrunnerset=_meta(ars)["name"])
        return Result()

    async def _delete_disallowed_version(self, ars: Object) -> Result:
        """Delete a scale set labelled with a version this build may not manage; errors are only logged.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the version-gate branch
        """
        log.info("autoscaling runner set version does not match the build version; deleting it")
        try:
            await self.client.delete(ars)
        except Exception as err:  # Go logs the failure and returns no error
            log.error("failed to delete autoscaling runner set on version mismatch", error=str(err))
        return Result()

    async def _finalize(self, ars: Object) -> Result:
        """Listener(s), runner set and registered scale set first; then the dependents' finalizers, then ours.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the deletion branch
        """
        if not contains_finalizer(ars, constants.AUTOSCALING_RUNNER_SET_FINALIZER_NAME):
            return Result()
        if not await self._clean_up_resources(ars):
            return Result(requeue_after=constants.AUTOSCALING_RUNNER_SET_DELETION_REQUEUE)
        await self._remove_finalizers_from_dependent_resources(ars)
        try:
            async with merge_patch(self.client, ars) as obj:
                remove_finalizer(obj, constants.AUTOSCALING_RUNNER_SET_FINALIZER_NAME)
        except NotFoundError:
            pass
        log.info("removed finalizer", autoscalingrunnerset=_meta(ars)["name"])
        return Result()

    async def _clean_up_resources(self, ars: Object) -> bool:
        """True once no listener, no runner set and no registered scale set remain.

        Ports: AutoscalingRunnerSetReconciler.cleanUpResources
        """
        if not await self._cleanup_listener(ars):
            return False
        if not await self._cleanup_ephemeral_runner_set(ars):
            return False
        await self._delete_runner_scale_set(ars)
        return True

    async def _cleanup_listener(self, ars: Object) -> bool:
        """Delete every listener of this scale set, whatever its name; done when none is left.

        Ports: AutoscalingRunnerSetReconciler.cleanupListener
        """
        listeners = await self._listeners_of(ars)
        if not listeners:
            return True
        for listener in listeners:
            if not _deleting(listener):
                await self._delete_ignoring_not_found(listener)
        return False

    async def _cleanup_ephemeral_runner_set(self, ars: Object) -> bool:
        """Ports: AutoscalingRunnerSetReconciler.cleanUpResources, the EphemeralRunnerSet step"""
        try:
            runner_set = await self.client.get(
                EPHEMERAL_RUNNER_SET, ObjectKey(_meta(ars)["namespace"], _meta(ars)["name"])
            )
        except NotFoundError:
            return True
        if not _deleting(runner_set):
            await self._delete_ignoring_not_found(runner_set)
        return False

    async def _delete_runner_scale_set(self, ars: Object) -> None:
        """Unregister the scale set; a scale set already gone counts as deleted, then drop the id annotation.

        Ports: AutoscalingRunnerSetReconciler.deleteRunnerScaleSet
        """
        raw = _annotations(ars).get(constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID)
        if raw is None:
            return
        try:
            scale_set_id = int(raw, 10)
        except ValueError:
            log.info("scale set id annotation is not an integer; nothing to delete", value=raw)
            return
        client = await self.actions(ars)
        try:
            await client.delete_runner_scale_set(scale_set_id)
        except Exception as err:
            if not is_actions_not_found(err):
                raise
            log.info("runner scale set already deleted", runner_scale_set_id=scale_set_id)
        async with merge_patch(self.client, ars) as obj:
            _meta(obj).get("annotations", {}).pop(constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID, None)
        log.info("deleted runner scale set", runner_scale_set_id=scale_set_id)

    async def _remove_finalizers_from_dependent_resources(self, ars: Object) -> None:
        """Take ``actions.github.com/cleanup-protection`` off the chart's objects, in Go's order.

        The first failure stops the chain.

        Ports: AutoscalingRunnerSetReconciler.removeFinalizersFromDependentResources
        """
        chain = (
            (ROLE_BINDING, constants.ANNOTATION_KEY_KUBERNETES_MODE_ROLE_BINDING_NAME),
            (ROLE, constants.ANNOTATION_KEY_KUBERNETES_MODE_ROLE_NAME),
            (SERVICE_ACCOUNT, constants.ANNOTATION_KEY_KUBERNETES_MODE_SERVICE_ACCOUNT_NAME),
            (SERVICE_ACCOUNT, constants.ANNOTATION_KEY_NO_PERMISSION_SERVICE_ACCOUNT_NAME),
            (SECRET, constants.ANNOTATION_KEY_GITHUB_SECRET_NAME),
            (ROLE_BINDING, constants.ANNOTATION_KEY_MANAGER_ROLE_BINDING_NAME),
            (ROLE, constants.ANNOTATION_KEY_MANAGER_ROLE_NAME),
        )
        for gvk, annotation in chain:
            await self._remove_dependent_finalizer(ars, gvk, annotation)

    async def _remove_dependent_finalizer(self, ars: Object, gvk: GroupVersionKind, annotation: str) -> None:
        """Ports: the body shared by autoscalingRunnerSetFinalizerDependencyCleaner's remove*Finalizer methods"""
        name = _annotations(ars).get(annotation)
        if not name:
            return
        try:
            dependent = await self.client.get(gvk, ObjectKey(_meta(ars)["namespace"], name))
        except NotFoundError:
            return
        except ForbiddenError:
            if gvk != SECRET:
                raise
            log.info("not allowed to read the GitHub secret; skipping its finalizer", secret=name)
            return
        if not contains_finalizer(dependent, constants.AUTOSCALING_RUNNER_SET_CLEANUP_FINALIZER_NAME):
            return
        async with merge_patch(self.client, dependent) as obj:
            remove_finalizer(obj, constants.AUTOSCALING_RUNNER_SET_CLEANUP_FINALIZER_NAME)
        log.info("removed cleanup finalizer", kind=gvk.kind, name=name)

    # -- status ----------------------------------------------------------------------

    async def _update_status(self, ars: Object, phase: str, *, observed_generation: int | None = None) -> None:
        """Write ``phase`` and ``observedGeneration`` (kept as is when None); no request when both hold.

        Ports: AutoscalingRunnerSetReconciler.updateStatus
        """
        status = _status(ars)
        generation = int(status.get("observedGeneration") or 0) if observed_generation is None else observed_generation
        if status.get("phase") == phase and int(status.get("observedGeneration") or 0) == generation:
            return
        async with merge_patch(self.client, ars, status=True) as obj:
            new = obj.setdefault("status", {})
            new["phase"] = phase
            new["observedGeneration"] = generation

    # -- the scale set on the Actions service -------------------------------------

    @staticmethod
    def _should_create_scale_set(ars: Object) -> bool:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile, the shouldCreateScaleSet test"""
        try:
            return _parse_scale_set_id(ars) <= 0
        except ValueError:
            return True

    @staticmethod
    def _runner_group_out_of_sync(ars: Object) -> bool:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile, the runner-group annotation test"""
        annotations = _annotations(ars)
        if constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME not in annotations:
            return True
        wanted = _spec(ars).get("runnerGroup") or ""
        current = annotations[constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME]
        return bool(wanted) and wanted.lower() != current.lower()

    @staticmethod
    def _scale_set_name_out_of_sync(ars: Object) -> bool:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile, the scale-set-name annotation test"""
        annotations = _annotations(ars)
        if constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME not in annotations:
            return True
        wanted = _spec(ars).get("runnerScaleSetName") or ""
        current = annotations[constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME]
        return bool(wanted) and wanted.lower() != current.lower()

    async def _runner_group_id(self, client: ScaleSetActionsClient, ars: Object) -> int:
        """Python only: group 1 ("Default") unless ``spec.runnerGroup`` names one."""
        group = _spec(ars).get("runnerGroup") or ""
        if not group:
            return constants.DEFAULT_RUNNER_GROUP_ID
        found = await client.get_runner_group_by_name(group)
        return int(found.id)

    async def _create_runner_scale_set(self, ars: Object) -> Result:
        """Find or register the scale set, then record its id, name and group on the AutoscalingRunnerSet.

        An empty ``spec.runnerScaleSetName`` is defaulted to the object's name in the
        same patch, which bumps ``metadata.generation`` (one more Pending→Running cycle).

        Ports: AutoscalingRunnerSetReconciler.createRunnerScaleSet
        """
        from arc_controllers.actions.types import Label, RunnerScaleSet, RunnerSetting

        async with merge_patch(self.client, ars) as obj:
            client = await self.actions(obj)
            spec = obj.setdefault("spec", {})
            if not spec.get("runnerScaleSetName"):
                spec["runnerScaleSetName"] = _meta(obj)["name"]
            name = spec["runnerScaleSetName"]
            group_id = await self._runner_group_id(client, obj)
            scale_set = await client.get_runner_scale_set(group_id, name)
            if scale_set is None:
                labels = [Label(name=name, type="System")]
                seen = {name}
                for extra in spec.get("runnerScaleSetLabels") or []:
                    if extra in seen:
                        continue
                    seen.add(extra)
                    labels.append(Label(name=extra, type="System"))
                scale_set = await client.create_runner_scale_set(
                    RunnerScaleSet(
                        name=name,
                        runner_group_id=group_id,
                        labels=labels,
                        runner_setting=RunnerSetting(disable_update=True),
                    )
                )
                log.info("created runner scale set", runner_scale_set_id=scale_set.id, name=name)
            client.set_system_info(dataclasses.replace(client.system_info, scale_set_id=int(scale_set.id)))
            annotations = _meta(obj).setdefault("annotations", {})
            annotations[constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME] = scale_set.name
            annotations[constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID] = str(scale_set.id)
            annotations[constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME] = scale_set.runner_group_name
            labels_map = _meta(obj).setdefault("labels", {})
            apply_github_url_labels(spec.get("githubConfigUrl", ""), labels_map)
        return Result()

    async def _update_runner_scale_set_runner_group(self, ars: Object) -> Result:
        """Move the scale set to ``spec.runnerGroup`` and record the group and name the service answers.

        Ports: AutoscalingRunnerSetReconciler.updateRunnerScaleSetRunnerGroup
        """
        from arc_controllers.actions.types import RunnerScaleSet

        scale_set_id = _parse_scale_set_id(ars)
        client = await self.actions(ars)
        group_id = await self._runner_group_id(client, ars)
        updated = await client.update_runner_scale_set(scale_set_id, RunnerScaleSet(runner_group_id=group_id))
        async with merge_patch(self.client, ars) as obj:
            annotations = _meta(obj).setdefault("annotations", {})
            annotations[constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME] = updated.runner_group_name
            annotations[constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME] = updated.name
        log.info("updated runner scale set runner group", runner_group=updated.runner_group_name)
        return Result()

    async def _update_runner_scale_set_name(self, ars: Object) -> Result:
        """Rename the scale set to ``spec.runnerScaleSetName`` (nothing to do when it is empty).

        Ports: AutoscalingRunnerSetReconciler.updateRunnerScaleSetName
        """
        from arc_controllers.actions.types import RunnerScaleSet

        scale_set_id = _parse_scale_set_id(ars)
        name = _spec(ars).get("runnerScaleSetName") or ""
        if not name:
            log.info("runner scale set name is not specified; skipping the update")
            return Result()
        client = await self.actions(ars)
        updated = await client.update_runner_scale_set(scale_set_id, RunnerScaleSet(name=name))
        async with merge_patch(self.client, ars) as obj:
            _meta(obj).setdefault("annotations", {})[constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME] = (
                updated.name
            )
        log.info("updated runner scale set name", name=updated.name)
        return Result()

    async def _runner_scale_set_gone(self, ars: Object) -> bool:
        """True only when the service says the scale set does not exist (never on a transient error).

        Ports: AutoscalingRunnerSetReconciler.runnerScaleSetGone
        """
        client = await self.actions(ars)
        try:
            await client.get_runner_scale_set_by_id(_parse_scale_set_id(ars))
        except Exception as err:
            if is_actions_not_found(err):
                log.info("runner scale set is gone from the service; registering it again")
                return True
            raise
        return False

    # -- the EphemeralRunnerSet ---------------------------------------------------

    async def _create_ephemeral_runner_set(self, ars: Object) -> Result:
        """Ports: AutoscalingRunnerSetReconciler.createEphemeralRunnerSet

        Differs: an AlreadyExists answer (a cache that had not seen our own create) is
        not an error; the set's create event reconciles again.
        """
        desired = new_ephemeral_runner_set(ars, options=self.build_options)
        try:
            await self.client.create(desired)
        except AlreadyExistsError:
            log.info("ephemeral runner set exists already; waiting for the cache")
            return Result()
        log.info("created ephemeral runner set", ephemeralrunnerset=desired["metadata"]["name"])
        return Result()

    def _runner_spec_changed(self, ars: Object, runner_set: Object) -> bool:
        """A build failure counts as unchanged. Ports: AutoscalingRunnerSetReconciler.runnerSpecChanged"""
        try:
            desired = new_ephemeral_runner_set(ars, options=self.build_options)
        except ValueError:
            return False
        return ephemeral_runner_set_desired_spec_changed(runner_set, desired)

    async def _outdated_runner_spec_corrected(self, ars: Object) -> bool:
        """While parked: did the runner spec or runner metadata change (or is the set gone)?

        Ports: AutoscalingRunnerSetReconciler.outdatedRunnerSpecCorrected
        """
        try:
            runner_set = await self.client.get(
                EPHEMERAL_RUNNER_SET, ObjectKey(_meta(ars)["namespace"], _meta(ars)["name"])
            )
        except NotFoundError:
            return True
        return self._runner_spec_changed(ars, runner_set)

    @staticmethod
    def _needs_new_revision(runner_set: Object, desired: Object) -> bool:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile, the actionable-change / recovering test"""
        recovering = ephemeral_runner_set_outdated_for_applied_revision(
            runner_set
        ) and ephemeral_runner_set_desired_spec_changed(runner_set, desired)
        return ephemeral_runner_set_actionable_spec_changed(runner_set, desired) or recovering

    def _merged_metadata(self, live: Object, desired: Object) -> tuple[dict[str, str], dict[str, str]]:
        """Python only: desired labels/annotations merged over the live ones (foreign keys survive, #4634)."""
        labels = filter_and_merge_labels(
            _meta(live).get("labels"),
            _meta(desired).get("labels"),
            self.build_options.exclude_label_propagation_prefixes,
        )
        annotations = merge_annotations(_meta(live).get("annotations"), _meta(desired).get("annotations"))
        return labels or {}, annotations or {}

    async def _publish_runner_spec(self, runner_set: Object, desired: Object) -> Result:
        """Patch the new runner spec and metadata onto the set with the next actionable revision.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the actionable-change branch
        """
        labels, annotations = self._merged_metadata(runner_set, desired)
        revision = next_actionable_revision(runner_set)
        async with merge_patch(self.client, runner_set) as obj:
            spec = obj.setdefault("spec", {})
            want = _spec(desired)
            if want.get("ephemeralRunnerMetadata") is None:
                spec.pop("ephemeralRunnerMetadata", None)
            else:
                spec["ephemeralRunnerMetadata"] = copy.deepcopy(want["ephemeralRunnerMetadata"])
            spec["ephemeralRunnerSpec"] = copy.deepcopy(want["ephemeralRunnerSpec"])
            spec["actionableRevision"] = revision
            _meta(obj)["labels"] = labels
            _meta(obj)["annotations"] = annotations
        log.info("published runner spec", ephemeralrunnerset=_meta(runner_set)["name"], actionable_revision=revision)
        return Result()

    def _runner_set_metadata_drifted(self, runner_set: Object, desired: Object) -> bool:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile, the metadata-drift test (#4695)"""
        labels, annotations = self._merged_metadata(runner_set, desired)
        if labels != _labels(runner_set) or annotations != _annotations(runner_set):
            return True
        live_meta = _spec(runner_set).get("ephemeralRunnerMetadata")
        want_meta = _spec(desired).get("ephemeralRunnerMetadata")
        return ephemeral_runner_set_desired_spec_changed(
            {"spec": {"ephemeralRunnerMetadata": live_meta}}, {"spec": {"ephemeralRunnerMetadata": want_meta}}
        )

    async def _update_runner_set_metadata(self, runner_set: Object, desired: Object) -> Result:
        """Labels, annotations and runner metadata only; no revision bump (it affects new runners only).

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the metadata-drift branch
        """
        labels, annotations = self._merged_metadata(runner_set, desired)
        async with merge_patch(self.client, runner_set) as obj:
            _meta(obj)["labels"] = labels
            _meta(obj)["annotations"] = annotations
            want = _spec(desired).get("ephemeralRunnerMetadata")
            spec = obj.setdefault("spec", {})
            if want is None:
                spec.pop("ephemeralRunnerMetadata", None)
            else:
                spec["ephemeralRunnerMetadata"] = copy.deepcopy(want)
        log.info("updated ephemeral runner set metadata", ephemeralrunnerset=_meta(runner_set)["name"])
        return Result()

    # -- listeners ----------------------------------------------------------------

    async def _listeners_of(self, ars: Object) -> list[Object]:
        """Python only: every listener of this scale set, by the index, whatever its name."""
        meta = _meta(ars)
        listed = await self.client.list(
            AUTOSCALING_LISTENER,
            namespace=self.controller_namespace,
            fields={
                AUTOSCALING_RUNNER_SET_OWNER_KEY: autoscaling_runner_set_owner_index_value(
                    meta["namespace"], meta["name"]
                )
            },
        )
        return list(listed.items)

    def _desired_listener(self, ars: Object, runner_set: Object) -> Object:
        """Python only: the desired listener with this controller's namespace, image and pull secrets."""
        return new_autoscaling_listener(
            ars,
            runner_set,
            namespace=self.controller_namespace,
            image=self.default_listener_image,
            image_pull_secrets=[{"name": name} for name in self.default_listener_image_pull_secrets],
            options=self.listener_options,
        )

    async def _delete_ignoring_not_found(self, obj: Object) -> None:
        """Python only: delete ``obj``; already gone is fine."""
        try:
            await self.client.delete(obj)
        except NotFoundError:
            pass

    async def _delete_renamed_listeners(self, ars: Object) -> bool:
        """Delete listeners left under an old name (runner group or URL edited); True when any existed.

        A rename is a replacement, never two listeners at once: the caller waits for the
        deletions before creating the new one.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the renamed-listener block
        """
        current = scale_set_listener_name(ars)
        renamed = [listener for listener in await self._listeners_of(ars) if _meta(listener)["name"] != current]
        for listener in renamed:
            if not _deleting(listener):
                log.info("deleting renamed listener", autoscalinglistener=_meta(listener)["name"])
                await self._delete_ignoring_not_found(listener)
        return bool(renamed)

    async def _create_listener(self, ars: Object, runner_set: Object) -> Result:
        """Ports: AutoscalingRunnerSetReconciler.createAutoScalingListenerForRunnerSet

        Differs: AlreadyExists (a cache behind our own create) is not an error.
        """
        desired = self._desired_listener(ars, runner_set)
        try:
            await self.client.create(desired)
        except AlreadyExistsError:
            log.info("listener exists already; waiting for the cache")
            return Result()
        log.info("created listener", autoscalinglistener=desired["metadata"]["name"])
        return Result()

    async def _reconcile_listener(self, ars: Object, runner_set: Object, listener: Object) -> Result | None:
        """Rebuild a drifted listener (Pending meanwhile) or restart a stopped one; None when it is as wanted.

        The drift check comes first, so a parked listener whose spec changed is rebuilt
        rather than restarted with stale config.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the existing-listener branch
        """
        try:
            desired = self._desired_listener(ars, runner_set)
        except ValueError as err:
            log.error("could not build the desired listener", error=str(err))
            return Result()
        if (
            listener_spec_changed(listener, desired)
            or _labels(listener) != _labels(desired)
            or _annotations(listener) != _annotations(desired)
        ):
            await self._update_status(ars, PHASE_PENDING)
            log.info("listener is out of date; deleting it", autoscalinglistener=_meta(listener)["name"])
            await self._delete_ignoring_not_found(listener)
            return Result()
        if _spec(listener).get("phase") == LISTENER_PHASE_STOPPED:
            async with merge_patch(self.client, listener) as obj:
                obj.setdefault("spec", {})["phase"] = LISTENER_PHASE_RUNNING
            log.info("restarted stopped listener", autoscalinglistener=_meta(listener)["name"])
            return Result()
        return None

    # -- parking (Outdated) -------------------------------------------------------

    async def _reconcile_outdated(self, ars: Object) -> Result:
        """Keep a parked scale set parked: listeners stopped, the runner set pinned to zero runners.

        Edits that are not a recovery signal (min/max runners, names, labels) still reach
        the stopped listener and the runner set's labels and annotations.

        Ports: AutoscalingRunnerSetReconciler.reconcileOutdated
        """
        await self._stop_listener(ars)
        try:
            runner_set = await self.client.get(
                EPHEMERAL_RUNNER_SET, ObjectKey(_meta(ars)["namespace"], _meta(ars)["name"])
            )
        except NotFoundError:
            return Result()
        if _deleting(runner_set):
            return Result()
        await self._propagate_to_stopped_listener(ars, runner_set)
        desired = new_ephemeral_runner_set(ars, options=self.build_options)
        labels, annotations = self._merged_metadata(runner_set, desired)
        spec = _spec(runner_set)
        pinned = int(spec.get("replicas") or 0) == 0 and int(spec.get("patchID") or 0) == 0
        if pinned and labels == _labels(runner_set) and annotations == _annotations(runner_set):
            return Result()
        async with merge_patch(self.client, runner_set) as obj:
            obj.setdefault("spec", {})["replicas"] = 0
            obj["spec"]["patchID"] = 0
            _meta(obj)["labels"] = labels
            _meta(obj)["annotations"] = annotations
        log.info("pinned outdated ephemeral runner set to zero", ephemeralrunnerset=_meta(runner_set)["name"])
        return Result()

    async def _stop_listener(self, ars: Object) -> None:
        """Set ``spec.phase: Stopped`` on every listener of this scale set.

        Ports: AutoscalingRunnerSetReconciler.stopListener
        """
        for listener in await self._listeners_of(ars):
            if _deleting(listener) or _spec(listener).get("phase") == LISTENER_PHASE_STOPPED:
                continue
            async with merge_patch(self.client, listener) as obj:
                obj.setdefault("spec", {})["phase"] = LISTENER_PHASE_STOPPED
            log.info("stopped listener", autoscalinglistener=_meta(listener)["name"])

    async def _propagate_to_stopped_listener(self, ars: Object, runner_set: Object) -> None:
        """Carry non-recovery edits to the stopped listener; replace a renamed one by a stopped one.

        Ports: AutoscalingRunnerSetReconciler.propagateToStoppedListener
        """
        listeners = await self._listeners_of(ars)
        if not listeners:
            return
        name = scale_set_listener_name(ars)
        current = next((item for item in listeners if _meta(item)["name"] == name), None)
        renamed = [item for item in listeners if _meta(item)["name"] != name]
        if current is None:
            await self._create_stopped_listener(ars, runner_set)
        elif not _deleting(current):
            desired = self._desired_listener(ars, runner_set)
            labels = filter_and_merge_labels(
                _meta(current).get("labels"),
                _meta(desired).get("labels"),
                self.listener_options.exclude_label_propagation_prefixes,
            )
            annotations = merge_annotations(_meta(current).get("annotations"), _meta(desired).get("annotations"))
            unchanged = (
                not listener_spec_changed(current, desired)
                and (labels or {}) == _labels(current)
                and (annotations or {}) == _annotations(current)
            )
            if not unchanged:
                async with merge_patch(self.client, current) as obj:
                    spec = copy.deepcopy(_spec(desired))
                    spec["phase"] = LISTENER_PHASE_STOPPED
                    obj["spec"] = spec
                    _meta(obj)["labels"] = labels or {}
                    _meta(obj)["annotations"] = annotations or {}
                log.info("updated stopped listener", autoscalinglistener=name)
        for listener in renamed:
            if not _deleting(listener):
                await self._delete_ignoring_not_found(listener)

    async def _create_stopped_listener(self, ars: Object, runner_set: Object) -> None:
        """Ports: AutoscalingRunnerSetReconciler.createStoppedListener"""
        desired = copy.deepcopy(self._desired_listener(ars, runner_set))
        desired["spec"]["phase"] = LISTENER_PHASE_STOPPED
        try:
            await self.client.create(desired)
        except AlreadyExistsError:
            return
        log.info("created stopped listener", autoscalinglistener=desired["metadata"]["name"])
