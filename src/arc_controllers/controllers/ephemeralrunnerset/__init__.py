"""EphemeralRunnerSet reconciler: keeps the set's EphemeralRunners at ``spec.replicas``.

`reconciler` decides; its helpers act, each given its dependencies: `runners` (create,
remove and clean up runners), `proxysecret` (the set's proxy secret), `status` (the
phase, the applied revision, the finished-runner cleanup marker).

Ports: controllers/actions.github.com/ephemeralrunnerset_controller.go
"""

from arc_controllers.controllers.ephemeralrunnerset.reconciler import DEFAULT_CONCURRENCY, EphemeralRunnerSetReconciler
from arc_controllers.controllers.ephemeralrunnerset.runners import CREATION_EXPECTATION_TTL
from arc_controllers.controllers.indexers import RESOURCE_OWNER_KEY

__all__ = [
    "CREATION_EXPECTATION_TTL",
    "DEFAULT_CONCURRENCY",
    "RESOURCE_OWNER_KEY",
    "EphemeralRunnerSetReconciler",
]
