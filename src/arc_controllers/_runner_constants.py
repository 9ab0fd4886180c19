"""The names the controllers and the resource builders share, in short local spellings.

Python only: every value comes from `arc_controllers.constants` (constants.go); this
module adds the GroupVersionKinds every reconciler watches or owns and the runner phases
the runner code speaks in. The kinds live here, not in one reconciler's module, so that the
four reconcilers stay independent of each other (the import-linter independence contract).
"""

from __future__ import annotations

from typing import Final

from arc_controllers import constants as c
from reconcilekit.client.interfaces import GroupVersionKind

__all__ = [
    "ANNOTATION_ACTIONABLE_REVISION",
    "ANNOTATION_PATCH_ID",
    "API_VERSION",
    "AUTOSCALING_LISTENER",
    "AUTOSCALING_RUNNER_SET",
    "ENV_CONTAINER_HOOKS",
    "ENV_RUNNER_DEPRECATED_EXIT_CODE",
    "ENV_RUNNER_EXTRA_USER_AGENT",
    "ENV_RUNNER_JIT_CONFIG",
    "EPHEMERAL_RUNNER",
    "EPHEMERAL_RUNNER_ACTIONS_FINALIZER",
    "EPHEMERAL_RUNNER_CONTAINER_NAME",
    "EPHEMERAL_RUNNER_FINALIZER",
    "EPHEMERAL_RUNNER_SET",
    "EPHEMERAL_RUNNER_SET_FINALIZER",
    "GROUP",
    "JIT_TOKEN_KEY",
    "LABEL_COMPONENT",
    "LABEL_POD_TEMPLATE_HASH",
    "LABEL_RUNNER_POD",
    "LABEL_RUNNER_TEMPLATE_HASH",
    "LABEL_SCALE_SET_NAME",
    "LABEL_SCALE_SET_NAMESPACE",
    "PHASE_FAILED",
    "PHASE_OUTDATED",
    "PHASE_PENDING",
    "PHASE_RUNNING",
    "PHASE_SUCCEEDED",
    "POD",
    "ROLE",
    "ROLE_BINDING",
    "SECRET",
    "SERVICE_ACCOUNT",
]

GROUP: Final = "actions.github.com"
API_VERSION: Final = "actions.github.com/v1alpha1"

AUTOSCALING_RUNNER_SET: Final = GroupVersionKind(GROUP, "v1alpha1", "AutoscalingRunnerSet")
AUTOSCALING_LISTENER: Final = GroupVersionKind(GROUP, "v1alpha1", "AutoscalingListener")
EPHEMERAL_RUNNER_SET: Final = GroupVersionKind(GROUP, "v1alpha1", "EphemeralRunnerSet")
EPHEMERAL_RUNNER: Final = GroupVersionKind(GROUP, "v1alpha1", "EphemeralRunner")
POD: Final = GroupVersionKind("", "v1", "Pod")
SECRET: Final = GroupVersionKind("", "v1", "Secret")
SERVICE_ACCOUNT: Final = GroupVersionKind("", "v1", "ServiceAccount")
ROLE: Final = GroupVersionKind("rbac.authorization.k8s.io", "v1", "Role")
ROLE_BINDING: Final = GroupVersionKind("rbac.authorization.k8s.io", "v1", "RoleBinding")

LABEL_COMPONENT: Final = c.LABEL_KEY_KUBERNETES_COMPONENT
LABEL_SCALE_SET_NAME: Final = c.LABEL_KEY_GITHUB_SCALE_SET_NAME
LABEL_SCALE_SET_NAMESPACE: Final = c.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE
LABEL_RUNNER_TEMPLATE_HASH: Final = c.LABEL_KEY_RUNNER_TEMPLATE_HASH
LABEL_POD_TEMPLATE_HASH: Final = c.LABEL_KEY_POD_TEMPLATE_HASH
LABEL_RUNNER_POD: Final = c.LABEL_KEY_RUNNER_POD
"""Set by container hooks on the pods and secrets they create for a runner."""

ANNOTATION_PATCH_ID: Final = c.ANNOTATION_KEY_PATCH_ID
ANNOTATION_ACTIONABLE_REVISION: Final = c.ANNOTATION_KEY_ACTIONABLE_REVISION

EPHEMERAL_RUNNER_SET_FINALIZER: Final = c.EPHEMERAL_RUNNER_SET_FINALIZER_NAME
EPHEMERAL_RUNNER_FINALIZER: Final = c.EPHEMERAL_RUNNER_FINALIZER_NAME
EPHEMERAL_RUNNER_ACTIONS_FINALIZER: Final = c.EPHEMERAL_RUNNER_ACTIONS_FINALIZER_NAME

EPHEMERAL_RUNNER_CONTAINER_NAME: Final = c.EPHEMERAL_RUNNER_CONTAINER_NAME

ENV_RUNNER_JIT_CONFIG: Final = c.ENV_ACTIONS_RUNNER_INPUT_JITCONFIG
ENV_RUNNER_EXTRA_USER_AGENT: Final = c.ENV_GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT
ENV_RUNNER_DEPRECATED_EXIT_CODE: Final = c.ENV_ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE
ENV_CONTAINER_HOOKS: Final = c.ENV_ACTIONS_RUNNER_CONTAINER_HOOKS

JIT_TOKEN_KEY: Final = c.JIT_SECRET_KEY_JIT_TOKEN

PHASE_PENDING: Final = "Pending"
PHASE_RUNNING: Final = "Running"
PHASE_SUCCEEDED: Final = "Succeeded"
PHASE_FAILED: Final = "Failed"
PHASE_OUTDATED: Final = "Outdated"
