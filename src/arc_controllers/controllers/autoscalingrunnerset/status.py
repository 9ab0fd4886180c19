"""The AutoscalingRunnerSet's status: ``phase`` and ``observedGeneration``, written only when they change.

Ports: AutoscalingRunnerSetReconciler.updateStatus and the phase writes of its Reconcile
"""

from __future__ import annotations

from dataclasses import dataclass

from arc_controllers.api.v1alpha1 import AutoscalingRunnerSetPhase, objects
from arc_controllers.controllers.patching import LazyCopy
from reconcilekit.client.interfaces import Client, Object
from reconcilekit.reconcile import Result

__all__ = ["ScaleSetStatus", "is_parked"]


def _generation(ars: Object) -> int:
    """Python only: ``metadata.generation`` (0 when unset)."""
    return int(objects.meta(ars).get("generation") or 0)


def _observed_generation(ars: Object) -> int:
    """Python only: ``status.observedGeneration`` (0 when unset)."""
    return int(objects.status(ars).get("observedGeneration") or 0)


def is_parked(ars: Object) -> bool:
    """Python only: the scale set is ``Outdated`` (its runners rejected the runner spec)."""
    return objects.status(ars).get("phase") == AutoscalingRunnerSetPhase.OUTDATED


@dataclass(frozen=True, kw_only=True)
class ScaleSetStatus:
    """Python only: the status writer the reconciler and its parts share."""

    client: Client
    """Where the status patches go."""

    async def update(self, ars: Object, phase: str, *, observed_generation: int | None = None) -> None:
        """Write ``phase`` and ``observedGeneration`` (kept as is when None); no request when both hold.

        Ports: AutoscalingRunnerSetReconciler.updateStatus
        """
        generation = _observed_generation(ars) if observed_generation is None else observed_generation
        if objects.status(ars).get("phase") == phase and _observed_generation(ars) == generation:
            return
        lazy = LazyCopy(ars)
        status = lazy.mutate().setdefault("status", {})
        status["phase"] = phase
        status["observedGeneration"] = generation
        await self.client.status().patch(ars, lazy.merge_from())

    async def mark_pending(self, ars: Object, *, unparked: bool) -> None:
        """``Pending`` while a new generation (or an un-parked runner spec) is worked in; the pass goes on.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the un-park and new-generation status writes
        """
        if unparked or _generation(ars) > _observed_generation(ars):
            await self.update(ars, AutoscalingRunnerSetPhase.PENDING)

    async def park(self, ars: Object) -> None:
        """``Outdated``: the runners rejected the runner spec they run.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the park status write
        """
        await self.update(ars, AutoscalingRunnerSetPhase.OUTDATED)

    async def mark_running(self, ars: Object) -> Result:
        """``Running`` for this generation: everything is as the spec asks.

        Ports: AutoscalingRunnerSetReconciler.Reconcile, the final status write
        """
        await self.update(ars, AutoscalingRunnerSetPhase.RUNNING, observed_generation=_generation(ars))
        return Result()
