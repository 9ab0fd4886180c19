"""AutoscalingListener: the listener pod of one scale set and what it needs.

Lives in the controller's namespace, so it points back at its AutoscalingRunnerSet
by namespace and name rather than by owner reference.

Ports: apis/actions.github.com/v1alpha1/autoscalinglistener_types.go
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, ClassVar

from pydantic import Field

from arc_controllers.api.v1alpha1._base import ArcModel
from arc_controllers.api.v1alpha1._markers import Embedded, Minimum
from arc_controllers.api.v1alpha1.common import (
    MetricsConfig,
    ObjectMeta,
    ProxyConfig,
    ResourceMeta,
    TLSConfig,
    VaultConfig,
)
from arc_controllers.api.v1alpha1.condition import CONDITIONS_LIST, Condition
from arc_controllers.api.v1alpha1.groupversion import PrinterColumn
from arc_controllers.api.v1alpha1.kinds import AUTOSCALING_LISTENER
from arc_controllers.api.v1alpha1.listenerconfig import ListenerConfig
from reconcilekit.client import GroupVersionKind

__all__ = ["AutoscalingListener", "AutoscalingListenerPhase", "AutoscalingListenerSpec", "AutoscalingListenerStatus"]


class AutoscalingListenerPhase(StrEnum):
    """Values of ``spec.phase`` (#4660); empty means Running.

    Ports: AutoscalingListenerPhase (inferred: the newest types file was not retrievable)
    """

    RUNNING = "Running"
    STOPPED = "Stopped"
    """The listener controller deletes every child of the listener but keeps the object."""


class AutoscalingListenerSpec(ArcModel):
    """AutoscalingListenerSpec defines the desired state of AutoscalingListener.

    Ports: AutoscalingListenerSpec
    """

    github_config_url: str | None = Field(None, alias="githubConfigUrl")
    """Copied from the AutoscalingRunnerSet. Required."""
    github_config_secret: str | None = Field(None, alias="githubConfigSecret")
    """Copied from the AutoscalingRunnerSet. Required."""
    runner_scale_set_id: int | None = Field(None, alias="runnerScaleSetId")
    """Id of the scale set in the Actions service. Required."""
    autoscaling_runner_set_namespace: str | None = None
    """Namespace of the AutoscalingRunnerSet this listener serves. Required."""
    autoscaling_runner_set_name: str | None = None
    """Name of the AutoscalingRunnerSet this listener serves. Required."""
    ephemeral_runner_set_name: str | None = None
    """Name of the EphemeralRunnerSet the listener scales. Required."""
    max_runners: Annotated[int | None, Minimum(0)] = None
    """Most runners at once. Required."""
    min_runners: Annotated[int | None, Minimum(0)] = None
    """Runners kept even without jobs. Required."""
    image: str | None = None
    """Listener image. Required."""
    image_pull_secrets: Annotated[list[dict[str, Any]] | None, Embedded("LocalObjectReference[]")] = None
    """Pull secrets for the listener image. Required."""
    proxy: ProxyConfig | None = None
    """Proxies for the traffic to GitHub."""
    github_server_tls: TLSConfig | None = Field(None, alias="githubServerTLS")
    """Extra CA certificates for the GitHub server."""
    vault_config: VaultConfig | None = None
    """Read the GitHub credentials from a vault."""
    metrics: MetricsConfig | None = None
    """Metrics the listener publishes."""
    template: Annotated[dict[str, Any] | None, Embedded("PodTemplateSpec")] = None
    """Pod template merged into the listener pod."""
    config_secret_metadata: ResourceMeta | None = None
    """Labels and annotations for the listener's config Secret."""
    service_account_metadata: ResourceMeta | None = None
    """Labels and annotations for the listener's ServiceAccount."""
    role_metadata: ResourceMeta | None = None
    """Labels and annotations for the listener's Role."""
    role_binding_metadata: ResourceMeta | None = None
    """Labels and annotations for the listener's RoleBinding."""
    listener_config: ListenerConfig | None = None
    """Settings of the listener pod itself."""
    phase: str | None = None
    """Running or Stopped (empty means Running); set only by the AutoscalingRunnerSet controller."""


class AutoscalingListenerStatus(ArcModel):
    """AutoscalingListenerStatus defines the observed state of AutoscalingListener.

    Ports: AutoscalingListenerStatus
    Beyond: ARC #4656: every field is our addition (optional; Go ARC's status is empty).
    """

    failure_count: int | None = Field(None, alias="failureCount")
    """Consecutive deaths of the listener pod; the next one waits 2 s doubled per failure (at most 5 min).
    Starts again at 1 after a pod that ran 10 min. Unset means 0. Our addition (ARC #4656)."""
    last_failure_time: str | None = Field(None, alias="lastFailureTime")
    """When the last counted death happened (the listener container's finishedAt), RFC 3339.
    Our addition (ARC #4656)."""
    conditions: Annotated[list[Condition] | None, CONDITIONS_LIST] = None
    """Ready (True, False or Unknown) with the reason the listener cannot run; our addition, optional.
    Beyond: ARC #4337, #4656: a listener that cannot run said so only in the controller's log."""


class AutoscalingListener(ArcModel):
    """AutoscalingListener is the Schema for the autoscalinglisteners API.

    Ports: AutoscalingListener
    """

    GVK: ClassVar[GroupVersionKind] = AUTOSCALING_LISTENER
    PLURAL: ClassVar[str] = "autoscalinglisteners"
    SINGULAR: ClassVar[str] = "autoscalinglistener"
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("GitHub Configure URL", "string", ".spec.githubConfigUrl"),
        PrinterColumn("AutoscalingRunnerSet Namespace", "string", ".spec.autoscalingRunnerSetNamespace"),
        PrinterColumn("AutoscalingRunnerSet Name", "string", ".spec.autoscalingRunnerSetName"),
        # Beyond: ARC #4656: `kubectl get autoscalinglisteners` shows why a listener does not run.
        PrinterColumn("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Reason", "string", '.status.conditions[?(@.type=="Ready")].reason'),
    )

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AutoscalingListenerSpec = Field(default_factory=AutoscalingListenerSpec)
    status: AutoscalingListenerStatus | None = None
