"""Desired objects for runners: the EphemeralRunner, its pod, its JIT secret, the set's proxy secret.

Pure functions over plain JSON objects (``dict``): no client, no globals. Each returns a
new object that shares no nested value with its inputs, so runners built concurrently
never write into each other (the API server's answer is decoded into the object given
to ``create``).

Ports: controllers/actions.github.com/resourcebuilder.go (newEphemeralRunner,
newEphemeralRunnerPod, newEphemeralRunnerJitSecret, newEphemeralRunnerSetProxySecret)
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import API_VERSION, POD, SECRET, Kind, objects
from arc_controllers.resourcebuilder.labels import (
    controller_reference,
    filter_and_merge_labels,
    fnv_hash_string,
    merge_annotations,
)
from arc_controllers.resourcebuilder.options import RunnerBuildOptions
from reconcilekit.client.interfaces import Object

# RunnerBuildOptions (options.py) is re-exported: the runner builders' callers name it with them.
__all__ = [
    "PROXY_SECRET_KEYS",
    "JitRunnerConfig",
    "RunnerBuildOptions",
    "new_ephemeral_runner",
    "new_ephemeral_runner_jit_secret",
    "new_ephemeral_runner_pod",
    "new_ephemeral_runner_set_proxy_secret",
    "proxy_env",
    "proxy_ephemeral_runner_set_secret_name",
    "proxy_secret_data",
]

PROXY_SECRET_KEYS = ("http_proxy", "https_proxy", "no_proxy")
"""Keys of a proxy secret's data, also the env var names of the runner container."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JitRunnerConfig:
    """The parts of a JIT registration the secret stores.

    Ports: scaleset.RunnerScaleSetJitRunnerConfig (the fields read by newEphemeralRunnerJitSecret)
    """

    encoded_jit_config: str
    """The runner's credentials: never logged."""
    runner_id: int
    runner_name: str
    runner_scale_set_id: int

    def __repr__(self) -> str:
        """Python only: the repr without the JIT config."""
        return (
            f"JitRunnerConfig(runner_id={self.runner_id}, runner_name={self.runner_name!r}, "
            f"runner_scale_set_id={self.runner_scale_set_id}, encoded_jit_config=[redacted])"
        )


def new_ephemeral_runner(runner_set: Mapping[str, Any], *, options: RunnerBuildOptions) -> Object:
    """An EphemeralRunner for ``runner_set``, stamped with the set's patch ID and actionable revision.

    Shape: ``metadata.generateName`` is ``<set>-runner-``; labels are the set's plus
    ``app.kubernetes.io/component=runner``; annotations are the set's plus
    ``actions.github.com/patch-id`` and ``actions.github.com/actionable-revision`` (the
    revision stamp). User runner metadata sits underneath: derived keys always win. Both
    finalizers are set, so the runner controller never needs to add them. The spec is a
    deep copy of the set's runner spec.

    Ports: ResourceBuilder.newEphemeralRunner
    """
    meta = runner_set["metadata"]
    spec = objects.spec(runner_set)
    labels: dict[str, str] | None = {**objects.labels(runner_set), constants.LABEL_KEY_KUBERNETES_COMPONENT: "runner"}
    annotations: dict[str, str] | None = {
        **objects.annotations(runner_set),
        constants.ANNOTATION_KEY_PATCH_ID: str(int(spec.get("patchID") or 0)),
        constants.ANNOTATION_KEY_ACTIONABLE_REVISION: str(int(spec.get("actionableRevision") or 0)),
    }
    user = spec.get("ephemeralRunnerMetadata")
    if user is not None:
        labels = filter_and_merge_labels(user.get("labels"), labels, options.exclude_label_propagation_prefixes)
        annotations = merge_annotations(user.get("annotations"), annotations)
    runner_meta: dict[str, Any] = {
        "generateName": f"{meta['name']}-runner-",
        "namespace": meta["namespace"],
        "finalizers": [constants.EPHEMERAL_RUNNER_FINALIZER_NAME, constants.EPHEMERAL_RUNNER_ACTIONS_FINALIZER_NAME],
        "ownerReferences": [controller_reference(runner_set)],
    }
    if labels is not None:
        runner_meta["labels"] = labels
    if annotations is not None:
        runner_meta["annotations"] = annotations
    return {
        "apiVersion": API_VERSION,
        "kind": Kind.EPHEMERAL_RUNNER.value,
        "metadata": runner_meta,
        "spec": copy.deepcopy(spec.get("ephemeralRunnerSpec") or {}),
    }


def _hash_objects(*objs: Any) -> str:
    """Python only: FNV-1a over canonical JSON of ``objs``, safe-encoded like ``fnv_hash_string``.

    Go hashes its structs with a deep printer whose bytes Python cannot reproduce; the
    label only has to change when its inputs change, which canonical JSON guarantees.
    """
    return fnv_hash_string(json.dumps(objs, sort_keys=True, separators=(",", ":")))


def new_ephemeral_runner_pod(
    runner: Mapping[str, Any],
    secret: Mapping[str, Any],
    *extra_env: Mapping[str, Any],
    options: RunnerBuildOptions,
) -> Object:
    """The runner's pod: same name, the runner's template, the JIT config wired into the ``runner`` container.

    Shape: annotations are the runner's then the template's on top; labels are the
    runner's then the template's, then ``actions-ephemeral-runner=True`` and
    ``pod-template-hash``. Only the container named ``runner`` gets env appended, after
    the user's: ``ACTIONS_RUNNER_INPUT_JITCONFIG`` (secret key ``jitToken``),
    ``GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT``, ``ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1``,
    then ``extra_env`` (the proxy variables).

    Ports: ResourceBuilder.newEphemeralRunnerPod
    """
    meta = runner["metadata"]
    runner_spec = objects.spec(runner)
    template = {"metadata": runner_spec.get("metadata")}  # the runner spec is a pod template
    annotations = {**objects.annotations(runner), **objects.annotations(template)}
    labels = {**objects.labels(runner), **objects.labels(template)}
    labels["actions-ephemeral-runner"] = "True"
    labels[constants.LABEL_KEY_POD_TEMPLATE_HASH] = _hash_objects(
        {k: v for k, v in labels.items() if k != constants.LABEL_KEY_RUNNER_TEMPLATE_HASH},
        annotations,
        runner_spec,
        objects.secret_data(secret),
    )
    pod_spec = copy.deepcopy(objects.spec(runner_spec))
    containers = pod_spec.get("containers") or []
    for container in containers:
        if container.get("name") == constants.EPHEMERAL_RUNNER_CONTAINER_NAME:
            container["env"] = [
                *(container.get("env") or []),
                {
                    "name": constants.ENV_ACTIONS_RUNNER_INPUT_JITCONFIG,
                    "valueFrom": {
                        "secretKeyRef": {"name": secret["metadata"]["name"], "key": constants.JIT_SECRET_KEY_JIT_TOKEN}
                    },
                },
                {
                    "name": constants.ENV_GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT,
                    "value": f"actions-runner-controller/{options.build_version}",
                },
                {"name": constants.ENV_ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE, "value": "1"},
                *(copy.deepcopy(dict(env)) for env in extra_env),
            ]
    pod_spec["containers"] = containers
    return {
        "apiVersion": POD.api_version,
        "kind": POD.kind,
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [controller_reference(runner)],
        },
        "spec": pod_spec,
    }


def _b64(value: str | bytes) -> str:
    """Python only: base64 of a string or bytes, as Secret ``data`` holds it."""
    raw = value.encode() if isinstance(value, str) else value
    return base64.b64encode(raw).decode("ascii")


def new_ephemeral_runner_jit_secret(
    runner: Mapping[str, Any], jit: JitRunnerConfig, *, options: RunnerBuildOptions
) -> Object:
    """The runner's JIT secret: same name; data ``jitToken``, ``runnerName``, ``runnerId``, ``scaleSetId``.

    Labels and annotations come from ``spec.ephemeralRunnerConfigSecretMetadata`` only
    (absent when it is absent). ``data`` values are base64, as the API server stores them.

    Ports: ResourceBuilder.newEphemeralRunnerJitSecret
    """
    meta = runner["metadata"]
    secret_meta: dict[str, Any] = {"name": meta["name"], "namespace": meta["namespace"]}
    user = objects.spec(runner).get("ephemeralRunnerConfigSecretMetadata")
    if user is not None:
        labels = filter_and_merge_labels(user.get("labels"), None, options.exclude_label_propagation_prefixes)
        if labels is not None:
            secret_meta["labels"] = labels
        if user.get("annotations") is not None:
            secret_meta["annotations"] = dict(user["annotations"])
    secret_meta["ownerReferences"] = [controller_reference(runner)]
    return {
        "apiVersion": SECRET.api_version,
        "kind": SECRET.kind,
        "metadata": secret_meta,
        "data": {
            constants.JIT_SECRET_KEY_JIT_TOKEN: _b64(jit.encoded_jit_config),
            "runnerName": _b64(jit.runner_name),
            "runnerId": _b64(str(jit.runner_id)),
            "scaleSetId": _b64(str(jit.runner_scale_set_id)),
        },
    }


def proxy_ephemeral_runner_set_secret_name(runner_set: Mapping[str, Any]) -> str:
    """``<set name>-<first 8 of FNV(set namespace)>-runner-proxy``.

    Ports: proxyEphemeralRunnerSetSecretName
    """
    meta = runner_set["metadata"]
    return f"{meta['name']}-{fnv_hash_string(meta['namespace'])[:8]}-runner-proxy"


def new_ephemeral_runner_set_proxy_secret(runner_set: Mapping[str, Any], data: Mapping[str, bytes]) -> Object:
    """The set's proxy secret: scale-set name/namespace labels from the set, empty annotations, ``data``.

    Args:
        data: raw (not base64) values under `PROXY_SECRET_KEYS`.

    Ports: ResourceBuilder.newEphemeralRunnerSetProxySecret
    """
    labels = objects.labels(runner_set)
    return {
        "apiVersion": SECRET.api_version,
        "kind": SECRET.kind,
        "metadata": {
            "name": proxy_ephemeral_runner_set_secret_name(runner_set),
            "namespace": runner_set["metadata"]["namespace"],
            "labels": {
                constants.LABEL_KEY_GITHUB_SCALE_SET_NAME: labels.get(constants.LABEL_KEY_GITHUB_SCALE_SET_NAME, ""),
                constants.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE: labels.get(
                    constants.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE, ""
                ),
            },
            "annotations": {},
            "ownerReferences": [controller_reference(runner_set)],
        },
        "data": {key: _b64(value) for key, value in data.items()},
    }


def _proxy_url(server: Mapping[str, Any] | None, credentials: Mapping[str, Mapping[str, bytes]]) -> bytes:
    """Python only: one proxy URL with its credential secret's username and password as user info."""
    if not server or not server.get("url"):
        return b""
    url = str(server["url"])
    ref = server.get("credentialSecretRef")
    if not ref:
        return url.encode()
    if ref not in credentials:
        raise ValueError(f"proxy credential secret {ref} was not read")
    secret = credentials[ref]
    user = quote(secret.get("username", b"").decode(), safe="")
    password = quote(secret.get("password", b"").decode(), safe="")
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{host}")).encode()


def proxy_secret_data(proxy: Mapping[str, Any], credentials: Mapping[str, Mapping[str, bytes]]) -> dict[str, bytes]:
    """A proxy secret's data from a ``ProxyConfig`` and its credential secrets (name → raw data).

    Raises:
        ValueError: a ``credentialSecretRef`` names a secret missing from ``credentials``.

    Ports: v1alpha1.ProxyConfig.ToSecretData
    """
    return {
        "http_proxy": _proxy_url(proxy.get("http"), credentials),
        "https_proxy": _proxy_url(proxy.get("https"), credentials),
        "no_proxy": ",".join(proxy.get("noProxy") or []).encode(),
    }


def proxy_env(proxy: Mapping[str, Any] | None, proxy_secret_ref: str) -> list[dict[str, Any]]:
    """The runner container's proxy env vars, read from ``proxy_secret_ref``; [] when it is empty.

    One variable per configured part: ``http_proxy`` if ``http`` is set, ``https_proxy``
    if ``https`` is set, ``no_proxy`` if ``noProxy`` is non-empty.

    Ports: EphemeralRunnerReconciler.createPod, the proxy env block
    """
    if not proxy_secret_ref or not proxy:
        return []
    wanted = [bool(proxy.get("http")), bool(proxy.get("https")), bool(proxy.get("noProxy"))]
    return [
        {"name": key, "valueFrom": {"secretKeyRef": {"name": proxy_secret_ref, "key": key}}}
        for key, on in zip(PROXY_SECRET_KEYS, wanted)
        if on
    ]
