"""AutoscalingRunnerSet reconciler: a user's scale set becomes a registered scale set, one runner set, one listener.

It registers the scale set with the Actions service (`registration`), keeps the one
EphemeralRunnerSet (named like the AutoscalingRunnerSet) in step with the runner spec,
bumping ``spec.actionableRevision`` only when the runner spec really changed (`runnerset`),
and keeps one AutoscalingListener in the controller namespace (`listener`). When the runners
reject their spec the scale set is parked (``Outdated``, `parking`): listener stopped, runner
set pinned to zero, until the runner spec changes. It never writes the runner set's
``replicas``/``patchID`` outside parking: those belong to the listener. Deletion is `cleanup`;
the decision order is `reconciler`.

Ports: controllers/actions.github.com/autoscalingrunnerset_controller.go
"""

from __future__ import annotations

from arc_controllers.controllers.autoscalingrunnerset.indexing import (
    AUTOSCALING_RUNNER_SET_OWNER_KEY,
    autoscaling_runner_set_owner_index_value,
    listener_scale_set_index,
)
from arc_controllers.controllers.autoscalingrunnerset.reconciler import AutoscalingRunnerSetReconciler
from arc_controllers.controllers.autoscalingrunnerset.registration import (
    ScaleSetActionsClient,
    ScaleSetClientFactory,
)

__all__ = [
    "AUTOSCALING_RUNNER_SET_OWNER_KEY",
    "AutoscalingRunnerSetReconciler",
    "ScaleSetActionsClient",
    "ScaleSetClientFactory",
    "autoscaling_runner_set_owner_index_value",
    "listener_scale_set_index",
]
