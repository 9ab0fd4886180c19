"""AutoscalingRunnerSet: one runner scale set, as a user declares it.

Ports: apis/actions.github.com/v1alpha1/autoscalingrunnerset_types.go
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, ClassVar

from pydantic import Field

from arc_controllers.api.v1alpha1._base import ArcModel
from arc_controllers.api.v1alpha1._markers import Embedded, Format, Minimum, XValidation
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
from arc_controllers.api.v1alpha1.kinds import AUTOSCALING_RUNNER_SET
from arc_controllers.api.v1alpha1.listenerconfig import ListenerConfig
from reconcilekit.client import GroupVersionKind

__all__ = [
    "AutoscalingRunnerSet",
    "AutoscalingRunnerSetPhase",
    "AutoscalingRunnerSetSpec",
    "AutoscalingRunnerSetStatus",
]


class AutoscalingRunnerSetPhase(StrEnum):
    """Values of ``status.phase``.

    Ports: AutoscalingRunnerSetPhase
    """

    PENDING = "Pending"
    """A spec change or a listener rebuild is in progress."""
    RUNNING = "Running"
    """The last reconcile completed and ``observedGeneration`` caught up."""
    OUTDATED = "Outdated"
    """Runners rejected the runner spec (exit code 7): the listener is stopped and the set pinned to 0."""


class AutoscalingRunnerSetSpec(ArcModel):
    """AutoscalingRunnerSetSpec defines the desired state of AutoscalingRunnerSet.

    Ports: AutoscalingRunnerSetSpec
    Beyond: ARC #2633: ``minRunners > maxRunners`` is refused at admission (a CEL rule), not accepted and ignored.
    """

    X_VALIDATIONS: ClassVar[tuple[XValidation, ...]] = (
        XValidation(
            rule="!has(self.minRunners) || !has(self.maxRunners) || self.minRunners <= self.maxRunners",
            message="minRunners must be less than or equal to maxRunners",
        ),
    )

    github_config_url: str | None = Field(None, alias="githubConfigUrl")
    """URL of the enterprise, organization or repository the runners register with. Required."""
    github_config_secret: str | None = Field(None, alias="githubConfigSecret")
    """Name of the secret with the GitHub credentials (or the vault entry when vaultConfig is set). Required."""
    runner_group: str | None = None
    """Runner group of the scale set; empty means the default group."""
    runner_scale_set_name: str | None = None
    """Name of the scale set in GitHub; the controller fills in the object's name when empty."""
    runner_scale_set_labels: list[str] | None = None
    """Extra labels of the scale set, besides its name."""
    proxy: ProxyConfig | None = None
    """Proxies for the traffic to GitHub."""
    github_server_tls: TLSConfig | None = Field(None, alias="githubServerTLS")
    """Extra CA certificates for the GitHub server."""
    vault_config: VaultConfig | None = None
    """Read the GitHub credentials from a vault."""
    template: Annotated[dict[str, Any] | None, Embedded("PodTemplateSpec")] = None
    """Pod template of the runners. Required."""
    autoscaling_listener: ResourceMeta | None = None
    """Labels and annotations for the AutoscalingListener."""
    listener_metrics: MetricsConfig | None = None
    """Metrics the listener publishes."""
    listener_template: Annotated[dict[str, Any] | None, Embedded("PodTemplateSpec")] = None
    """Pod template merged into the listener pod."""
    listener_service_account_metadata: ResourceMeta | None = None
    """Labels and annotations for the listener's ServiceAccount."""
    listener_role_metadata: ResourceMeta | None = None
    """Labels and annotations for the listener's Role."""
    listener_role_binding_metadata: ResourceMeta | None = None
    """Labels and annotations for the listener's RoleBinding."""
    listener_config_secret_metadata: ResourceMeta | None = None
    """Labels and annotations for the listener's config Secret."""
    ephemeral_runner_set_metadata: ResourceMeta | None = None
    """Labels and annotations for the EphemeralRunnerSet."""
    ephemeral_runner_metadata: ResourceMeta | None = None
    """Labels and annotations for each EphemeralRunner."""
    ephemeral_runner_config_secret_metadata: ResourceMeta | None = None
    """Labels and annotations for each runner's JIT config Secret."""
    max_runners: Annotated[int | None, Minimum(0)] = None
    """Most runners at once; unset means unbounded."""
    min_runners: Annotated[int | None, Minimum(0)] = None
    """Runners kept even without jobs; unset means 0."""
    listener_config: ListenerConfig | None = None
    """Settings of the listener pod itself."""


class AutoscalingRunnerSetStatus(ArcModel):
    """AutoscalingRunnerSetStatus defines the observed state of AutoscalingRunnerSet.

    Ports: AutoscalingRunnerSetStatus (newest: counters removed by #4557, observedGeneration by #4636)
    """

    phase: str | None = None
    """Pending, Running or Outdated; written only by the AutoscalingRunnerSet controller."""
    observed_generation: Annotated[int | None, Format("int64")] = None
    """The metadata.generation the last completed reconcile acted on."""
    conditions: Annotated[list[Condition] | None, CONDITIONS_LIST] = None
    """Ready (True, False or Unknown) with the reason an operator acts on; our addition, optional.
    Beyond: ARC #2633, #4337: errors were visible only in the controller's log."""


class AutoscalingRunnerSet(ArcModel):
    """AutoscalingRunnerSet is the Schema for the autoscalingrunnersets API.

    Ports: AutoscalingRunnerSet
    """

    GVK: ClassVar[GroupVersionKind] = AUTOSCALING_RUNNER_SET
    PLURAL: ClassVar[str] = "autoscalingrunnersets"
    SINGULAR: ClassVar[str] = "autoscalingrunnerset"
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Minimum Runners", "integer", ".spec.minRunners"),
        PrinterColumn("Maximum Runners", "integer", ".spec.maxRunners"),
        PrinterColumn("Phase", "string", ".status.phase"),
        PrinterColumn("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Reason", "string", '.status.conditions[?(@.type=="Ready")].reason'),
    )

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AutoscalingRunnerSetSpec = Field(default_factory=AutoscalingRunnerSetSpec)
    status: AutoscalingRunnerSetStatus | None = None
