"""The scale set's last step: Running with Ready from its listener, or Pending while the listener cannot run.

Beyond: ARC #2633, #4337: a scale set whose listener could not run (a 403 creating its Role,
a crash loop) said Running; now its phase is Pending and its Ready condition carries the
listener's reason and message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arc_controllers.api.v1alpha1 import AutoscalingRunnerSetPhase, objects
from arc_controllers.api.v1alpha1.condition import ConditionReason
from arc_controllers.controllers.autoscalingrunnerset.status import ScaleSetStatus
from arc_controllers.controllers.conditions import ReadyConditions, ready_condition
from reconcilekit.client.interfaces import Client, Object
from reconcilekit.conditions import CONDITION_FALSE, CONDITION_TRUE, CONDITION_UNKNOWN
from reconcilekit.reconcile import Result
from reconcilekit.recorder import EventRecorder

__all__ = ["ScaleSetReady"]


@dataclass(kw_only=True)
class ScaleSetReady:
    """Python only: the phase and Ready condition a scale set ends its pass with."""

    client: Client
    """Where the status patches go."""
    status: ScaleSetStatus
    """Writes the phase."""
    recorder: EventRecorder | None = None
    """Warning Events when Ready turns False."""
    conditions: ReadyConditions = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Python only: the condition writer over the same client and recorder."""
        self.conditions = ReadyConditions(client=self.client, recorder=self.recorder)

    async def mark(self, ars: Object, listener: Object) -> Result:
        """``Pending`` with Ready=False (the listener's reason) while the listener reports it cannot
        run; else ``Running`` for this generation (Ports: the final status write of Reconcile) with
        Ready True once the listener runs, Unknown while it starts.

        The listener's condition changes bring the next pass (its events are watched); no requeue.
        """
        found = ready_condition(listener)
        listener_name = f"{objects.namespace(listener)}/{objects.name(listener)}"
        if found is not None and found.get("status") == CONDITION_FALSE:
            await self.status.update(ars, AutoscalingRunnerSetPhase.PENDING)
            await self.conditions.set(
                ars,
                status=CONDITION_FALSE,
                reason=str(found.get("reason") or "ListenerFailed"),
                message=f"listener {listener_name} cannot run: {found.get('message', '')}",
            )
            return Result()
        result = await self.status.mark_running(ars)
        if found is not None and found.get("status") == CONDITION_TRUE:
            await self.conditions.set(
                ars, status=CONDITION_TRUE, reason=ConditionReason.RUNNING, message=f"listener {listener_name} runs"
            )
        else:
            await self.conditions.set(
                ars,
                status=CONDITION_UNKNOWN,
                reason=ConditionReason.LISTENER_STARTING,
                message=f"listener {listener_name} is not running yet",
            )
        return result
