"""The kinds the controllers read and write: one spelling each, as enum members and GroupVersionKinds.

`Kind` names ARC's four kinds (what ``kind`` and owner references carry); the constants
below (`AUTOSCALING_RUNNER_SET`, `SECRET`, ...) are the GroupVersionKinds every reconciler
watches, owns or reads. `PodPhase` and
`PodConditionType` are the Kubernetes pod values the runner code compares with.
ARC's own phases are the ``*Phase`` enums of each kind's module.

Ports: the kind names of apis/actions.github.com/v1alpha1 and the corev1/rbacv1 types ARC uses
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from arc_controllers.api.v1alpha1.groupversion import GROUP_VERSION
from reconcilekit.client.interfaces import GroupVersionKind

__all__ = [
    "API_VERSION",
    "AUTOSCALING_LISTENER",
    "AUTOSCALING_RUNNER_SET",
    "CONFIG_MAP",
    "EPHEMERAL_RUNNER",
    "EPHEMERAL_RUNNER_SET",
    "POD",
    "ROLE",
    "ROLE_BINDING",
    "SECRET",
    "SERVICE_ACCOUNT",
    "Kind",
    "PodConditionType",
    "PodPhase",
]


class Kind(StrEnum):
    """ARC's four kinds as they appear in ``kind`` and in owner references."""

    AUTOSCALING_RUNNER_SET = "AutoscalingRunnerSet"
    AUTOSCALING_LISTENER = "AutoscalingListener"
    EPHEMERAL_RUNNER_SET = "EphemeralRunnerSet"
    EPHEMERAL_RUNNER = "EphemeralRunner"


API_VERSION: Final = GROUP_VERSION.api_version
"""``actions.github.com/v1alpha1``, as objects and owner references carry it."""

AUTOSCALING_RUNNER_SET: Final = GROUP_VERSION.with_kind(Kind.AUTOSCALING_RUNNER_SET.value)
AUTOSCALING_LISTENER: Final = GROUP_VERSION.with_kind(Kind.AUTOSCALING_LISTENER.value)
EPHEMERAL_RUNNER_SET: Final = GROUP_VERSION.with_kind(Kind.EPHEMERAL_RUNNER_SET.value)
EPHEMERAL_RUNNER: Final = GROUP_VERSION.with_kind(Kind.EPHEMERAL_RUNNER.value)
POD: Final = GroupVersionKind("", "v1", "Pod")
SECRET: Final = GroupVersionKind("", "v1", "Secret")
CONFIG_MAP: Final = GroupVersionKind("", "v1", "ConfigMap")
SERVICE_ACCOUNT: Final = GroupVersionKind("", "v1", "ServiceAccount")
ROLE: Final = GroupVersionKind("rbac.authorization.k8s.io", "v1", "Role")
ROLE_BINDING: Final = GroupVersionKind("rbac.authorization.k8s.io", "v1", "RoleBinding")


class PodPhase(StrEnum):
    """A pod's ``status.phase``. Ports: corev1.PodPhase"""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class PodConditionType(StrEnum):
    """The pod condition types ARC reads. Ports: corev1.PodConditionType"""

    READY = "Ready"
