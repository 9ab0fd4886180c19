"""Desired objects for a scale set's listener: the AutoscalingListener and everything it runs on.

The AutoscalingListener lives in the controller namespace and carries no owner reference
(owners cannot cross namespaces); its ServiceAccount, config secret, proxy secret and pod
are controlled by it; its Role and RoleBinding live in the scale set's namespace and are
found by the ``auto-scaling-listener-*`` labels. Pure functions over plain JSON objects.

Ports: controllers/actions.github.com/resourcebuilder.go (newAutoscalingListener,
newScaleSetListenerConfig, newScaleSetListenerPod, mergeListenerPodWithTemplate,
mergeListenerContainer, newScaleSetListenerServiceAccount, newScaleSetListenerRole,
newScaleSetListenerRoleBinding, newAutoscalingListenerProxySecret, rulesForListenerRole,
scaleSetListenerName and the other name helpers)
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arc_controllers import constants
from arc_controllers._runner_constants import API_VERSION, GROUP
from arc_controllers.api.v1alpha1.appconfig import AppConfig
from arc_controllers.resourcebuilder.labels import apply_github_url_labels, filter_and_merge_labels, merge_annotations
from arc_controllers.resourcebuilder.runner import controller_reference, fnv_hash_string
from arc_controllers.resourcebuilder.runnerset import runner_scale_set_id
from reconcilekit.client.interfaces import Object

__all__ = [
    "LISTENER_CONTAINER_NAME",
    "ListenerBuildOptions",
    "ListenerMetricsServerConfig",
    "merge_listener_pod_with_template",
    "new_autoscaling_listener",
    "new_autoscaling_listener_proxy_secret",
    "new_scale_set_listener_config",
    "new_scale_set_listener_pod",
    "new_scale_set_listener_role",
    "new_scale_set_listener_role_binding",
    "new_scale_set_listener_service_account",
    "proxy_listener_secret_name",
    "rules_for_listener_role",
    "scale_set_listener_config_name",
    "scale_set_listener_name",
]

LISTENER_CONTAINER_NAME = "listener"
"""Ports: autoscalingListenerContainerName"""


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerBuildOptions:
    """What the listener builders take besides the objects.

    Ports: ResourceBuilder.ExcludeLabelPropagationPrefixes and the package settings
    scaleSetListenerLogLevel, scaleSetListenerLogFormat, scaleSetListenerEntrypoint
    """

    exclude_label_propagation_prefixes: tuple[str, ...] = ()
    """Label keys starting with one of these are not copied from user metadata."""

    log_level: str = constants.DEFAULT_LISTENER_LOG_LEVEL
    """Written into the listener's config (debug, info, warn, error)."""

    log_format: str = constants.DEFAULT_LISTENER_LOG_FORMAT
    """Written into the listener's config (json, text)."""

    entrypoint: str = constants.DEFAULT_LISTENER_ENTRYPOINT
    """The listener container's command (``LISTENER_ENTRYPOINT`` overrides it)."""

    def __post_init__(self) -> None:
        """Python only: reject unknown log levels and formats and an empty entrypoint (SetListenerLoggingParameters)."""
        if self.log_level not in constants.LISTENER_LOG_LEVELS:
            raise ValueError(f"listener log level {self.log_level!r} is not one of {constants.LISTENER_LOG_LEVELS}")
        if self.log_format not in constants.LISTENER_LOG_FORMATS:
            raise ValueError(f"listener log format {self.log_format!r} is not one of {constants.LISTENER_LOG_FORMATS}")
        if not self.entrypoint:
            raise ValueError("listener entrypoint must not be empty")


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerMetricsServerConfig:
    """Where the listener serves metrics. Ports: listenerMetricsServerConfig"""

    addr: str
    """``host:port``; the port becomes the pod's ``metrics`` container port."""

    endpoint: str
    """The HTTP path, e.g. ``/metrics``."""

    def container_port(self) -> dict[str, Any]:
        """``{name: metrics, containerPort: <port>, protocol: TCP}``.

        Raises:
            ValueError: ``addr`` is not ``host:port`` with a decimal port.

        Ports: listenerMetricsServerConfig.containerPort
        """
        host, sep, port = self.addr.rpartition(":")
        if not sep or not port.isdigit() or (host.count(":") and not host.startswith("[")):
            raise ValueError(f"failed to convert metrics server address to container port: {self.addr!r}")
        return {"containerPort": int(port), "protocol": "TCP", "name": "metrics"}


def _b64(raw: bytes) -> str:
    """Python only: base64 text of ``raw``."""
    return base64.b64encode(raw).decode("ascii")


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    """Python only: Go's ``omitempty`` for pointers: a None value is left out."""
    if value is not None:
        target[key] = copy.deepcopy(value)


def _hash_suffix(namespace: str, runner_group: str, config_url: str) -> str:
    """Ports: hashSuffix"""
    return fnv_hash_string(f"{namespace}@{runner_group}@{config_url}")[: constants.NAME_HASH_LENGTH]


def scale_set_listener_name(autoscaling_runner_set: Mapping[str, Any]) -> str:
    """``<ARS name>-<hash8 of "ns@runnerGroup@configUrl">-listener``. Ports: scaleSetListenerName"""
    meta = autoscaling_runner_set["metadata"]
    spec = autoscaling_runner_set.get("spec") or {}
    suffix = _hash_suffix(meta["namespace"], spec.get("runnerGroup") or "", spec.get("githubConfigUrl") or "")
    return f"{meta['name']}-{suffix}-listener"


def scale_set_listener_config_name(listener: Mapping[str, Any]) -> str:
    """``<listener>-config``. Ports: scaleSetListenerConfigName"""
    return str(listener["metadata"]["name"]) + constants.LISTENER_CONFIG_SECRET_SUFFIX


def proxy_listener_secret_name(listener: Mapping[str, Any]) -> str:
    """``<listener>-proxy``. Ports: proxyListenerSecretName"""
    return str(listener["metadata"]["name"]) + constants.LISTENER_PROXY_SECRET_SUFFIX


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
    scale_set_id = runner_scale_set_id(autoscaling_runner_set)
    meta = autoscaling_runner_set["metadata"]
    spec = autoscaling_runner_set.get("spec") or {}
    ars_labels = meta.get("labels") or {}
    excluded = options.exclude_label_propagation_prefixes
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
    _put(listener_spec, "vaultConfig", spec.get("vaultConfig"))
    if image_pull_secrets:
        listener_spec["imagePullSecrets"] = [dict(s) for s in image_pull_secrets]
    _put(listener_spec, "proxy", spec.get("proxy"))
    _put(listener_spec, "githubServerTLS", spec.get("githubServerTLS"))
    _put(listener_spec, "metrics", spec.get("listenerMetrics"))
    _put(listener_spec, "template", spec.get("listenerTemplate"))
    _put(listener_spec, "serviceAccountMetadata", spec.get("listenerServiceAccountMetadata"))
    _put(listener_spec, "roleMetadata", spec.get("listenerRoleMetadata"))
    _put(listener_spec, "roleBindingMetadata", spec.get("listenerRoleBindingMetadata"))
    _put(listener_spec, "configSecretMetadata", spec.get("listenerConfigSecretMetadata"))
    _put(listener_spec, "listenerConfig", spec.get("listenerConfig"))

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
    return {"apiVersion": API_VERSION, "kind": "AutoscalingListener", "metadata": listener_meta, "spec": listener_spec}


def _validate_listener_config(config: Mapping[str, Any]) -> None:
    """Python only: the checks of ghalistenerconfig.Config.Validate, in its order."""
    if not config.get("configure_url"):
        raise ValueError("invalid listener config: GitHubConfigUrl is not provided")
    if not config.get("ephemeral_runner_set_namespace") or not config.get("ephemeral_runner_set_name"):
        raise ValueError("invalid listener config: EphemeralRunnerSetNamespace or EphemeralRunnerSetName is missing")
    if not config.get("runner_scale_set_id"):
        raise ValueError("invalid listener config: RunnerScaleSetId is missing")
    if config["max_runners"] < config["min_runners"]:
        raise ValueError("invalid listener config: MinRunners cannot be greater than MaxRunners")
    if config.get("vault_type"):
        if config["vault_type"] != "azure_key_vault":
            raise ValueError(f"invalid listener config: unknown vault type: {config['vault_type']!r}")
        if not config.get("vault_lookup_key"):
            raise ValueError("invalid listener config: VaultLookupKey is required when VaultType is set")


def new_scale_set_listener_config(
    listener: Mapping[str, Any],
    app_config: AppConfig | None,
    metrics: ListenerMetricsServerConfig | None,
    cert: str,
    *,
    options: ListenerBuildOptions,
) -> Object:
    """The listener's config secret ``<listener>-config`` with one key, ``config.json``.

    Shape: snake_case JSON the listener reads (`arc_controllers.listener.config`), ending
    in a newline like Go's encoder; the GitHub credentials are embedded unless the
    listener uses a vault, then the vault type, lookup key and Azure settings are. Labels
    from ``spec.configSecretMetadata`` (only when non-empty), annotations likewise (else
    an empty map). Controlled by the listener.

    Raises:
        ValueError: the config fails validation (missing URL, set name, scale set id,
            max below min, bad vault), or credentials are missing without a vault.

    Ports: ResourceBuilder.newScaleSetListenerConfig
    """
    spec = listener.get("spec") or {}
    config: dict[str, Any] = {
        "configure_url": spec.get("githubConfigUrl", ""),
        "ephemeral_runner_set_namespace": spec.get("autoscalingRunnerSetNamespace", ""),
        "ephemeral_runner_set_name": spec.get("ephemeralRunnerSetName", ""),
        "max_runners": int(spec.get("maxRunners") or 0),
        "min_runners": int(spec.get("minRunners") or 0),
        "runner_scale_set_id": int(spec.get("runnerScaleSetId") or 0),
        "runner_scale_set_name": spec.get("autoscalingRunnerSetName", ""),
        "server_root_ca": cert,
        "log_level": options.log_level,
        "log_format": options.log_format,
        "metrics_addr": metrics.addr if metrics is not None else "",
        "metrics_endpoint": metrics.endpoint if metrics is not None else "",
    }
    if spec.get("metrics") is not None:
        config["metrics"] = copy.deepcopy(spec["metrics"])
    scaler = (spec.get("listenerConfig") or {}).get("scaler")
    if scaler is not None:
        config["scaler"] = copy.deepcopy(scaler)
    vault = spec.get("vaultConfig")
    if vault is None:
        if app_config is None:
            raise ValueError("invalid listener config: AppConfig validation failed: missing app config")
        if app_config.token:
            config["github_token"] = app_config.token
        else:
            config["github_app_id"] = app_config.app_id
            config["github_app_installation_id"] = app_config.app_installation_id
            config["github_app_private_key"] = app_config.app_private_key
    else:
        azure = vault.get("azureKeyVault") or {}
        config["vault_type"] = vault.get("type", "")
        config["vault_lookup_key"] = spec.get("githubConfigSecret", "")
        config["azure_key_vault"] = {
            "tenant_id": azure.get("tenantId", ""),
            "client_id": azure.get("clientId", ""),
            "url": azure.get("url", ""),
            "certificate_path": azure.get("certificatePath", ""),
        }
    _validate_listener_config(config)
    body = (json.dumps(config, separators=(",", ":")) + "\n").encode()

    user = spec.get("configSecretMetadata") or {}
    secret_meta: dict[str, Any] = {
        "name": scale_set_listener_config_name(listener),
        "namespace": listener["metadata"]["namespace"],
    }
    if user.get("labels"):
        secret_meta["labels"] = filter_and_merge_labels(
            user["labels"], None, options.exclude_label_propagation_prefixes
        )
    secret_meta["annotations"] = dict(user["annotations"]) if user.get("annotations") else {}
    secret_meta["ownerReferences"] = [controller_reference(listener)]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": secret_meta,
        "data": {constants.LISTENER_CONFIG_SECRET_KEY: _b64(body)},
    }


def _proxy_env(listener: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Python only: the listener container's proxy variables, one per configured part."""
    proxy = (listener.get("spec") or {}).get("proxy")
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
    spec = listener.get("spec") or {}
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
    meta = pod.setdefault("metadata", {})
    tmeta = template.get("metadata") or {}
    annotations = meta.setdefault("annotations", {})
    for key, value in (tmeta.get("annotations") or {}).items():
        annotations.setdefault(key, value)
    labels = meta.setdefault("labels", {})
    for key, value in (tmeta.get("labels") or {}).items():
        labels.setdefault(key, value)
    spec = pod["spec"]
    tspec = template.get("spec") or {}
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


def new_scale_set_listener_service_account(listener: Mapping[str, Any], *, options: ListenerBuildOptions) -> Object:
    """The listener's ServiceAccount (same name and namespace), controlled by the listener.

    Labels: the listener's plus scale-set namespace and name; ``spec.serviceAccountMetadata``
    sits underneath. Annotations: that metadata's, else an empty map.

    Ports: ResourceBuilder.newScaleSetListenerServiceAccount
    """
    meta = listener["metadata"]
    spec = listener.get("spec") or {}
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
    spec = listener.get("spec") or {}
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
    spec = listener.get("spec") or {}
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
    spec = listener.get("spec") or {}
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


def new_autoscaling_listener_proxy_secret(listener: Mapping[str, Any], data: Mapping[str, bytes]) -> Object:
    """The listener's proxy secret ``<listener>-proxy``: scale-set labels, empty annotations, ``data``.

    Args:
        data: raw (not base64) values under ``http_proxy``, ``https_proxy``, ``no_proxy``.

    Ports: ResourceBuilder.newAutoscalingListenerProxySecret
    """
    spec = listener.get("spec") or {}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": proxy_listener_secret_name(listener),
            "namespace": listener["metadata"]["namespace"],
            "labels": {
                constants.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE: spec.get("autoscalingRunnerSetNamespace", ""),
                constants.LABEL_KEY_GITHUB_SCALE_SET_NAME: spec.get("autoscalingRunnerSetName", ""),
            },
            "annotations": {},
            "ownerReferences": [controller_reference(listener)],
        },
        "data": {key: _b64(value) for key, value in data.items()},
    }
