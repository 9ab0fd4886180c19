"""Names and numbers the runner controllers and the runner builder share.

Python only: a stand-in for the parts of ``arc_controllers.constants`` (constants.go)
that the EphemeralRunner and EphemeralRunnerSet code needs, kept here until the types
branch lands; every value is upstream's, from the spec §3.
"""

from __future__ import annotations

from typing import Final

from reconcilekit.client.interfaces import GroupVersionKind

__all__ = [
    "ANNOTATION_ACTIONABLE_REVISION",
    "ANNOTATION_PATCH_ID",
    "API_VERSION",
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
    "SECRET",
]

GROUP: Final = "actions.github.com"
API_VERSION: Final = "actions.github.com/v1alpha1"

EPHEMERAL_RUNNER_SET: Final = GroupVersionKind(GROUP, "v1alpha1", "EphemeralRunnerSet")
EPHEMERAL_RUNNER: Final = GroupVersionKind(GROUP, "v1alpha1", "EphemeralRunner")
POD: Final = GroupVersionKind("", "v1", "Pod")
SECRET: Final = GroupVersionKind("", "v1", "Secret")

LABEL_COMPONENT: Final = "app.kubernetes.io/component"
LABEL_SCALE_SET_NAME: Final = "actions.github.com/scale-set-name"
LABEL_SCALE_SET_NAMESPACE: Final = "actions.github.com/scale-set-namespace"
LABEL_RUNNER_TEMPLATE_HASH: Final = "runner-template-hash"
LABEL_POD_TEMPLATE_HASH: Final = "pod-template-hash"
LABEL_RUNNER_POD: Final = "runner-pod"
"""Set by container hooks on the pods and secrets they create for a runner."""

ANNOTATION_PATCH_ID: Final = "actions.github.com/patch-id"
ANNOTATION_ACTIONABLE_REVISION: Final = "actions.github.com/actionable-revision"

EPHEMERAL_RUNNER_SET_FINALIZER: Final = "ephemeralrunnerset.actions.github.com/finalizer"
EPHEMERAL_RUNNER_FINALIZER: Final = "ephemeralrunner.actions.github.com/finalizer"
EPHEMERAL_RUNNER_ACTIONS_FINALIZER: Final = "ephemeralrunner.actions.github.com/runner-registration-finalizer"

EPHEMERAL_RUNNER_CONTAINER_NAME: Final = "runner"

ENV_RUNNER_JIT_CONFIG: Final = "ACTIONS_RUNNER_INPUT_JITCONFIG"
ENV_RUNNER_EXTRA_USER_AGENT: Final = "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT"
ENV_RUNNER_DEPRECATED_EXIT_CODE: Final = "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE"
ENV_CONTAINER_HOOKS: Final = "ACTIONS_RUNNER_CONTAINER_HOOKS"

JIT_TOKEN_KEY: Final = "jitToken"

PHASE_PENDING: Final = "Pending"
PHASE_RUNNING: Final = "Running"
PHASE_SUCCEEDED: Final = "Succeeded"
PHASE_FAILED: Final = "Failed"
PHASE_OUTDATED: Final = "Outdated"
