"""``status.conditions``: the ``metav1.Condition`` shape on our AutoscalingRunnerSet and AutoscalingListener.

The controllers write these lists as plain JSON through `reconcilekit.conditions`; the model
is here for the CRD schema and for readers that decode a status.

Beyond: ARC #2633: an error a scale set hits was visible only in the controller's log.
"""

from __future__ import annotations

from typing import Annotated, Final

from arc_controllers.api.v1alpha1._base import ArcModel
from arc_controllers.api.v1alpha1._markers import REQUIRED, Format, ListMap, Minimum

__all__ = ["CONDITIONS_LIST", "READY", "Condition", "ConditionReason"]

READY: Final = "Ready"
"""The one condition type we write: True when the object does what its spec asks."""

CONDITIONS_LIST: Final = ListMap(keys=("type",))
"""``+listType=map`` ``+listMapKey=type``: one condition per type, merged by type."""


class ConditionReason:
    """The ``reason`` values of our Ready conditions (UpperCamelCase, for machines).

    Beyond: ARC #2633, #4337, #4656: each names the cause an operator must act on.
    """

    RUNNING: Final = "Running"
    """Ready=True: the listener runs (on the listener) or the scale set serves (on the scale set)."""
    LISTENER_STARTING: Final = "ListenerStarting"
    """Ready=Unknown: the listener pod is being created or has not started its container yet."""
    FORBIDDEN: Final = "Forbidden"
    """Ready=False: the API server refused the controller a write (the message names the missing rule)."""
    INVALID_SPEC: Final = "InvalidSpec"
    """Ready=False: the spec cannot be acted on (the message names the field)."""
    ACTIONS_SERVICE_ERROR: Final = "ActionsServiceError"
    """Ready=False: the GitHub Actions service refused or failed a call."""
    LISTENER_FAILED: Final = "ListenerFailed"
    """Ready=False: the listener pod died once; the next one starts after the first backoff step."""
    CRASH_LOOP_BACK_OFF: Final = "CrashLoopBackOff"
    """Ready=False: the listener pod keeps dying (two deaths in a row or more); the next one waits out the backoff."""
    LISTENER_CANNOT_START: Final = "ListenerCannotStart"
    """Ready=False: the listener pod cannot start (its image cannot be pulled, its config is
    invalid, it cannot be scheduled); the message carries the kubelet's or scheduler's reason."""


class Condition(ArcModel):
    """Condition contains details for one aspect of the current state of this API Resource.

    Ports: metav1.Condition (the fields; its pattern and length limits are not carried)
    """

    type: Annotated[str | None, REQUIRED] = None
    """Type of condition in CamelCase; we write ``Ready``."""
    status: Annotated[str | None, REQUIRED] = None
    """Status of the condition, one of True, False, Unknown."""
    observed_generation: Annotated[int | None, Format("int64"), Minimum(0)] = None
    """The .metadata.generation that the condition was set based upon."""
    last_transition_time: Annotated[str | None, REQUIRED, Format("date-time")] = None
    """When the condition last changed from one status to another (RFC 3339)."""
    reason: Annotated[str | None, REQUIRED] = None
    """A programmatic identifier for the last transition, in CamelCase (Forbidden, InvalidSpec, ...)."""
    message: Annotated[str | None, REQUIRED] = None
    """A human readable message about the transition; names the object and the verb or field."""
