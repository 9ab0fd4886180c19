"""Publishing the runner spec: the one EphemeralRunnerSet of a scale set, named like it (or adopted from Go 0.14.2).

A runner spec that really changed is published with the next ``spec.actionableRevision``;
labels, annotations and runner metadata that drifted are patched without one (they affect
new runners only). ``replicas`` and ``patchID`` belong to the listener and are never written
here (parking pins them, see `parking`).

Ports: AutoscalingRunnerSetReconciler.createEphemeralRunnerSet, runnerSpecChanged,
outdatedRunnerSpecCorrected and the runner-set branches of Reconcile
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field

import structlog

from arc_controllers.api.v1alpha1 import EPHEMERAL_RUNNER_SET, objects
from arc_controllers.controllers.autoscalingrunnerset.listener import delete_ignoring_not_found
from arc_controllers.controllers.helpers import (
    ephemeral_runner_set_actionable_spec_changed,
    ephemeral_runner_set_desired_spec_changed,
    ephemeral_runner_set_outdated_for_applied_revision,
    next_actionable_revision,
)
from arc_controllers.controllers.indexers import RESOURCE_OWNER_KEY
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.resourcebuilder.labels import filter_and_merge_labels, merge_annotations
from arc_controllers.resourcebuilder.runner import RunnerBuildOptions
from arc_controllers.resourcebuilder.runnerset import new_ephemeral_runner_set
from reconcilekit.client.interfaces import Client, Object, ObjectKey
from reconcilekit.errors import AlreadyExistsError, NotFoundError
from reconcilekit.reconcile import Result

__all__ = ["RunnerSetPublisher", "merged_metadata", "needs_new_revision", "newest_runner_set"]

log = structlog.get_logger("AutoscalingRunnerSet")  # Go's logr name for this reconciler


def newest_runner_set(runner_sets: Iterable[Object]) -> Object | None:
    """The newest by ``metadata.creationTimestamp`` (RFC 3339, seconds; ties: the greater name), or None.

    Beyond: ARC #4638; Go 0.14.2's rule for its generated-name sets (``EphemeralRunnerSets.latest``).
    """
    return max(
        runner_sets, key=lambda s: (str(objects.meta(s).get("creationTimestamp") or ""), objects.name(s)), default=None
    )


def needs_new_revision(runner_set: Object, desired: Object) -> bool:
    """Ports: AutoscalingRunnerSetReconciler.Reconcile, the actionable-change / recovering test"""
    recovering = ephemeral_runner_set_outdated_for_applied_revision(
        runner_set
    ) and ephemeral_runner_set_desired_spec_changed(runner_set, desired)
    return ephemeral_runner_set_actionable_spec_changed(runner_set, desired) or recovering


def merged_metadata(
    live: Object, desired: Object, excluded_label_prefixes: tuple[str, ...]
) -> tuple[dict[str, str], dict[str, str]]:
    """Python only: desired labels/annotations merged over the live ones (foreign keys survive, #4634)."""
    labels = filter_and_merge_labels(
        objects.meta(live).get("labels"), objects.meta(desired).get("labels"), excluded_label_prefixes
    )
    annotations = merge_annotations(objects.meta(live).get("annotations"), objects.meta(desired).get("annotations"))
    return labels or {}, annotations or {}


def _set_runner_metadata(spec: dict[str, object], desired: Object) -> None:
    """Python only: ``spec.ephemeralRunnerMetadata`` as the desired set has it (absent when it has none)."""
    want = objects.spec(desired).get("ephemeralRunnerMetadata")
    if want is None:
        spec.pop("ephemeralRunnerMetadata", None)
    else:
        spec["ephemeralRunnerMetadata"] = copy.deepcopy(want)


@dataclass(frozen=True, kw_only=True)
class RunnerSetPublisher:
    """Python only: reads and writes the scale set's EphemeralRunnerSet."""

    client: Client
    """Reads from the informer cache, writes to the API server."""

    build_options: RunnerBuildOptions = field(default_factory=RunnerBuildOptions)
    """Label propagation exclusions and the build version."""

    async def get(self, ars: Object) -> Object | None:
        """The scale set's EphemeralRunnerSet: the one named like it, else the newest it controls, or None.

        The fallback lists the sets by the controller-owner index and takes the newest by
        creation time (ties by name), Go 0.14.2's ``EphemeralRunnerSets.latest`` rule; older
        ones are left alone (`newest_runner_set`).

        Beyond: ARC #4638; a set Go ARC 0.14.2 created as ``<scale set>-xxxxx`` is adopted, not duplicated.
        """
        namespace, name = objects.namespace(ars), objects.name(ars)
        try:
            return await self.client.get(EPHEMERAL_RUNNER_SET, ObjectKey(namespace, name))
        except NotFoundError:
            pass
        owned = await self.client.list(EPHEMERAL_RUNNER_SET, namespace=namespace, fields={RESOURCE_OWNER_KEY: name})
        return newest_runner_set(owned.items)

    async def delete_older(self, ars: Object, current: Object) -> None:
        """Delete every other EphemeralRunnerSet the scale set controls; each drains through its finalizer.

        Only Go ARC 0.14.2 left such sets (a new one per runner spec, the old one at replicas 0,
        deleted once the new one was in place). Deleting is safe for busy runners: the set's
        finalizer removes idle runners and waits for busy ones to finish their job. Never
        scaled, nothing else touches them.

        Beyond: ARC #4638; the old-set cleanup Go 0.14.2 did on its own sets (``existingRunnerSets.old``).
        """
        owned = await self.client.list(
            EPHEMERAL_RUNNER_SET, namespace=objects.namespace(ars), fields={RESOURCE_OWNER_KEY: objects.name(ars)}
        )
        for runner_set in owned.items:
            if objects.uid(runner_set) != objects.uid(current) and not objects.is_deleting(runner_set):
                log.info("deleting an older ephemeral runner set", ephemeralrunnerset=objects.name(runner_set))
                await delete_ignoring_not_found(self.client, runner_set)

    def desired(self, ars: Object) -> Object | None:
        """Python only: the desired EphemeralRunnerSet; None (logged) when the spec cannot be built."""
        try:
            return new_ephemeral_runner_set(ars, options=self.build_options)
        except ValueError as err:
            log.error("could not build the desired EphemeralRunnerSet", error=str(err))
            return None

    async def create(self, ars: Object) -> Result:
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

    def runner_spec_changed(self, ars: Object, runner_set: Object) -> bool:
        """A build failure counts as unchanged. Ports: AutoscalingRunnerSetReconciler.runnerSpecChanged"""
        try:
            desired = new_ephemeral_runner_set(ars, options=self.build_options)
        except ValueError:
            return False
        return ephemeral_runner_set_desired_spec_changed(runner_set, desired)

    def rejected(self, ars: Object, runner_set: Object) -> bool:
        """The runners rejected the revision they run, and the runner spec has not changed since.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the park test
        """
        return ephemeral_runner_set_outdated_for_applied_revision(runner_set) and not self.runner_spec_changed(
            ars, runner_set
        )

    async def outdated_runner_spec_corrected(self, ars: Object) -> bool:
        """While parked: did the runner spec or runner metadata change (or is the set gone)?

        Ports: AutoscalingRunnerSetReconciler.outdatedRunnerSpecCorrected
        """
        runner_set = await self.get(ars)
        if runner_set is None:
            return True
        return self.runner_spec_changed(ars, runner_set)

    def merged_metadata(self, live: Object, desired: Object) -> tuple[dict[str, str], dict[str, str]]:
        """Python only: `merged_metadata` with the runner build's label exclusions."""
        return merged_metadata(live, desired, self.build_options.exclude_label_propagation_prefixes)

    async def publish_runner_spec(self, runner_set: Object, desired: Object) -> Result:
        """Patch the new runner spec and metadata onto the set with the next actionable revision.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the actionable-change branch
        """
        labels, annotations = self.merged_metadata(runner_set, desired)
        revision = next_actionable_revision(runner_set)
        lazy = LazyCopy(runner_set)
        live = lazy.mutate()
        spec = live.setdefault("spec", {})
        _set_runner_metadata(spec, desired)
        spec["ephemeralRunnerSpec"] = copy.deepcopy(objects.spec(desired)["ephemeralRunnerSpec"])
        spec["actionableRevision"] = revision
        objects.mutable_meta(live)["labels"] = labels
        objects.mutable_meta(live)["annotations"] = annotations
        await self.client.patch(runner_set, lazy.merge_from())
        log.info("published runner spec", ephemeralrunnerset=objects.name(runner_set), actionable_revision=revision)
        return Result()

    def metadata_drifted(self, runner_set: Object, desired: Object) -> bool:
        """Ports: AutoscalingRunnerSetReconciler.Reconcile, the metadata-drift test (#4695)"""
        labels, annotations = self.merged_metadata(runner_set, desired)
        if labels != objects.labels(runner_set) or annotations != objects.annotations(runner_set):
            return True
        live_meta = objects.spec(runner_set).get("ephemeralRunnerMetadata")
        want_meta = objects.spec(desired).get("ephemeralRunnerMetadata")
        return ephemeral_runner_set_desired_spec_changed(
            {"spec": {"ephemeralRunnerMetadata": live_meta}}, {"spec": {"ephemeralRunnerMetadata": want_meta}}
        )

    async def update_metadata(self, runner_set: Object, desired: Object) -> Result:
        """Labels, annotations and runner metadata only; no revision bump (it affects new runners only).

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the metadata-drift branch
        """
        labels, annotations = self.merged_metadata(runner_set, desired)
        lazy = LazyCopy(runner_set)
        live = lazy.mutate()
        objects.mutable_meta(live)["labels"] = labels
        objects.mutable_meta(live)["annotations"] = annotations
        _set_runner_metadata(live.setdefault("spec", {}), desired)
        await self.client.patch(runner_set, lazy.merge_from())
        log.info("updated ephemeral runner set metadata", ephemeralrunnerset=objects.name(runner_set))
        return Result()
