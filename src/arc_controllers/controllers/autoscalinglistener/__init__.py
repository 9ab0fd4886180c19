"""AutoscalingListener reconciler: runs one listener pod with its config, identity and permissions.

For each listener it keeps, in this order, a ServiceAccount, a Role and RoleBinding in the
scale set's namespace (the listener may patch its EphemeralRunnerSet and its runners), an
optional proxy secret, the config secret (`secrets`), and the pod (`pod`). A failed or
evicted pod is replaced; a ``Stopped`` listener has all of these removed but keeps its
object (`cleanup`). Secrets are not watched: after writing one the reconcile carries on in
the same pass. The decision order is `reconciler`.

Ports: controllers/actions.github.com/autoscalinglistener_controller.go
"""

from __future__ import annotations

from arc_controllers.controllers.autoscalinglistener.reconciler import AutoscalingListenerReconciler, rbac_to_listener
from arc_controllers.controllers.autoscalinglistener.secrets import AppConfigResolver

__all__ = ["AppConfigResolver", "AutoscalingListenerReconciler", "rbac_to_listener"]
