"""The desired EphemeralRunnerSet of an AutoscalingRunnerSet.

Pure function over plain JSON objects; the result shares no nested value with its input.

Ports: controllers/actions.github.com/resourcebuilder.go (newEphemeralRunnerSet)
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import API_VERSION, Kind, objects
from arc_controllers.resourcebuilder.labels import (
    apply_github_url_labels,
    controller_reference,
    filter_and_merge_labels,
    merge_annotations,
    runner_scale_set_id,
)
from arc_controllers.resourcebuilder.options import RunnerBuildOptions
from reconcilekit.client.interfaces import Object

__all__ = ["new_ephemeral_runner_set"]


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    """Python only: Go's ``omitempty`` for pointers: a None value is left out."""
    if value is not None:
        target[key] = copy.deepcopy(value)


def new_ephemeral_runner_set(autoscaling_runner_set: Mapping[str, Any], *, options: RunnerBuildOptions) -> Object:
    """The EphemeralRunnerSet for ``autoscaling_runner_set``: same name and namespace, controlled by it.

    Shape: ``spec.replicas`` 0 (``patchID`` and ``actionableRevision`` are left for the
    listener and the reconciler); ``spec.ephemeralRunnerSpec`` carries the scale set id,
    config URL and secret, proxy, TLS, vault, config-secret metadata and the pod
    template; ``spec.ephemeralRunnerMetadata`` is the ARS's. Labels: the ARS's, then
    part-of, component ``runner-set``, version, scale-set name and namespace, then the
    GitHub URL labels; annotations: runner group name, scale set name (from the ARS
    annotations) and ``autoscaling-runner-set-generation``. User
    ``ephemeralRunnerSetMetadata`` sits underneath; derived keys win.

    Raises:
        ValueError: the scale set id annotation is not an integer, or the config URL is invalid.

    Ports: ResourceBuilder.newEphemeralRunnerSet
    """
    scale_set_id = runner_scale_set_id(autoscaling_runner_set)
    meta = autoscaling_runner_set["metadata"]
    spec = objects.spec(autoscaling_runner_set)
    ars_labels = objects.labels(autoscaling_runner_set)
    ars_annotations = objects.annotations(autoscaling_runner_set)
    excluded = options.exclude_label_propagation_prefixes

    runner_spec: dict[str, Any] = {
        "runnerScaleSetId": scale_set_id,
        "githubConfigUrl": spec.get("githubConfigUrl", ""),
        "githubConfigSecret": spec.get("githubConfigSecret", ""),
    }
    _put(runner_spec, "proxy", spec.get("proxy"))
    _put(runner_spec, "githubServerTLS", spec.get("githubServerTLS"))
    _put(runner_spec, "vaultConfig", spec.get("vaultConfig"))
    _put(runner_spec, "ephemeralRunnerConfigSecretMetadata", spec.get("ephemeralRunnerConfigSecretMetadata"))
    template = copy.deepcopy(spec.get("template") or {})
    if template.get("metadata") is not None:
        runner_spec["metadata"] = template["metadata"]
    runner_spec["spec"] = objects.spec(template)
    set_spec: dict[str, Any] = {"replicas": 0, "patchID": 0, "ephemeralRunnerSpec": runner_spec}
    _put(set_spec, "ephemeralRunnerMetadata", spec.get("ephemeralRunnerMetadata"))

    labels = filter_and_merge_labels(
        ars_labels,
        {
            constants.LABEL_KEY_KUBERNETES_PART_OF: constants.LABEL_VALUE_KUBERNETES_PART_OF,
            constants.LABEL_KEY_KUBERNETES_COMPONENT: constants.LABEL_VALUE_COMPONENT_RUNNER_SET,
            constants.LABEL_KEY_KUBERNETES_VERSION: ars_labels.get(constants.LABEL_KEY_KUBERNETES_VERSION, ""),
            constants.LABEL_KEY_GITHUB_SCALE_SET_NAME: meta["name"],
            constants.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE: meta["namespace"],
        },
        excluded,
    )
    assert labels is not None
    apply_github_url_labels(spec.get("githubConfigUrl", ""), labels)
    annotations: dict[str, str] | None = {
        constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME: ars_annotations.get(
            constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME, ""
        ),
        constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME: ars_annotations.get(
            constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME, ""
        ),
        constants.ANNOTATION_KEY_AUTOSCALING_RUNNER_SET_GENERATION: str(int(meta.get("generation") or 0)),
    }
    user = spec.get("ephemeralRunnerSetMetadata")
    final_labels: dict[str, str] | None = labels
    if user is not None:
        final_labels = filter_and_merge_labels(user.get("labels"), labels, excluded)
        annotations = merge_annotations(user.get("annotations"), annotations)

    set_meta: dict[str, Any] = {"name": meta["name"], "namespace": meta["namespace"]}
    if final_labels is not None:
        set_meta["labels"] = final_labels
    if annotations is not None:
        set_meta["annotations"] = annotations
    set_meta["ownerReferences"] = [controller_reference(autoscaling_runner_set)]
    return {
        "apiVersion": API_VERSION,
        "kind": Kind.EPHEMERAL_RUNNER_SET.value,
        "metadata": set_meta,
        "spec": set_spec,
    }
