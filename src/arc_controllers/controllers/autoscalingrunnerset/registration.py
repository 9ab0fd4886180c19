"""The scale set on the Actions service: registered, kept in its runner group and name, unregistered at the end.

The AutoscalingRunnerSet records what the service answered in three annotations (scale set
id, name and runner group); the reconciler compares the spec with them, never with the
service, to decide whether to call it.

Ports: AutoscalingRunnerSetReconciler.createRunnerScaleSet, updateRunnerScaleSetRunnerGroup,
updateRunnerScaleSetName, runnerScaleSetGone and deleteRunnerScaleSet
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import objects
from arc_controllers.controllers.actions_seam import is_actions_not_found
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.resourcebuilder.labels import apply_github_url_labels
from reconcilekit.client.interfaces import Client, Object
from reconcilekit.reconcile import Result

__all__ = [
    "ScaleSetActionsClient",
    "ScaleSetClientFactory",
    "ScaleSetRegistration",
    "runner_group_out_of_sync",
    "scale_set_name_out_of_sync",
    "should_create_scale_set",
]

log = structlog.get_logger("AutoscalingRunnerSet")  # Go's logr name for this reconciler


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


def _parse_scale_set_id(ars: Object) -> int:
    """Raises ValueError when the id annotation is missing or not an integer.

    Python only: the ``runner-scale-set-id`` annotation; ValueError when missing or not an integer.
    """
    return int(objects.annotations(ars).get(constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID, ""), 10)


def should_create_scale_set(ars: Object) -> bool:
    """Ports: AutoscalingRunnerSetReconciler.Reconcile, the shouldCreateScaleSet test"""
    try:
        return _parse_scale_set_id(ars) <= 0
    except ValueError:
        return True


def _out_of_sync(ars: Object, annotation: str, field: str) -> bool:
    """Python only: the annotation is missing, or ``spec.<field>`` is set and differs from it (case aside)."""
    annotations = objects.annotations(ars)
    if annotation not in annotations:
        return True
    wanted = objects.spec(ars).get(field) or ""
    return bool(wanted) and wanted.lower() != annotations[annotation].lower()


def runner_group_out_of_sync(ars: Object) -> bool:
    """Ports: AutoscalingRunnerSetReconciler.Reconcile, the runner-group annotation test"""
    return _out_of_sync(ars, constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME, "runnerGroup")


def scale_set_name_out_of_sync(ars: Object) -> bool:
    """Ports: AutoscalingRunnerSetReconciler.Reconcile, the scale-set-name annotation test"""
    return _out_of_sync(ars, constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME, "runnerScaleSetName")


def _scale_set_labels(name: str, extra: list[str]) -> list[Any]:
    """Python only: the ``System`` labels of a new scale set: its name, then each extra label once."""
    from arc_controllers.actions.types import Label

    labels = [Label(name=name, type="System")]
    seen = {name}
    for label in extra:
        if label in seen:
            continue
        seen.add(label)
        labels.append(Label(name=label, type="System"))
    return labels


@dataclass(frozen=True, kw_only=True)
class ScaleSetRegistration:
    """Python only: the calls to the Actions service and the annotations that record their answers."""

    client: Client
    """Where the AutoscalingRunnerSet patches go."""

    actions: ScaleSetClientFactory
    """Returns the Actions client of a scale set."""

    async def _runner_group_id(self, client: ScaleSetActionsClient, ars: Object) -> int:
        """Python only: group 1 ("Default") unless ``spec.runnerGroup`` names one."""
        group = objects.spec(ars).get("runnerGroup") or ""
        if not group:
            return constants.DEFAULT_RUNNER_GROUP_ID
        found = await client.get_runner_group_by_name(group)
        return int(found.id)

    async def create_runner_scale_set(self, ars: Object) -> Result:
        """Find or register the scale set, then record its id, name and group on the AutoscalingRunnerSet.

        An empty ``spec.runnerScaleSetName`` is defaulted to the object's name in the
        same patch, which bumps ``metadata.generation`` (one more Pending→Running cycle).
        The patch always changes something: the id annotation was missing, invalid or not
        positive, and the service's ids are positive.

        Ports: AutoscalingRunnerSetReconciler.createRunnerScaleSet
        """
        from arc_controllers.actions.types import RunnerScaleSet, RunnerSetting

        lazy = LazyCopy(ars)
        live = lazy.mutate()
        client = await self.actions(ars)
        spec = live.setdefault("spec", {})
        if not spec.get("runnerScaleSetName"):
            spec["runnerScaleSetName"] = objects.name(live)
        name = spec["runnerScaleSetName"]
        group_id = await self._runner_group_id(client, ars)
        scale_set = await client.get_runner_scale_set(group_id, name)
        if scale_set is None:
            scale_set = await client.create_runner_scale_set(
                RunnerScaleSet(
                    name=name,
                    runner_group_id=group_id,
                    labels=_scale_set_labels(name, spec.get("runnerScaleSetLabels") or []),
                    runner_setting=RunnerSetting(disable_update=True),
                )
            )
            log.info("created runner scale set", runner_scale_set_id=scale_set.id, name=name)
        client.set_system_info(dataclasses.replace(client.system_info, scale_set_id=int(scale_set.id)))
        annotations = objects.mutable_meta(live).setdefault("annotations", {})
        annotations[constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME] = scale_set.name
        annotations[constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID] = str(scale_set.id)
        annotations[constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME] = scale_set.runner_group_name
        apply_github_url_labels(spec.get("githubConfigUrl", ""), objects.mutable_meta(live).setdefault("labels", {}))
        await self.client.patch(ars, lazy.merge_from())
        return Result()

    async def _annotate(self, ars: Object, values: Mapping[str, Any]) -> None:
        """Python only: record the service's answer; no request when the annotations hold it already."""
        current = objects.annotations(ars)
        if all(key in current and current[key] == value for key, value in values.items()):
            return
        lazy = LazyCopy(ars)
        objects.mutable_meta(lazy.mutate()).setdefault("annotations", {}).update(values)
        await self.client.patch(ars, lazy.merge_from())

    async def update_runner_scale_set_runner_group(self, ars: Object) -> Result:
        """Move the scale set to ``spec.runnerGroup`` and record the group and name the service answers.

        Ports: AutoscalingRunnerSetReconciler.updateRunnerScaleSetRunnerGroup
        """
        from arc_controllers.actions.types import RunnerScaleSet

        scale_set_id = _parse_scale_set_id(ars)
        client = await self.actions(ars)
        group_id = await self._runner_group_id(client, ars)
        updated = await client.update_runner_scale_set(scale_set_id, RunnerScaleSet(runner_group_id=group_id))
        await self._annotate(
            ars,
            {
                constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME: updated.runner_group_name,
                constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME: updated.name,
            },
        )
        log.info("updated runner scale set runner group", runner_group=updated.runner_group_name)
        return Result()

    async def update_runner_scale_set_name(self, ars: Object) -> Result:
        """Rename the scale set to ``spec.runnerScaleSetName`` (nothing to do when it is empty).

        Ports: AutoscalingRunnerSetReconciler.updateRunnerScaleSetName
        """
        from arc_controllers.actions.types import RunnerScaleSet

        scale_set_id = _parse_scale_set_id(ars)
        name = objects.spec(ars).get("runnerScaleSetName") or ""
        if not name:
            log.info("runner scale set name is not specified; skipping the update")
            return Result()
        client = await self.actions(ars)
        updated = await client.update_runner_scale_set(scale_set_id, RunnerScaleSet(name=name))
        await self._annotate(ars, {constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME: updated.name})
        log.info("updated runner scale set name", name=updated.name)
        return Result()

    async def runner_scale_set_gone(self, ars: Object) -> bool:
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

    async def delete_runner_scale_set(self, ars: Object) -> None:
        """Unregister the scale set; a scale set already gone counts as deleted, then drop the id annotation.

        Ports: AutoscalingRunnerSetReconciler.deleteRunnerScaleSet
        """
        raw = objects.annotations(ars).get(constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID)
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
        lazy = LazyCopy(ars)
        del objects.mutable_meta(lazy.mutate())["annotations"][constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID]
        await self.client.patch(ars, lazy.merge_from())
        log.info("deleted runner scale set", runner_scale_set_id=scale_set_id)
