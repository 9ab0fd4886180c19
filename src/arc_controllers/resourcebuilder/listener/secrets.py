"""The listener's secrets: the config secret it reads at start, and the proxy secret its pod's env names.

Ports: ResourceBuilder.newScaleSetListenerConfig and ResourceBuilder.newAutoscalingListenerProxySecret
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping
from typing import Any

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import objects
from arc_controllers.api.v1alpha1.appconfig import AppConfig
from arc_controllers.resourcebuilder.labels import controller_reference, filter_and_merge_labels
from arc_controllers.resourcebuilder.listener.options import (
    ListenerBuildOptions,
    ListenerMetricsServerConfig,
    proxy_listener_secret_name,
    scale_set_listener_config_name,
)
from reconcilekit.client.interfaces import Object

__all__ = ["new_autoscaling_listener_proxy_secret", "new_scale_set_listener_config"]


def _b64(raw: bytes) -> str:
    """Python only: base64 text of ``raw``."""
    return base64.b64encode(raw).decode("ascii")


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


def _add_credentials(config: dict[str, Any], spec: Mapping[str, Any], app_config: AppConfig | None) -> None:
    """The GitHub token or app credentials, or the vault type, lookup key and Azure settings.

    Raises:
        ValueError: no vault and no app config.

    Ports: ResourceBuilder.newScaleSetListenerConfig, the credentials
    """
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
        return
    azure = vault.get("azureKeyVault") or {}
    config["vault_type"] = vault.get("type", "")
    config["vault_lookup_key"] = spec.get("githubConfigSecret", "")
    config["azure_key_vault"] = {
        "tenant_id": azure.get("tenantId", ""),
        "client_id": azure.get("clientId", ""),
        "url": azure.get("url", ""),
        "certificate_path": azure.get("certificatePath", ""),
    }


def _config_secret_metadata(listener: Mapping[str, Any], options: ListenerBuildOptions) -> dict[str, Any]:
    """Labels from ``spec.configSecretMetadata`` (only when non-empty), annotations likewise (else empty).

    Ports: ResourceBuilder.newScaleSetListenerConfig, the metadata
    """
    user = objects.spec(listener).get("configSecretMetadata") or {}
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
    return secret_meta


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
    spec = objects.spec(listener)
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
    _add_credentials(config, spec, app_config)
    _validate_listener_config(config)
    body = (json.dumps(config, separators=(",", ":")) + "\n").encode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _config_secret_metadata(listener, options),
        "data": {constants.LISTENER_CONFIG_SECRET_KEY: _b64(body)},
    }


def new_autoscaling_listener_proxy_secret(listener: Mapping[str, Any], data: Mapping[str, bytes]) -> Object:
    """The listener's proxy secret ``<listener>-proxy``: scale-set labels, empty annotations, ``data``.

    Args:
        data: raw (not base64) values under ``http_proxy``, ``https_proxy``, ``no_proxy``.

    Ports: ResourceBuilder.newAutoscalingListenerProxySecret
    """
    spec = objects.spec(listener)
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
