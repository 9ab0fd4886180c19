"""The controller-side ``gha_controller_*`` metrics.

``running_listeners`` belongs to the listener reconciler; the five
``*_ephemeral_runners`` phase gauges to the EphemeralRunner reconciler, which counts
each runner in the gauge of the last phase it published for it (`RunnerPhaseMetrics`).
All are registered on the manager's registry (`reconcilekit.metrics.REGISTRY`) and served
on its metrics endpoint.

Ports: controllers/actions.github.com/metrics/metrics.go (the gauges, CommonLabels,
AddEphemeralRunner/SubEphemeralRunner, AddRunningListener/SubRunningListener)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from prometheus_client import Gauge

from arc_controllers import constants
from arc_controllers.actions.config import parse_github_config_url
from arc_controllers.api.v1alpha1 import EphemeralRunnerPhase, objects
from reconcilekit.metrics import REGISTRY

__all__ = [
    "EPHEMERAL_RUNNER_PHASE_GAUGES",
    "RUNNER_PHASE_METRICS",
    "RUNNING_LISTENERS",
    "RunnerPhaseMetrics",
    "ephemeral_runner_labels",
    "listener_labels",
    "publish_listener_down",
    "publish_listener_up",
]

log = structlog.get_logger(__name__)

_LABELS = ("name", "namespace", "repository", "organization", "enterprise")


def _runner_gauge(name: str, help_text: str) -> Gauge:
    """Python only: one ``gha_controller_<name>`` gauge with the common labels on the manager's registry."""
    return Gauge(name, help_text, _LABELS, namespace="", subsystem=constants.METRICS_SUBSYSTEM, registry=REGISTRY)


EPHEMERAL_RUNNER_PHASE_GAUGES: Mapping[str, Gauge] = {
    EphemeralRunnerPhase.PENDING: _runner_gauge(
        "pending_ephemeral_runners", "Number of ephemeral runners in a pending state."
    ),
    EphemeralRunnerPhase.RUNNING: _runner_gauge(
        "running_ephemeral_runners", "Number of ephemeral runners that have been assigned a job."
    ),
    EphemeralRunnerPhase.SUCCEEDED: _runner_gauge(
        "succeeded_ephemeral_runners", "Number of ephemeral runners in a succeeded state."
    ),
    EphemeralRunnerPhase.FAILED: _runner_gauge(
        "failed_ephemeral_runners", "Number of ephemeral runners in a failed state."
    ),
    EphemeralRunnerPhase.OUTDATED: _runner_gauge(
        "outdated_ephemeral_runners", "Number of ephemeral runners in an outdated state."
    ),
}
"""``gha_controller_{pending,running,succeeded,failed,outdated}_ephemeral_runners`` by runner phase.

Each counts the runners (of one scale set, by the common labels) whose last published
phase is that phase.
"""

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
    spec = objects.spec(listener)
    return _common_labels(
        spec.get("autoscalingRunnerSetName", ""),
        spec.get("autoscalingRunnerSetNamespace", ""),
        spec.get("githubConfigUrl", ""),
    )


def publish_listener_up(listener: Mapping[str, Any]) -> None:
    """Ports: metrics.AddRunningListener"""
    RUNNING_LISTENERS.labels(**listener_labels(listener)).set(1)


def publish_listener_down(listener: Mapping[str, Any]) -> None:
    """Ports: metrics.SubRunningListener"""
    RUNNING_LISTENERS.labels(**listener_labels(listener)).set(0)


def ephemeral_runner_labels(runner: Mapping[str, Any]) -> dict[str, str]:
    """The common labels of a runner: its scale set's name and namespace labels and the config URL's parts.

    A label the runner lacks is "" (upstream reads a missing map key).

    Raises:
        ValueError: ``spec.githubConfigUrl`` cannot be parsed.

    Ports: the CommonLabels the EphemeralRunner reconciler builds for its phase metrics
    """
    labels = objects.labels(runner)
    return _common_labels(
        labels.get(constants.LABEL_KEY_GITHUB_SCALE_SET_NAME, ""),
        labels.get(constants.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE, ""),
        objects.spec(runner).get("githubConfigUrl", ""),
    )


def _common_labels(name: str, namespace: str, config_url: str) -> dict[str, str]:
    """The five common labels: the scale set's name and namespace and the config URL's parts.

    Raises:
        ValueError: ``config_url`` cannot be parsed.

    Ports: metrics.CommonLabels
    """
    config = parse_github_config_url(config_url)
    return {
        "name": name,
        "namespace": namespace,
        "repository": config.repository,
        "organization": config.organization,
        "enterprise": config.enterprise,
    }


@dataclass(kw_only=True)
class RunnerPhaseMetrics:
    """Per-runner bookkeeping behind the phase gauges: each runner counts once, in its last published phase.

    Keyed by the runner's ``(namespace, name)``. Publishing a runner's phase subtracts it
    from the gauge of the phase published before (if any) and adds it to the new one; the
    same phase again changes nothing; the empty phase (a runner being deleted) only
    subtracts and forgets the runner. A phase without a gauge is remembered but counted
    nowhere. Not thread-safe; all callers run on the event loop.

    Differs: the labels are remembered with the phase and the subtraction uses them, where
    upstream recomputes them from the current object (a reviewer-noted gap: a runner whose
    labels changed, or whose config URL no longer parses, would otherwise be subtracted
    from the wrong series or never). A runner whose labels cannot be computed is
    subtracted from its previous phase and counted nowhere (upstream returns early).

    Ports: the ephemeralRunnerPhaseMetrics map of ephemeralrunner_controller.go with
    metrics.AddEphemeralRunner and metrics.SubEphemeralRunner
    """

    gauges: Mapping[str, Gauge] = field(default_factory=lambda: EPHEMERAL_RUNNER_PHASE_GAUGES)
    _published: dict[tuple[str, str], tuple[str, dict[str, str]]] = field(default_factory=dict, init=False)

    def publish(self, runner: Mapping[str, Any], phase: str) -> None:
        """Count ``runner`` in ``phase`` ("" = not at all) instead of its previous phase.

        Ports: the phase-metric publisher of EphemeralRunnerReconciler (@ed5c8aa0)
        """
        key = (objects.namespace(runner), objects.name(runner))
        previous = self._published.get(key)
        if previous is not None and previous[0] == phase:
            return
        labels: dict[str, str] | None = None
        if phase:
            try:
                labels = ephemeral_runner_labels(runner)
            except ValueError as err:
                log.warning("runner phase not published: bad config URL", runner=key[1], error=str(err))
        if previous is not None:
            self._add(previous[0], previous[1], -1.0)
            del self._published[key]
        if labels is not None:
            self._add(phase, labels, 1.0)
            self._published[key] = (phase, labels)

    def phase_of(self, namespace: str, name: str) -> str | None:
        """Python only: the phase last published for a runner, None when it is not counted."""
        entry = self._published.get((namespace, name))
        return entry[0] if entry is not None else None

    def _add(self, phase: str, labels: dict[str, str], delta: float) -> None:
        """Ports: metrics.updateEphemeralRunner (a phase without a gauge is ignored)"""
        gauge = self.gauges.get(phase)
        if gauge is not None:
            gauge.labels(**labels).inc(delta)


RUNNER_PHASE_METRICS = RunnerPhaseMetrics()
"""The process-wide bookkeeping, like upstream's package-level map: a controller restarted
in the same process (``arc-sim``) keeps counting against the same gauges."""
