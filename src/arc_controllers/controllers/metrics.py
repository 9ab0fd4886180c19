"""The controller-side ``gha_controller_*`` metrics of the listener reconciler.

Registered on the manager's registry (`reconcilekit.metrics.REGISTRY`), served on its
metrics endpoint.

Ports: controllers/actions.github.com/metrics/metrics.go (runningListeners and CommonLabels)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import Gauge

from arc_controllers import constants
from arc_controllers.actions.config import parse_github_config_url
from reconcilekit.metrics import REGISTRY

__all__ = ["RUNNING_LISTENERS", "listener_labels", "publish_listener_down", "publish_listener_up"]

_LABELS = ("name", "namespace", "repository", "organization", "enterprise")

RUNNING_LISTENERS = Gauge(
    "running_listeners",
    "Number of listeners that are running.",
    _LABELS,
    namespace="",
    subsystem=constants.METRICS_SUBSYSTEM,
    registry=REGISTRY,
)
"""``gha_controller_running_listeners``: 1 while a listener's container runs, 0 once its pod is gone."""


def listener_labels(listener: Mapping[str, Any]) -> dict[str, str]:
    """The common labels of a listener: its scale set's name and namespace and the config URL's parts.

    Raises:
        ValueError: the config URL cannot be parsed (the listener could never start).

    Ports: the CommonLabels the listener reconciler builds
    """
    spec = listener.get("spec") or {}
    config = parse_github_config_url(spec.get("githubConfigUrl", ""))
    return {
        "name": spec.get("autoscalingRunnerSetName", ""),
        "namespace": spec.get("autoscalingRunnerSetNamespace", ""),
        "repository": config.repository,
        "organization": config.organization,
        "enterprise": config.enterprise,
    }


def publish_listener_up(listener: Mapping[str, Any]) -> None:
    """Ports: metrics.AddRunningListener"""
    RUNNING_LISTENERS.labels(**listener_labels(listener)).set(1)


def publish_listener_down(listener: Mapping[str, Any]) -> None:
    """Ports: metrics.SubRunningListener"""
    RUNNING_LISTENERS.labels(**listener_labels(listener)).set(0)
