"""The listener pod, and the merge of a user's listener pod template into it.

Ports: ResourceBuilder.newScaleSetListenerPod, mergeListenerPodWithTemplate and mergeListenerContainer
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import objects
from arc_controllers.resourcebuilder.labels import controller_reference
from arc_controllers.resourcebuilder.listener.options import (
    LISTENER_CONTAINER_NAME,
    ListenerBuildOptions,
    ListenerMetricsServerConfig,
    proxy_listener_secret_name,
)
from reconcilekit.client.interfaces import Object

__all__ = ["merge_listener_pod_with_template", "new_scale_set_listener_pod"]


def _proxy_env(listener: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Python only: the listener container's proxy variables, one per configured part."""
    proxy = objects.spec(listener).get("proxy")
    if proxy is None:
        return []
    secret = proxy_listener_secret_name(listener)
    wanted = (
        (constants.PROXY_SECRET_KEY_HTTP, proxy.get("http") is not None),
        (constants.PROXY_SECRET_KEY_HTTPS, proxy.get("https") is not None),
        (constants.PROXY_SECRET_KEY_NO_PROXY, bool(proxy.get("noProxy"))),
    )
    return [{"name": key, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}} for key, on in wanted if on]


def new_scale_set_listener_pod(
    listener: Mapping[str, Any],
    config_secret: Mapping[str, Any],
    service_account: Mapping[str, Any],
    metrics: ListenerMetricsServerConfig | None,
    *,
    options: ListenerBuildOptions,
) -> Object:
    """The listener pod: same name, the listener's labels, the config secret's resourceVersion annotated.

    Shape: one container ``listener`` (image ``spec.image``, command the entrypoint, env
    ``LISTENER_CONFIG_PATH`` plus proxy variables, a ``metrics`` port when metrics are on,
    the config secret mounted read-only at ``/etc/gha-listener``); service account, node
    selector ``kubernetes.io/os=linux``, image pull secrets, restart policy Never, grace
    60 s. ``spec.template`` is merged on top (`merge_listener_pod_with_template`).
    Controlled by the listener.

    Raises:
        ValueError: the metrics address has no port.

    Ports: ResourceBuilder.newScaleSetListenerPod
    """
    spec = objects.spec(listener)
    meta = listener["metadata"]
    container: dict[str, Any] = {
        "name": LISTENER_CONTAINER_NAME,
        "image": spec.get("image", ""),
        "command": [options.entrypoint],
        "env": [
            {"name": constants.ENV_LISTENER_CONFIG_PATH, "value": constants.LISTENER_CONFIG_FILE_PATH},
            *_proxy_env(listener),
        ],
        "volumeMounts": [
            {
                "name": constants.LISTENER_CONFIG_VOLUME_NAME,
                "mountPath": constants.LISTENER_CONFIG_MOUNT_PATH,
                "readOnly": True,
            }
        ],
    }
    if metrics is not None and metrics.addr:
        container["ports"] = [metrics.container_port()]
    pod_spec: dict[str, Any] = {
        "serviceAccountName": service_account["metadata"]["name"],
        "nodeSelector": {constants.LABEL_KEY_KUBERNETES_OS: constants.LABEL_VALUE_KUBERNETES_OS_LINUX},
        "containers": [container],
        "volumes": [
            {
                "name": constants.LISTENER_CONFIG_VOLUME_NAME,
                "secret": {"secretName": config_secret["metadata"]["name"]},
            }
        ],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": constants.LISTENER_POD_TERMINATION_GRACE_PERIOD_SECONDS,
    }
    if spec.get("imagePullSecrets"):
        pod_spec["imagePullSecrets"] = copy.deepcopy(spec["imagePullSecrets"])
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": dict(meta.get("labels") or {}),
            "annotations": {
                constants.ANNOTATION_KEY_LISTENER_CONFIG_RESOURCE_VERSION: config_secret["metadata"].get(
                    "resourceVersion", ""
                )
            },
            "ownerReferences": [controller_reference(listener)],
        },
        "spec": pod_spec,
    }
    if spec.get("template") is not None:
        merge_listener_pod_with_template(pod, spec["template"])
    return pod


_CONTAINER_APPENDED = ("env", "args", "ports", "envFrom", "volumeMounts", "volumeDevices")
_CONTAINER_REPLACED = (
    "imagePullPolicy",
    "workingDir",
    "resources",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "securityContext",
    "resizePolicy",
    "restartPolicy",
    "stdin",
    "stdinOnce",
    "tty",
)
_POD_REPLACED = (
    "initContainers",
    "ephemeralContainers",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "shareProcessNamespace",
    "securityContext",
    "hostname",
    "subdomain",
    "affinity",
    "schedulerName",
    "tolerations",
    "hostAliases",
    "priorityClassName",
    "priority",
    "dnsConfig",
    "readinessGates",
    "runtimeClassName",
    "enableServiceLinks",
    "preemptionPolicy",
    "overhead",
    "topologySpreadConstraints",
    "setHostnameAsFQDN",
    "os",
    "hostUsers",
    "schedulingGates",
    "resourceClaims",
)


def _merge_listener_container(base: dict[str, Any], source: Mapping[str, Any]) -> None:
    """Image and command replaced when set; list fields appended; the rest replaced, even by nothing.

    Ports: mergeListenerContainer
    """
    if source.get("image"):
        base["image"] = source["image"]
    if source.get("command"):
        base["command"] = copy.deepcopy(source["command"])
    for key in _CONTAINER_APPENDED:
        merged = [*(base.get(key) or []), *copy.deepcopy(source.get(key) or [])]
        if merged:
            base[key] = merged
        else:
            base.pop(key, None)
    for key in _CONTAINER_REPLACED:
        if source.get(key) is None:
            base.pop(key, None)
        else:
            base[key] = copy.deepcopy(source[key])


def merge_listener_pod_with_template(pod: dict[str, Any], template: Mapping[str, Any]) -> None:
    """Merge a user's listener pod template into the generated ``pod``, in place.

    Template labels and annotations fill only keys the pod lacks; the template's
    ``listener`` container merges into ours, other containers are appended; restart
    policy, image pull secrets and node selector are replaced when set; volumes are
    appended; the rest of the pod-level fields are replaced unconditionally (a template
    without ``terminationGracePeriodSeconds`` clears the 60). Service account fields are
    never taken from the template.

    Ports: mergeListenerPodWithTemplate
    """
    meta = objects.mutable_meta(pod)
    annotations = meta.setdefault("annotations", {})
    for key, value in objects.annotations(template).items():
        annotations.setdefault(key, value)
    labels = meta.setdefault("labels", {})
    for key, value in objects.labels(template).items():
        labels.setdefault(key, value)
    spec = pod["spec"]
    tspec = objects.spec(template)
    listener_container = spec["containers"][0]
    for container in tspec.get("containers") or []:
        if container.get("name") == LISTENER_CONTAINER_NAME:
            _merge_listener_container(listener_container, container)
        else:
            spec["containers"].append(copy.deepcopy(container))
    if tspec.get("restartPolicy"):
        spec["restartPolicy"] = tspec["restartPolicy"]
    if tspec.get("imagePullSecrets") is not None:
        spec["imagePullSecrets"] = copy.deepcopy(tspec["imagePullSecrets"])
    if tspec.get("nodeSelector") is not None:
        spec["nodeSelector"] = dict(tspec["nodeSelector"])
    spec["volumes"] = [*(spec.get("volumes") or []), *copy.deepcopy(tspec.get("volumes") or [])]
    for key in _POD_REPLACED:
        if tspec.get(key) is None:
            spec.pop(key, None)
        else:
            spec[key] = copy.deepcopy(tspec[key])
