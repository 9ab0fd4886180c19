"""EphemeralRunner reconciler: one JIT registration, one secret, one pod per runner.

`reconciler` decides; its helpers act, each given its dependencies: `resources` (the
runner's own writes, its pod and JIT secret, its registration ID) and `registration`
(JIT registration with the Actions service).

Ports: controllers/actions.github.com/ephemeralrunner_controller.go
"""

from arc_controllers.controllers.ephemeralrunner.reconciler import DEFAULT_CONCURRENCY, EphemeralRunnerReconciler
from arc_controllers.controllers.ephemeralrunner.resources import pod_terminated, secret_value

__all__ = [
    "DEFAULT_CONCURRENCY",
    "EphemeralRunnerReconciler",
    "pod_terminated",
    "secret_value",
]
