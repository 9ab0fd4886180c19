"""EphemeralRunner: one single-job runner and the pod it runs in.

Ports: apis/actions.github.com/v1alpha1/ephemeralrunner_types.go
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from arc_controllers.api.v1alpha1._base import ArcModel
from arc_controllers.api.v1alpha1._markers import REQUIRED, Embedded, Format
from arc_controllers.api.v1alpha1.common import ObjectMeta, ProxyConfig, ResourceMeta, TLSConfig, VaultConfig
from arc_controllers.api.v1alpha1.groupversion import PrinterColumn
from arc_controllers.api.v1alpha1.kinds import EPHEMERAL_RUNNER
from arc_controllers.api.v1alpha1.phases import EphemeralRunnerPhase
from reconcilekit.client import GroupVersionKind

__all__ = [
    "EphemeralRunner",
    "EphemeralRunnerPhase",
    "EphemeralRunnerSpec",
    "EphemeralRunnerStatus",
]


class EphemeralRunnerSpec(ArcModel):
    """EphemeralRunnerSpec defines the desired state of EphemeralRunner.

    The runner's pod template is inlined: ``metadata`` and ``spec`` sit next to
    the runner's own fields.

    Ports: EphemeralRunnerSpec
    """

    github_config_url: Annotated[str | None, REQUIRED] = Field(None, alias="githubConfigUrl")
    """URL of the enterprise, organization or repository the runner registers with."""
    github_config_secret: Annotated[str | None, REQUIRED] = Field(None, alias="githubConfigSecret")
    """Name of the secret with the GitHub credentials."""
    github_server_tls: TLSConfig | None = Field(None, alias="githubServerTLS")
    """Extra CA certificates for the GitHub server."""
    runner_scale_set_id: Annotated[int | None, REQUIRED] = Field(None, alias="runnerScaleSetId")
    """Id of the scale set in the Actions service."""
    proxy: ProxyConfig | None = None
    """Proxies for the traffic to GitHub."""
    proxy_secret_ref: str | None = None
    """Secret with the runner pod's proxy env vars, set by the EphemeralRunnerSet controller."""
    vault_config: VaultConfig | None = None
    """Read the GitHub credentials from a vault."""
    ephemeral_runner_config_secret_metadata: ResourceMeta | None = None
    """Labels and annotations for the runner's JIT config Secret."""
    metadata: Annotated[dict[str, Any] | None, Embedded("EmbeddedObjectMeta")] = None
    """Metadata of the runner pod (pod template metadata)."""
    spec: Annotated[dict[str, Any] | None, Embedded("PodSpec")] = None
    """Spec of the runner pod (pod template spec)."""


class EphemeralRunnerStatus(ArcModel):
    """EphemeralRunnerStatus defines the observed state of EphemeralRunner.

    Ports: EphemeralRunnerStatus
    """

    ready: bool | None = None
    """True only while the runner pod is ready."""
    phase: str | None = None
    """Pending, Running, Succeeded, Failed or Outdated (see EphemeralRunnerPhase).
    The controller writes all but Running, which the listener writes."""
    reason: str | None = None
    """Short machine-readable reason of the last phase change."""
    message: str | None = None
    """Human-readable detail of the last phase change."""
    runner_id: int | None = None
    """Id of the runner in the Actions service, from the JIT config."""
    runner_name: str | None = None
    """Name of the runner in the Actions service."""
    failures: dict[str, Annotated[str, Format("date-time")]] | None = None
    """When each failed pod failed, keyed by the pod's UID (RFC 3339 times)."""
    job_request_id: Annotated[int | None, Format("int64")] = None
    """Request id of the job this runner took; written by the listener."""
    job_id: str | None = None
    """Id of the job this runner took; written by the listener."""
    job_repository_name: str | None = None
    """owner/repo of the job; written by the listener."""
    job_workflow_ref: str | None = None
    """Workflow ref of the job; written by the listener."""
    workflow_run_id: Annotated[int | None, Format("int64")] = None
    """Workflow run id of the job; written by the listener."""
    job_display_name: str | None = None
    """Display name of the job; written by the listener."""
    job_event_name: str | None = None
    """Event that triggered the job's workflow (push, pull_request, ...); written by the listener."""
    job_queued_at: str | None = None
    """When the job was queued (RFC 3339); written by the listener."""
    job_scale_set_assigned_at: str | None = None
    """When the job was assigned to this scale set (RFC 3339); written by the listener."""
    job_runner_assigned_at: str | None = None
    """When the job was assigned to this runner (RFC 3339); written by the listener."""


class EphemeralRunner(ArcModel):
    """EphemeralRunner is the Schema for the ephemeralrunners API.

    Ports: EphemeralRunner
    """

    GVK: ClassVar[GroupVersionKind] = EPHEMERAL_RUNNER
    PLURAL: ClassVar[str] = "ephemeralrunners"
    SINGULAR: ClassVar[str] = "ephemeralrunner"
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("GitHub Config URL", "string", ".spec.githubConfigUrl"),
        PrinterColumn("RunnerId", "number", ".status.runnerId"),
        PrinterColumn("Phase", "string", ".status.phase"),
        PrinterColumn("JobRepository", "string", ".status.jobRepositoryName"),
        PrinterColumn("JobWorkflowRef", "string", ".status.jobWorkflowRef"),
        PrinterColumn("WorkflowRunId", "number", ".status.workflowRunId"),
        PrinterColumn("JobDisplayName", "string", ".status.jobDisplayName"),
        PrinterColumn("JobId", "string", ".status.jobId"),
        PrinterColumn("Message", "string", ".status.message"),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    )

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: EphemeralRunnerSpec = Field(default_factory=EphemeralRunnerSpec)
    status: EphemeralRunnerStatus | None = None
