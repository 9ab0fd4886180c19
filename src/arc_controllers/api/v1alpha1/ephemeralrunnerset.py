"""EphemeralRunnerSet: the runners of one scale set, sized by the listener.

Ports: apis/actions.github.com/v1alpha1/ephemeralrunnerset_types.go (newest: #4638, #4642)
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, ClassVar

from pydantic import Field

from arc_controllers.api.v1alpha1._base import ArcModel
from arc_controllers.api.v1alpha1._markers import Format
from arc_controllers.api.v1alpha1.common import ObjectMeta, ResourceMeta
from arc_controllers.api.v1alpha1.ephemeralrunner import EphemeralRunnerSpec
from arc_controllers.api.v1alpha1.groupversion import PrinterColumn
from arc_controllers.api.v1alpha1.kinds import EPHEMERAL_RUNNER_SET
from reconcilekit.client import GroupVersionKind

__all__ = ["EphemeralRunnerSet", "EphemeralRunnerSetPhase", "EphemeralRunnerSetSpec", "EphemeralRunnerSetStatus"]


class EphemeralRunnerSetPhase(StrEnum):
    """Values of ``status.phase``.

    Ports: EphemeralRunnerSetPhase
    """

    RUNNING = "Running"
    OUTDATED = "Outdated"
    """A runner built from the applied revision exited with code 7; sticky until the revision moves."""


class EphemeralRunnerSetSpec(ArcModel):
    """EphemeralRunnerSetSpec defines the desired state of EphemeralRunnerSet.

    Upstream always writes ``patchID`` (no omitempty); absent here reads as 0.

    Ports: EphemeralRunnerSetSpec
    """

    replicas: int | None = None
    """Number of runners wanted; written by the listener."""
    patch_id: int | None = Field(None, alias="patchID")
    """Id of the listener's patch that set replicas; 0 marks a forced or collapsed state."""
    ephemeral_runner_spec: EphemeralRunnerSpec = Field(default_factory=EphemeralRunnerSpec)
    """Template of the runners."""
    ephemeral_runner_metadata: ResourceMeta | None = None
    """Labels and annotations for runners created from now on; existing runners keep theirs."""
    actionable_revision: Annotated[int | None, Format("int64")] = None
    """Revision of the runner spec; the AutoscalingRunnerSet controller bumps it on every
    runner-spec change. Unset means 0."""


class EphemeralRunnerSetStatus(ArcModel):
    """EphemeralRunnerSetStatus defines the observed state of EphemeralRunnerSet.

    Ports: EphemeralRunnerSetStatus (newest: exactly three fields)
    """

    phase: str | None = None
    """Running, or Outdated once a runner of the applied revision rejected its version."""
    applied_actionable_revision: Annotated[int | None, Format("int64")] = None
    """Last actionableRevision whose cleanup of idle and pending runners finished; only moves forward.
    Unset means 0."""
    finished_runner_cleanup_patch_id: int | None = Field(None, alias="finishedRunnerCleanupPatchID")
    """Patch id for which finished runners were deleted; no scale-up happens for that patch id."""


class EphemeralRunnerSet(ArcModel):
    """EphemeralRunnerSet is the Schema for the ephemeralrunnersets API.

    Ports: EphemeralRunnerSet
    """

    GVK: ClassVar[GroupVersionKind] = EPHEMERAL_RUNNER_SET
    PLURAL: ClassVar[str] = "ephemeralrunnersets"
    SINGULAR: ClassVar[str] = "ephemeralrunnerset"
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("DesiredReplicas", "integer", ".spec.replicas"),
        PrinterColumn("Phase", "string", ".status.phase"),
    )

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: EphemeralRunnerSetSpec = Field(default_factory=EphemeralRunnerSetSpec)
    status: EphemeralRunnerSetStatus | None = None
