"""Compatibility only, to be deleted: the AutoscalingRunnerSet/AutoscalingListener modules' old import path.

Every name here is defined once elsewhere: the GroupVersionKinds, ``API_VERSION`` and
``GROUP`` in `arc_controllers.api.v1alpha1`, the phases as the ``*Phase`` enums there. The
runner reconcilers and builders no longer import this module; it goes once
``controllers/autoscalingrunnerset``, ``controllers/autoscalinglistener`` and
``resourcebuilder/listener`` import from `arc_controllers.api.v1alpha1` instead.
"""

from __future__ import annotations

from arc_controllers.api.v1alpha1 import (
    API_VERSION,
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    EPHEMERAL_RUNNER_SET,
    GROUP,
    POD,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
    AutoscalingRunnerSetPhase,
)

__all__ = [
    "API_VERSION",
    "AUTOSCALING_LISTENER",
    "AUTOSCALING_RUNNER_SET",
    "EPHEMERAL_RUNNER_SET",
    "GROUP",
    "PHASE_OUTDATED",
    "POD",
    "ROLE",
    "ROLE_BINDING",
    "SECRET",
    "SERVICE_ACCOUNT",
]

PHASE_OUTDATED = AutoscalingRunnerSetPhase.OUTDATED
