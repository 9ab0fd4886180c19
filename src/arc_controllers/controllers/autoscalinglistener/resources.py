"""The objects a listener runs on, read, created and kept in their desired labels and annotations.

Every child is created when missing and otherwise has the desired labels and annotations
merged over its own (foreign keys survive); the Role's rules are kept too.

Ports: the metadata-update blocks of AutoscalingListenerReconciler.Reconcile (ServiceAccount,
Role, RoleBinding, proxy secret, pod)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from arc_controllers.api.v1alpha1 import objects
from arc_controllers.api.v1alpha1.equality import semantic_equal
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.resourcebuilder.labels import filter_and_merge_labels, merge_annotations
from arc_controllers.resourcebuilder.listener import ListenerBuildOptions
from reconcilekit.client.interfaces import Client, GroupVersionKind, Object, ObjectKey
from reconcilekit.errors import NotFoundError
from reconcilekit.reconcile import Result

__all__ = ["ListenerResources"]

log = structlog.get_logger("AutoscalingListener")  # Go's logr name for this reconciler


@dataclass(frozen=True, kw_only=True)
class ListenerResources:
    """Python only: reads, creates and patches the listener's children."""

    client: Client
    """Reads from the informer cache (secrets and config maps uncached), writes to the API server."""

    options: ListenerBuildOptions = field(default_factory=ListenerBuildOptions)
    """Label propagation exclusions."""

    async def get(self, gvk: GroupVersionKind, namespace: str, name: str) -> Object | None:
        """Python only: the object, or None when it does not exist."""
        try:
            return await self.client.get(gvk, ObjectKey(namespace, name))
        except NotFoundError:
            return None

    async def create(self, desired: Object) -> Result:
        """Python only: create a watched child; its create event brings the next step."""
        await self.client.create(desired)
        log.info("created listener resource", kind=desired["kind"], name=desired["metadata"]["name"])
        return Result()

    def merged(self, live: Object, desired: Object) -> tuple[dict[str, str], dict[str, str]]:
        """Python only: desired labels and annotations merged over the live ones (foreign keys survive)."""
        labels = filter_and_merge_labels(
            objects.meta(live).get("labels"),
            objects.meta(desired).get("labels"),
            self.options.exclude_label_propagation_prefixes,
        )
        annotations = merge_annotations(objects.meta(live).get("annotations"), objects.meta(desired).get("annotations"))
        return labels or {}, annotations or {}

    def metadata_differs(self, live: Object, desired: Object) -> bool:
        """Python only: whether merged labels/annotations differ from the live ones."""
        labels, annotations = self.merged(live, desired)
        return labels != objects.labels(live) or annotations != objects.annotations(live)

    async def update_metadata(self, live: Object, desired: Object) -> Result:
        """Patch merged labels and annotations onto ``live`` (the caller saw them differ).

        Ports: the metadata-update blocks of AutoscalingListenerReconciler.Reconcile
        """
        labels, annotations = self.merged(live, desired)
        lazy = LazyCopy(live)
        meta = objects.mutable_meta(lazy.mutate())
        meta["labels"] = labels
        meta["annotations"] = annotations
        await self.client.patch(live, lazy.merge_from())
        log.info("updated listener resource metadata", kind=live.get("kind"), name=objects.name(live))
        return Result()

    def role_drifted(self, role: Object, desired: Object) -> bool:
        """Labels, annotations or rules (semantic, #4695) differ.

        Ports: AutoscalingListenerReconciler.Reconcile, the Role update test
        """
        return not semantic_equal(role.get("rules"), desired.get("rules")) or self.metadata_differs(role, desired)

    async def update_role(self, role: Object, desired: Object) -> Result:
        """Patch merged labels and annotations, and the rules when they differ.

        Ports: AutoscalingListenerReconciler.Reconcile, the Role update block
        """
        rules_modified = not semantic_equal(role.get("rules"), desired.get("rules"))
        labels, annotations = self.merged(role, desired)
        lazy = LazyCopy(role)
        live = lazy.mutate()
        objects.mutable_meta(live)["labels"] = labels
        objects.mutable_meta(live)["annotations"] = annotations
        if rules_modified:
            live["rules"] = desired["rules"]
        await self.client.patch(role, lazy.merge_from())
        log.info("updated listener role", role=objects.name(role))
        return Result()
