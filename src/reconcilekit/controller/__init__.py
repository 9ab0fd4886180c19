"""Controllers: sources, a rate-limited work queue and workers that call a reconciler.

Ports: sigs.k8s.io/controller-runtime/pkg/controller
"""

from reconcilekit.controller.controller import Controller, new_controller, reconcile_id_from_context, yield_worker
from reconcilekit.controller.options import NewQueueFunc, Options

__all__ = ["Controller", "NewQueueFunc", "Options", "new_controller", "reconcile_id_from_context", "yield_worker"]
