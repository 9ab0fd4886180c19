"""How AutoscalingListeners find their AutoscalingRunnerSet: the field index and the watch mapping.

Ports: autoscalingRunnerSetOwnerKey and the listener part of SetupIndexers; the AutoscalingListener
watch of AutoscalingRunnerSetReconciler.SetupWithManager
"""

from __future__ import annotations

from arc_controllers.api.v1alpha1 import objects
from reconcilekit.client.interfaces import Object
from reconcilekit.reconcile import Request

__all__ = [
    "AUTOSCALING_RUNNER_SET_OWNER_KEY",
    "autoscaling_runner_set_owner_index_value",
    "listener_scale_set_index",
    "listener_to_scale_set",
]

AUTOSCALING_RUNNER_SET_OWNER_KEY = ".spec.autoscalingRunnerSet"
"""The client-side field index on AutoscalingListeners naming their scale set. Ports: autoscalingRunnerSetOwnerKey"""


def autoscaling_runner_set_owner_index_value(namespace: str, name: str) -> str:
    """``<namespace>/<name>``: the index value of a listener's scale set. Ports: autoscalingRunnerSetOwnerIndexValue"""
    return f"{namespace}/{name}"


def listener_scale_set_index(obj: Object) -> list[str]:
    """Python only: the ``.spec.autoscalingRunnerSet`` index value of a listener."""
    spec = objects.spec(obj)
    namespace, name = spec.get("autoscalingRunnerSetNamespace"), spec.get("autoscalingRunnerSetName")
    if not namespace or not name:
        return []
    return [autoscaling_runner_set_owner_index_value(namespace, name)]


def listener_to_scale_set(obj: Object) -> list[Request]:
    """Python only: map a listener event to its AutoscalingRunnerSet."""
    spec = objects.spec(obj)
    namespace, name = spec.get("autoscalingRunnerSetNamespace"), spec.get("autoscalingRunnerSetName")
    return [Request(namespace, name)] if namespace and name else []
