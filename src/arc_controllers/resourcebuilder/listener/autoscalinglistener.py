"""The AutoscalingListener of a scale set: in the controller namespace, without owner reference.

Owners cannot cross namespaces, so the listener is found by its scale set's index and
labels instead.

Ports: ResourceBuilder.newAutoscalingListener
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import API_VERSION, Kind, objects
from arc_controllers.resourcebuilder.labels import (
    apply_github_url_labels,
    filter_and_merge_labels,
    merge_annotations,
    runner_scale_set_id,
)
from arc_controllers.resourcebuilder.listener.options import ListenerBuildOptions, scale_set_listener_name
from reconcilekit.client.interfaces import Object

__all__ = ["new_autoscaling_listener"]

_COPIED = (
    ("vaultConfig", "vaultConfig"),
    ("proxy", "proxy"),
    ("githubServerTLS", "githubServerTLS"),
    ("listenerMetrics", "metrics"),
    ("listenerTemplate", "template"),
    ("listenerServiceAccountMetadata", "serviceAccountMetadata"),
    ("listenerRoleMetadata", "roleMetadata"),
    ("listenerRoleBindingMetadata", "roleBindingMetadata"),
    ("listenerConfigSecretMetadata", "configSecretMetadata"),
    ("listenerConfig", "listenerConfig"),
)
"""Python only: the scale set's optional fields the listener spec copies, as (scale set field, listener field)."""


def _listener_spec(
    autoscaling_runner_set: Mapping[str, Any],
    ephemeral_runner_set: Mapping[str, Any],
    *,
    image: str,
    image_pull_secrets: Sequence[Mapping[str, str]],
) -> dict[str, Any]:
    """The listener's spec: the scale set's settings, effective min/max runners, no ``phase``.

    Raises:
        ValueError: the scale set id annotation is not an integer.

    Ports: ResourceBuilder.newAutoscalingListener, the spec
    """
    scale_set_id = runner_scale_set_id(autoscaling_runner_set)
    meta = autoscaling_runner_set["metadata"]
    spec = objects.spec(autoscaling_runner_set)
    max_runners = spec.get("maxRunners")
    min_runners = spec.get("minRunners")
    listener_spec: dict[str, Any] = {
        "githubConfigUrl": spec.get("githubConfigUrl", ""),
        "githubConfigSecret": spec.get("githubConfigSecret", ""),
        "runnerScaleSetId": scale_set_id,
        "autoscalingRunnerSetNamespace": meta["namespace"],
        "autoscalingRunnerSetName": meta["name"],
        "ephemeralRunnerSetName": ephemeral_runner_set["metadata"]["name"],
        "minRunners": constants.DEFAULT_LISTENER_MIN_RUNNERS if min_runners is None else int(min_runners),
        "maxRunners": constants.DEFAULT_LISTENER_MAX_RUNNERS if max_runners is None else int(max_runners),
        "image": image,
    }
    if image_pull_secrets:
        listener_spec["imagePullSecrets"] = [dict(s) for s in image_pull_secrets]
    for source, target in _COPIED:
        if spec.get(source) is not None:  # Go's omitempty for pointers
            listener_spec[target] = copy.deepcopy(spec[source])
    return listener_spec


def new_autoscaling_listener(
    autoscaling_runner_set: Mapping[str, Any],
    ephemeral_runner_set: Mapping[str, Any],
    *,
    namespace: str,
    image: str,
    image_pull_secrets: Sequence[Mapping[str, str]] = (),
    options: ListenerBuildOptions,
) -> Object:
    """The AutoscalingListener for a scale set, in the controller ``namespace``, without owner reference.

    Shape: spec copies the ARS's config URL and secret, vault, proxy, TLS, listener
    metrics, listener template, the four listener metadata blocks and listener config;
    ``minRunners``/``maxRunners`` are the effective values (0 and 2147483647 when unset);
    ``phase`` is never set (empty means running). Labels: the ARS's, then scale-set
    namespace and name, part-of, component ``runner-scale-set-listener``, version, then
    the GitHub URL labels; ``spec.autoscalingListener`` metadata sits underneath.
    Annotations only from that metadata.

    Raises:
        ValueError: the scale set id annotation is not an integer, or the config URL is invalid.

    Ports: ResourceBuilder.newAutoscalingListener
    """
    listener_spec = _listener_spec(
        autoscaling_runner_set, ephemeral_runner_set, image=image, image_pull_secrets=image_pull_secrets
    )
    meta = autoscaling_runner_set["metadata"]
    spec = objects.spec(autoscaling_runner_set)
    ars_labels = meta.get("labels") or {}
    excluded = options.exclude_label_propagation_prefixes
    labels = filter_and_merge_labels(
        ars_labels,
        {
            constants.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE: meta["namespace"],
            constants.LABEL_KEY_GITHUB_SCALE_SET_NAME: meta["name"],
            constants.LABEL_KEY_KUBERNETES_PART_OF: constants.LABEL_VALUE_KUBERNETES_PART_OF,
            constants.LABEL_KEY_KUBERNETES_COMPONENT: constants.LABEL_VALUE_COMPONENT_LISTENER,
            constants.LABEL_KEY_KUBERNETES_VERSION: ars_labels.get(constants.LABEL_KEY_KUBERNETES_VERSION, ""),
        },
        excluded,
    )
    assert labels is not None
    apply_github_url_labels(spec.get("githubConfigUrl", ""), labels)
    annotations: dict[str, str] | None = None
    user = spec.get("autoscalingListener")
    final_labels: dict[str, str] | None = labels
    if user is not None:
        final_labels = filter_and_merge_labels(user.get("labels"), labels, excluded)
        annotations = merge_annotations(user.get("annotations"), annotations)

    listener_meta: dict[str, Any] = {"name": scale_set_listener_name(autoscaling_runner_set), "namespace": namespace}
    if final_labels is not None:
        listener_meta["labels"] = final_labels
    if annotations is not None:
        listener_meta["annotations"] = annotations
    return {
        "apiVersion": API_VERSION,
        "kind": Kind.AUTOSCALING_LISTENER.value,
        "metadata": listener_meta,
        "spec": listener_spec,
    }
