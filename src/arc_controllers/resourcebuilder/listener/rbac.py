"""The listener's identity and permissions: its ServiceAccount, and a Role and RoleBinding in the scale set's namespace.

The Role and RoleBinding carry no owner (they live in another namespace than the listener);
the ``auto-scaling-listener-*`` labels map their events back to the listener.

Ports: ResourceBuilder.newScaleSetListenerServiceAccount, newScaleSetListenerRole,
newScaleSetListenerRoleBinding and rulesForListenerRole
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import GROUP, objects
from arc_controllers.resourcebuilder.labels import controller_reference, filter_and_merge_labels, merge_annotations
from arc_controllers.resourcebuilder.listener.options import ListenerBuildOptions
from reconcilekit.client.interfaces import Object

__all__ = [
    "new_scale_set_listener_role",
    "new_scale_set_listener_role_binding",
    "new_scale_set_listener_service_account",
    "rules_for_listener_role",
]


def new_scale_set_listener_service_account(listener: Mapping[str, Any], *, options: ListenerBuildOptions) -> Object:
    """The listener's ServiceAccount (same name and namespace), controlled by the listener.

    Labels: the listener's plus scale-set namespace and name; ``spec.serviceAccountMetadata``
    sits underneath. Annotations: that metadata's, else an empty map.

    Ports: ResourceBuilder.newScaleSetListenerServiceAccount
    """
    meta = listener["metadata"]
    spec = objects.spec(listener)
    excluded = options.exclude_label_propagation_prefixes
    labels = filter_and_merge_labels(
        meta.get("labels"),
        {
            constants.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE: spec.get("autoscalingRunnerSetNamespace", ""),
            constants.LABEL_KEY_GITHUB_SCALE_SET_NAME: spec.get("autoscalingRunnerSetName", ""),
        },
        excluded,
    )
    annotations: dict[str, str] | None = {}
    user = spec.get("serviceAccountMetadata")
    if user is not None:
        labels = filter_and_merge_labels(user.get("labels"), labels, excluded)
        annotations = merge_annotations(user.get("annotations"), annotations)
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": labels or {},
            "annotations": annotations or {},
            "ownerReferences": [controller_reference(listener)],
        },
    }


def rules_for_listener_role(resource_names: Sequence[str]) -> list[dict[str, Any]]:
    """Patch the named EphemeralRunnerSets; get and patch EphemeralRunners; patch their status.

    Ports: rulesForListenerRole
    """
    return [
        {
            "apiGroups": [GROUP],
            "resources": ["ephemeralrunnersets"],
            "resourceNames": list(resource_names),
            "verbs": ["patch"],
        },
        {"apiGroups": [GROUP], "resources": ["ephemeralrunners"], "verbs": ["get", "patch"]},
        {"apiGroups": [GROUP], "resources": ["ephemeralrunners/status"], "verbs": ["patch"]},
    ]


def _rbac_labels(listener: Mapping[str, Any], excluded: tuple[str, ...]) -> dict[str, str] | None:
    """Python only: the labels the listener's Role and RoleBinding share."""
    meta = listener["metadata"]
    spec = objects.spec(listener)
    return filter_and_merge_labels(
        meta.get("labels"),
        {
            constants.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE: spec.get("autoscalingRunnerSetNamespace", ""),
            constants.LABEL_KEY_GITHUB_SCALE_SET_NAME: spec.get("autoscalingRunnerSetName", ""),
            constants.LABEL_KEY_LISTENER_NAMESPACE: meta["namespace"],
            constants.LABEL_KEY_LISTENER_NAME: meta["name"],
        },
        excluded,
    )


def new_scale_set_listener_role(listener: Mapping[str, Any], *, options: ListenerBuildOptions) -> Object:
    """The listener's Role, in the scale set's namespace, named like the listener, without owner.

    Labels: the listener's plus scale-set namespace/name and ``auto-scaling-listener-namespace``
    / ``-name`` (how the controller maps Role events back); ``spec.roleMetadata`` labels
    sit underneath and its annotations are used (else an empty map). Rules: `rules_for_listener_role`
    for the listener's EphemeralRunnerSet.

    Ports: ResourceBuilder.newScaleSetListenerRole
    """
    spec = objects.spec(listener)
    excluded = options.exclude_label_propagation_prefixes
    labels = _rbac_labels(listener, excluded)
    annotations: dict[str, str] | None = {}
    user = spec.get("roleMetadata")
    if user is not None:
        labels = filter_and_merge_labels(user.get("labels"), labels, excluded)
        annotations = merge_annotations(user.get("annotations"), None)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {
            "name": listener["metadata"]["name"],
            "namespace": spec.get("autoscalingRunnerSetNamespace", ""),
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "rules": rules_for_listener_role([spec.get("ephemeralRunnerSetName", "")]),
    }


def new_scale_set_listener_role_binding(
    listener: Mapping[str, Any],
    role: Mapping[str, Any],
    service_account: Mapping[str, Any],
    *,
    options: ListenerBuildOptions,
) -> Object:
    """The listener's RoleBinding: the Role to the listener's ServiceAccount, in the scale set's namespace.

    ``roleRef`` names kind ``Role`` without an apiGroup (the API server fills it in).
    Labels as the Role's; annotations from ``spec.roleBindingMetadata`` (else an empty map).

    Ports: ResourceBuilder.newScaleSetListenerRoleBinding
    """
    spec = objects.spec(listener)
    excluded = options.exclude_label_propagation_prefixes
    labels = _rbac_labels(listener, excluded)
    annotations: dict[str, str] | None = {}
    user = spec.get("roleBindingMetadata")
    if user is not None:
        labels = filter_and_merge_labels(user.get("labels"), labels, excluded)
        annotations = user.get("annotations")
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": listener["metadata"]["name"],
            "namespace": spec.get("autoscalingRunnerSetNamespace", ""),
            "labels": labels or {},
            "annotations": dict(annotations or {}),
        },
        "roleRef": {"kind": "Role", "name": role["metadata"]["name"]},
        "subjects": [
            {
                "kind": "ServiceAccount",
                "namespace": service_account["metadata"]["namespace"],
                "name": service_account["metadata"]["name"],
            }
        ],
    }
