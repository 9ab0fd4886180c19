"""What the listener builders take besides the objects, and the names of the listener's objects.

Ports: ResourceBuilder.ExcludeLabelPropagationPrefixes, the package settings scaleSetListenerLogLevel,
scaleSetListenerLogFormat, scaleSetListenerEntrypoint, listenerMetricsServerConfig, scaleSetListenerName
and the other name helpers of resourcebuilder.go
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import objects
from arc_controllers.resourcebuilder.labels import fnv_hash_string

__all__ = [
    "LISTENER_CONTAINER_NAME",
    "ListenerBuildOptions",
    "ListenerMetricsServerConfig",
    "proxy_listener_secret_name",
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


def _hash_suffix(namespace: str, runner_group: str, config_url: str) -> str:
    """Ports: hashSuffix"""
    return fnv_hash_string(f"{namespace}@{runner_group}@{config_url}")[: constants.NAME_HASH_LENGTH]


def scale_set_listener_name(autoscaling_runner_set: Mapping[str, Any]) -> str:
    """``<ARS name>-<hash8 of "ns@runnerGroup@configUrl">-listener``. Ports: scaleSetListenerName"""
    meta = autoscaling_runner_set["metadata"]
    spec = objects.spec(autoscaling_runner_set)
    suffix = _hash_suffix(meta["namespace"], spec.get("runnerGroup") or "", spec.get("githubConfigUrl") or "")
    return f"{meta['name']}-{suffix}-listener"


def scale_set_listener_config_name(listener: Mapping[str, Any]) -> str:
    """``<listener>-config``. Ports: scaleSetListenerConfigName"""
    return str(listener["metadata"]["name"]) + constants.LISTENER_CONFIG_SECRET_SUFFIX


def proxy_listener_secret_name(listener: Mapping[str, Any]) -> str:
    """``<listener>-proxy``. Ports: proxyListenerSecretName"""
    return str(listener["metadata"]["name"]) + constants.LISTENER_PROXY_SECRET_SUFFIX
