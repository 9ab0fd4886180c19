"""Desired objects for a scale set's listener: the AutoscalingListener and everything it runs on.

The AutoscalingListener lives in the controller namespace and carries no owner reference
(owners cannot cross namespaces); its ServiceAccount, config secret, proxy secret and pod
are controlled by it; its Role and RoleBinding live in the scale set's namespace and are
found by the ``auto-scaling-listener-*`` labels. Pure functions over plain JSON objects,
one module per family: `autoscalinglistener`, `secrets` (config and proxy secrets), `pod`,
`rbac` (ServiceAccount, Role, RoleBinding) and `options` (build options and names).

Ports: controllers/actions.github.com/resourcebuilder.go (newAutoscalingListener,
newScaleSetListenerConfig, newScaleSetListenerPod, mergeListenerPodWithTemplate,
mergeListenerContainer, newScaleSetListenerServiceAccount, newScaleSetListenerRole,
newScaleSetListenerRoleBinding, newAutoscalingListenerProxySecret, rulesForListenerRole,
scaleSetListenerName and the other name helpers)
"""

from __future__ import annotations

from arc_controllers.resourcebuilder.listener.autoscalinglistener import new_autoscaling_listener
from arc_controllers.resourcebuilder.listener.options import (
    LISTENER_CONTAINER_NAME,
    ListenerBuildOptions,
    ListenerMetricsServerConfig,
    proxy_listener_secret_name,
    scale_set_listener_config_name,
    scale_set_listener_name,
)
from arc_controllers.resourcebuilder.listener.pod import merge_listener_pod_with_template, new_scale_set_listener_pod
from arc_controllers.resourcebuilder.listener.rbac import (
    new_scale_set_listener_role,
    new_scale_set_listener_role_binding,
    new_scale_set_listener_service_account,
    rules_for_listener_role,
)
from arc_controllers.resourcebuilder.listener.secrets import (
    new_autoscaling_listener_proxy_secret,
    new_scale_set_listener_config,
)

__all__ = [
    "LISTENER_CONTAINER_NAME",
    "ListenerBuildOptions",
    "ListenerMetricsServerConfig",
    "merge_listener_pod_with_template",
    "new_autoscaling_listener",
    "new_autoscaling_listener_proxy_secret",
    "new_scale_set_listener_config",
    "new_scale_set_listener_pod",
    "new_scale_set_listener_role",
    "new_scale_set_listener_role_binding",
    "new_scale_set_listener_service_account",
    "proxy_listener_secret_name",
    "rules_for_listener_role",
    "scale_set_listener_config_name",
    "scale_set_listener_name",
]
